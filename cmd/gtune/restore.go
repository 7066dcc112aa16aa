package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/gpuctl"
)

func init() { subcommands = append(subcommands, newRestoreCmd) }

func newRestoreCmd() *cobra.Command {
	var journal, db string
	c := &cobra.Command{
		Use:   "restore",
		Short: "Put back the GPU settings recorded in a journal after gtune tune --allow-gpu-settings was killed",
		Long: `gtune tune --allow-gpu-settings writes the GPU's original clocks and power limit to a journal before its
first change and restores them when it exits, also after SIGINT, SIGTERM or a panic. After a crash or
kill -9 the journal remains; gtune restore reads it, checks its checksum and that it belongs to this GPU,
puts the settings back (unlocking clocks, the application clocks, the power limit) and removes it.
A corrupt journal, or one for another GPU, changes nothing. A run over several GPUs (--devices) keeps one
journal per GPU, the first GPU's at the database path + .gpu-journal and the others' with .1, .2, ...
appended; --db restores each of them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("journal") {
				return runRestore(cmd, journal, true)
			}
			first := gpuctl.DefaultJournalPath(db)
			// Every GPU's journal, the further GPUs' of a run over
			// several in order: one that cannot be restored (damaged,
			// another GPU's) leaves the next GPU's to be restored all
			// the same, and the error names each that failed.
			var errs []error
			bad := true
			for i, p := range append([]string{first}, furtherJournals(first)...) {
				if err := runRestore(cmd, p, i > 0); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "gtune: %v\n", err)
					errs = append(errs, err)
					bad = bad && exitCode(err) == exitBadInput
				}
			}
			switch {
			case len(errs) == 0:
				return nil
			case bad:
				return badInput("%d of the journals of %s could not be restored (above); the others were", len(errs), db)
			}
			return fmt.Errorf("%d of the journals of %s could not be restored (above); the others were", len(errs), db)
		},
	}
	c.Flags().StringVar(&journal, "journal", "", "the journal (default: the database path + .gpu-journal)")
	c.Flags().StringVar(&db, "db", "gtune.db", "results database whose journal to use when --journal is not given")
	return c
}

func runRestore(cmd *cobra.Command, path string, explicit bool) error {
	out := cmd.OutOrStdout()
	j, err := gpuctl.ReadJournal(path)
	if errors.Is(err, os.ErrNotExist) {
		if explicit {
			return badInput("no journal at %s: nothing to restore", path)
		}
		fmt.Fprintf(out, "no journal at %s: nothing to restore\n", path)
		return nil
	}
	var je *gpuctl.JournalError
	if errors.As(err, &je) {
		return badInput("%v; nothing was changed. Restore by hand if the GPU's settings are wrong (nvidia-smi -rgc; nvidia-smi -rmc; nvidia-smi -rac; nvidia-smi -pl <default W>) and then delete the journal", err)
	}
	if err != nil {
		// A folder, an unreadable or oversized file: the journal given
		// is not one, as a damaged journal is not.
		return badInput("journal %s: %v; nothing was changed", path, err)
	}
	fmt.Fprintf(out, "journal %s: %s (%s), %s backend, written by process %d at %s\n", path, j.DeviceUUID, j.DeviceName, j.Backend, j.PID, j.Created)
	o := j.Original
	fmt.Fprintf(out, "original settings: SM clock %s, memory clock %s, application clocks %d/%d MHz (SM/memory), power limit %g W\n",
		lockedText(o.CoreLockedMHz), lockedText(o.MemLockedMHz), o.AppCoreMHz, o.AppMemMHz, o.PowerLimitW)
	var ctl gpuctl.Controller
	switch j.Backend {
	case "sim":
		c, err := sim.OpenControl(j.SimState)
		if err != nil {
			return badInput("journal %s: the simulated GPU's state file: %v; nothing was changed", path, err)
		}
		if ctl, err = gpuctl.NewSim(c); err != nil {
			return err
		}
	default:
		if ctl, err = gpuctl.OpenNVML(j.DeviceUUID); err != nil {
			return badInput("journal %s: GPU %s (%s): %v; nothing was changed", path, j.DeviceUUID, j.DeviceName, err)
		}
	}
	if err := gpuctl.Restore(path, j, ctl); err != nil {
		if errors.As(err, &je) {
			return badInput("%v", err)
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

// furtherJournals are the journals of the further GPUs of a run over
// several beside first (first.1, first.2, ...), in GPU order.
func furtherJournals(first string) []string {
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
