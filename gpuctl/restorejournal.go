package gpuctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/internal/badinput"
)

// RestoreJournal puts back the GPU settings the journal at path
// records (gtune restore), saying what it does on out, and removes the
// journal. A missing journal is nothing to restore (bad input where the
// journal was given explicitly). Errors (bad input, badinput, where
// nothing was changed): a damaged journal, another GPU's, a GPU that
// cannot be opened; the restore's.
func RestoreJournal(out io.Writer, path string, explicit bool) error {
	j, err := ReadJournal(path)
	if errors.Is(err, os.ErrNotExist) {
		if explicit {
			return badinput.New("no journal at %s: nothing to restore", path)
		}
		fmt.Fprintf(out, "no journal at %s: nothing to restore\n", path)
		return nil
	}
	var je *JournalError
	if errors.As(err, &je) {
		return badinput.New("%v; nothing was changed. Restore by hand if the GPU's settings are wrong (nvidia-smi -rgc; nvidia-smi -rmc; nvidia-smi -rac; nvidia-smi -pl <default W>) and then delete the journal", err)
	}
	if err != nil {
		// A folder, an unreadable or oversized file: the journal given
		// is not one, as a damaged journal is not.
		return badinput.New("journal %s: %v; nothing was changed", path, err)
	}
	fmt.Fprintf(out, "journal %s: %s (%s), %s backend, written by process %d at %s\n", path, j.DeviceUUID, j.DeviceName, j.Backend, j.PID, j.Created)
	o := j.Original
	fmt.Fprintf(out, "original settings: SM clock %s, memory clock %s, application clocks %d/%d MHz (SM/memory), power limit %g W\n",
		lockedText(o.CoreLockedMHz), lockedText(o.MemLockedMHz), o.AppCoreMHz, o.AppMemMHz, o.PowerLimitW)
	var ctl Controller
	switch j.Backend {
	case "sim":
		c, err := sim.OpenControl(j.SimState)
		if err != nil {
			return badinput.New("journal %s: the simulated GPU's state file: %v; nothing was changed", path, err)
		}
		if ctl, err = NewSim(c); err != nil {
			return err
		}
	default:
		if ctl, err = OpenNVML(j.DeviceUUID); err != nil {
			return badinput.New("journal %s: GPU %s (%s): %v; nothing was changed", path, j.DeviceUUID, j.DeviceName, err)
		}
	}
	if err := Restore(path, j, ctl); err != nil {
		if errors.As(err, &je) {
			return badinput.New("%v", err)
		}
		return err
	}
	fmt.Fprintf(out, "restored the original settings of %s; removed %s\n", j.DeviceUUID, path)
	return nil
}

func lockedText(mhz int) string {
	if mhz == 0 {
		return "not locked"
	}
	return fmt.Sprintf("locked at %d MHz", mhz)
}

// FurtherJournals are the journals of the further GPUs of a run over
// several beside first (first.1, first.2, ...), in GPU order.
func FurtherJournals(first string) []string {
	matches, _ := filepath.Glob(first + ".*")
	type numbered struct {
		n    int
		path string
	}
	var js []numbered
	for _, m := range matches {
		if n, err := strconv.Atoi(strings.TrimPrefix(m, first+".")); err == nil && n > 0 {
			js = append(js, numbered{n, m})
		}
	}
	slices.SortFunc(js, func(a, b numbered) int { return a.n - b.n })
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.path
	}
	return out
}
