package projection

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

// Indexes are the configurations of sp that config (--config) names:
// "all", one by its key, or by default ("") the spec's reference
// configuration (else the first). Errors: a key not in the space (bad
// input, badinput).
func Indexes(s *spec.Spec, sp *space.Space, config string) ([]int, error) {
	switch config {
	case "all":
		idx := make([]int, sp.Len())
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	case "":
		i := 0
		if cfg, ok, err := s.ReferenceConfig(); err != nil {
			return nil, err
		} else if ok {
			if j, found := sp.Lookup(s.Key(cfg)); found {
				i = j
			}
		}
		return []int{i}, nil
	}
	i, err := LookupConfig(s, sp, config)
	if err != nil {
		return nil, err
	}
	return []int{i}, nil
}

// ConfigIn is the configuration of key in s's search space sp; "" gives
// its first configuration. Errors (bad input, badinput): an empty space,
// a key not in it (LookupConfig).
func ConfigIn(s *spec.Spec, sp *space.Space, key string) ([]expr.Value, error) {
	if sp.Len() == 0 {
		return nil, badinput.New("%s: the search space has no valid configuration", s.Path)
	}
	i := 0
	if key != "" {
		var err error
		if i, err = LookupConfig(s, sp, key); err != nil {
			return nil, err
		}
	}
	return sp.Values(i), nil
}

// LookupConfig is the index of configuration key in sp. Errors: a key
// not in the space (bad input, badinput, naming the parameters it is
// made of).
func LookupConfig(s *spec.Spec, sp *space.Space, key string) (int, error) {
	i, ok := sp.Lookup(key)
	if !ok {
		names := make([]string, len(s.Params))
		for k, p := range s.Params {
			names[k] = p.Name
		}
		return 0, badinput.New("%s: %q is not a configuration of the search space (values of %s, in that order, joined by \",\")", s.Path, key, strings.Join(names, ", "))
	}
	return i, nil
}

// PTXWork is the work of configuration i emulated from the PTX file at
// path (its first thread blocks, emulate.JobWork), with registers where positive, said on
// log. Errors (bad input, badinput): a PTX that cannot be read or
// emulated.
func PTXWork(log io.Writer, s *spec.Spec, sp *space.Space, i int, path string, registers int) (*backend.Work, error) {
	text, err := bounded.ReadFile(path, bounded.PTX, "PTX")
	if err != nil {
		return nil, badinput.New("--ptx: %v", err)
	}
	cfg := sp.Values(i)
	w, insts, blocks, took, err := emulatedWork(s, cfg, text, "--ptx "+path)
	if err != nil {
		return nil, err
	}
	if registers > 0 {
		w.Registers = registers
	}
	fmt.Fprintf(log, "gtune: work of %s %s from emulating its first %d thread blocks (%d thread instructions, %v)\n",
		s.KernelName, s.Key(cfg), blocks, insts, took.Round(time.Millisecond))
	return w, nil
}

// Anchor loads the run from names (--from) in the database at dbPath,
// with its GPU's profile, and keeps of idx the configurations it
// measured. Errors: the run's, none of idx measured (bad input,
// badinput).
func Anchor(s *spec.Spec, sp *space.Space, idx []int, from, dbPath string) (*MeasuredRun, []int, error) {
	anchor, err := LoadRun(from, dbPath, s)
	if err != nil {
		return nil, nil, err
	}
	fromProfiles, err := registry.Profiles(dbPath, []*device.Description{anchor.Device})
	if err != nil {
		return nil, nil, err
	}
	anchor.Profile = fromProfiles[0]
	var kept []int
	for _, i := range idx {
		if _, ok := anchor.Times[sp.Key(i)]; ok {
			kept = append(kept, i)
		}
	}
	if len(kept) == 0 {
		return nil, nil, badinput.New("--from %s: the run measured none of the configurations asked for (%d valid configurations measured)", from, len(anchor.Times))
	}
	return anchor, kept, nil
}

// WriteTable prints one configuration's projections as a table, fastest
// first: time (ms), its ratio to the fastest, the bound, occupancy and
// the compute, global- and shared-memory times (ms).
func WriteTable(w io.Writer, s *spec.Spec, pc Configuration) {
	fmt.Fprintf(w, "%s %s: projected on %d GPUs, fastest first", s.KernelName, pc.Key, len(pc.Projections))
	if len(pc.Projections) > 0 && pc.Projections[0].From != "" {
		fmt.Fprintf(w, ", anchored on %.4g ms measured on %s", pc.Projections[0].MeasuredMs, pc.Projections[0].From)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tdevice\tname\tprofile\ttime (ms)\t× fastest\tbound\toccupancy\tcompute (ms)\tglobal (ms)\tshared (ms)")
	for r, p := range pc.Projections {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%.4g\t%.2f\t%s\t%.3f\t%.4g\t%.4g\t%.4g\n", r+1, p.Device, p.Name, p.Source, p.TimeMs,
			p.TimeMs/pc.Projections[0].TimeMs, p.Bound, p.Occupancy, p.ComputeMs, p.GlobalMs, p.SharedMs)
	}
	tw.Flush()
}

// emulatedWork is tuner.EmulatedWork of configuration cfg of s for the
// PTX text (label names where the text came from, for messages), with
// the emulation's thread-instruction count, blocks and time. Errors are bad
// input: a text that does not parse, no entry of the kernel's name, an
// instruction the emulator does not support.
func emulatedWork(s *spec.Spec, cfg []expr.Value, text []byte, label string) (*backend.Work, int64, int, time.Duration, error) {
	t0 := time.Now()
	w, c, err := tuner.EmulatedWork(s, cfg, text)
	if err != nil {
		return nil, 0, 0, 0, badinput.New("%s: %v", label, err)
	}
	var insts int64
	for _, n := range c.ThreadInstructions {
		insts += n
	}
	return w, insts, c.Blocks, time.Since(t0), nil
}

// KeptWork is tuner.KeptWork of the configurations idx from the
// database at dbPath (--emulate), said on log. It returns the work by
// configuration key and the configurations that have it (the others are
// told on log, counted). Errors (bad input, badinput): no database, none
// of the configurations with PTX kept, an emulation's.
func KeptWork(log io.Writer, s *spec.Spec, sp *space.Space, idx []int, dbPath string) (map[string]*backend.Work, []int, error) {
	if _, err := os.Stat(dbPath); err != nil {
		return nil, nil, badinput.New("--emulate reads the PTX kept in --db: %v", err)
	}
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		return nil, nil, badinput.Wrap(err)
	}
	defer db.Close()
	k, err := tuner.KeptWork(db, s, sp, idx)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]*backend.Work{}
	var have []int
	for _, i := range idx {
		if err, ok := k.Failed[i]; ok {
			return nil, nil, badinput.New("%v", err)
		}
		if w, ok := k.Work[i]; ok {
			out[sp.Key(i)] = w
			have = append(have, i)
		}
	}
	if len(have) == 0 {
		return nil, nil, badinput.New("--emulate: %s keeps no PTX of %s for the %d configurations asked for (PTX is kept by tuning runs on a GPU: gtune tune --backend cuda --db %s)", dbPath, s.Path, len(idx), dbPath)
	}
	fmt.Fprintf(log, "gtune: work of %d configurations of %s from emulating the first thread blocks of the PTX kept in %s (%d thread instructions, %v of emulation, %v on %d CPUs)",
		len(have), s.KernelName, dbPath, k.Instructions, k.Emulation.Round(time.Millisecond), k.Wall.Round(time.Millisecond), k.Workers)
	if k.Missing > 0 {
		fmt.Fprintf(log, "; %d configurations have none kept and are left out", k.Missing)
	}
	fmt.Fprintln(log)
	return out, have, nil
}
