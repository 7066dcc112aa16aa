package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/projection"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newProjectCmd) }

type projectFlags struct {
	config    string
	from      string
	ptx       string
	registers int
	devices   string
	db        string
	asJSON    bool
	emulate   bool
	cacheOut  string
	limits    spaceLimits
}

func newProjectCmd() *cobra.Command {
	var f projectFlags
	c := &cobra.Command{
		Use:   "project SPEC",
		Short: "Project a kernel's time on several GPUs without running it, and rank them (device selection)",
		Long: `project gives a configuration's projected time on each GPU of --devices, per
performance-projection-heterogeneous-gpus.md section IV-D: the kernel's work (its Gtune.Simulation section:
FLOP, DRAM bytes, registers, shared memory) over each GPU's device profile at the kernel's occupancy,
t = max(t_compute, t_global, t_local) plus the launch, and ranks the GPUs fastest first. A GPU's profile is
the newest one gtune probe measured on it in --db, else its specifications' (model.SpecProfile), and the table
says which. Without a Gtune.Simulation section the work comes from emulating one thread block of the kernel's
PTX (section IV-C; package emulate): --emulate takes each configuration's from --db, where a tuning run on a
GPU kept it, --ptx from a file. --config all projects every configuration of the space (for checking against measured runs).
Nothing runs on a GPU.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runProject(cmd.Context(), cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.config, "config", "", "configuration key, e.g. 256,4; all: every configuration of the space (default: the spec's reference configuration, else its first)")
	fl.StringVar(&f.devices, "devices", "", "device-database ids to project on, comma-separated, e.g. h100_sxm,h200,a100_40gb (default: every CUDA GPU of the database with compute capability 5.0 or newer)")
	fl.StringVar(&f.db, "db", "gtune.db", "results database whose measured device profiles (gtune probe) are used (left alone when it does not exist)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON: per configuration, the projections fastest first")
	fl.StringVar(&f.ptx, "ptx", "", "take the kernel's work from emulating its first thread block in this PTX file (the configuration's, e.g. from nvcc -ptx with its defines; package emulate) instead of the spec's Gtune.Simulation section")
	fl.BoolVar(&f.emulate, "emulate", false, "take each configuration's work from emulating its first thread block in the PTX a tuning run on a GPU kept in --db (the newest evaluation that compiled it), with the registers that run's GPU allotted; configurations none kept are left out")
	fl.StringVar(&f.cacheOut, "write-cache", "", "also write the times projected on each GPU of --devices as a Kernel Tuner cache file DIR/DEVICE.json (a prior for the transfer strategy: bench-strategies --prior-cache, tune --strategy-param transfer.prior=FILE); configurations a GPU cannot launch are marked so, those not projected are absent")
	intFlag(fl, &f.registers, "registers", 0, 0, 255, "with --ptx: registers per thread as the compiler allotted them (ptxas -v; register allocation is after PTX); 0: the spec's Gtune.Simulation Registers, else 32")
	fl.StringVar(&f.from, "from", "", "anchor on a measured run: RUN of --db, or FILE:RUN; each configuration it measured is projected from its measured time on the run's GPU (model.Anchored) instead of from its work alone")
	addSpaceFlags(fl, &f.limits)
	return c
}

func runProject(ctx context.Context, cmd *cobra.Command, path string, f projectFlags) error {
	s, err := loadProjectSpec(path, f)
	if err != nil {
		return err
	}
	devs, err := projection.Devices(f.devices)
	if err != nil {
		return err
	}
	if f.cacheOut != "" {
		if st, err := os.Stat(f.cacheOut); err != nil || !st.IsDir() {
			return badInput("--write-cache %s: want an existing directory (each GPU's cache is written there as DEVICE.json)", f.cacheOut)
		}
	}
	profiles, err := registry.Profiles(f.db, devs)
	if err != nil {
		return err
	}
	sp, err := buildSpace(ctx, s, f.limits)
	if err != nil {
		return err
	}
	if sp.Len() == 0 {
		return badInput("%s: the search space has no valid configuration", s.Path)
	}
	idx, err := projectIndexes(s, sp, f.config)
	if err != nil {
		return err
	}
	w := projection.Work{}
	if f.ptx != "" {
		if w.Emulated, err = ptxWork(cmd, s, sp, idx[0], f); err != nil {
			return err
		}
	}
	if f.emulate {
		if w.Kept, idx, err = keptWork(cmd, s, sp, idx, f.db); err != nil {
			return err
		}
	}
	if f.from != "" {
		if w.Anchor, idx, err = projectAnchor(s, sp, idx, f); err != nil {
			return err
		}
	}
	var out []projection.Configuration
	for _, i := range idx {
		pc, ok, err := projection.Project(s, sp, i, devs, profiles, w)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, pc)
		}
	}
	return writeProjections(cmd, s, sp, idx, out, devs, f)
}

// loadProjectSpec loads the spec a projection is of, checking the flags
// that depend on it. Errors are bad input: --registers without --ptx, a
// workload file, --emulate beside --ptx, no work to project.
func loadProjectSpec(path string, f projectFlags) (*spec.Spec, error) {
	if f.registers > 0 && f.ptx == "" {
		return nil, badInput("--registers goes with --ptx (the spec's Gtune.Simulation gives the registers of its work)")
	}
	if workload.IsFile(path) {
		return nil, badInput("%s is a workload file; project takes one kernel's spec (project each kernel of the workload by its spec)", path)
	}
	s, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	if f.emulate && (f.ptx != "" || f.registers > 0) {
		return nil, badInput("--emulate takes each configuration's PTX and registers from --db: not with --ptx or --registers")
	}
	if s.Simulation == nil && f.ptx == "" && !f.emulate {
		return nil, badInput("%s has no Gtune.Simulation section: the kernel's work (Flops, Bytes, Registers) is what a projection divides by the GPUs' throughputs; give it there, or emulate one thread block of its PTX (--emulate: the PTX a tuning run on a GPU kept in --db; --ptx FILE)", s.Path)
	}
	return s, nil
}

// projectIndexes are the configurations --config names: all, one by its
// key, or by default the spec's reference configuration (else the
// first). Errors: a key not in the space, as bad input.
func projectIndexes(s *spec.Spec, sp *space.Space, config string) ([]int, error) {
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
	i, err := lookupConfig(s, sp, config)
	if err != nil {
		return nil, err
	}
	return []int{i}, nil
}

// lookupConfig is the index of configuration key in sp. Errors: a key
// not in the space, as bad input naming the parameters it is made of.
func lookupConfig(s *spec.Spec, sp *space.Space, key string) (int, error) {
	i, ok := sp.Lookup(key)
	if !ok {
		names := make([]string, len(s.Params))
		for k, p := range s.Params {
			names[k] = p.Name
		}
		return 0, badInput("%s: %q is not a configuration of the search space (values of %s, in that order, joined by \",\")", s.Path, key, strings.Join(names, ", "))
	}
	return i, nil
}

// ptxWork is the work of configuration i emulated from --ptx (its first
// thread block), with --registers where given. Errors: --ptx with more
// than one configuration or --from, a PTX that cannot be read or
// emulated.
func ptxWork(cmd *cobra.Command, s *spec.Spec, sp *space.Space, i int, f projectFlags) (*backend.Work, error) {
	if f.config == "all" || f.from != "" {
		return nil, badInput("--ptx is the PTX of one configuration: give it with --config KEY (not all, not --from); --emulate takes each configuration's PTX from --db")
	}
	text, err := bounded.ReadFile(f.ptx, bounded.PTX, "PTX")
	if err != nil {
		return nil, badInput("--ptx: %v", err)
	}
	cfg := sp.Values(i)
	w, insts, took, err := emulatedWork(s, cfg, text, "--ptx "+f.ptx)
	if err != nil {
		return nil, err
	}
	if f.registers > 0 {
		w.Registers = f.registers
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "gtune: work of %s %s from emulating its first thread block (%d thread instructions, %v)\n",
		s.KernelName, s.Key(cfg), insts, took.Round(time.Millisecond))
	return w, nil
}

// projectAnchor loads the run --from names, with its GPU's profile, and
// keeps of idx the configurations it measured. Errors: the run's, none
// of idx measured (bad input).
func projectAnchor(s *spec.Spec, sp *space.Space, idx []int, f projectFlags) (*projection.MeasuredRun, []int, error) {
	anchor, err := projection.LoadRun(f.from, f.db, s)
	if err != nil {
		return nil, nil, err
	}
	fromProfiles, err := registry.Profiles(f.db, []*device.Description{anchor.Device})
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
		return nil, nil, badInput("--from %s: the run measured none of the configurations asked for (%d valid configurations measured)", f.from, len(anchor.Times))
	}
	return anchor, kept, nil
}

// writeProjections writes the projections: as Kernel Tuner caches, one
// per GPU (--write-cache), and as JSON or a table per configuration.
func writeProjections(cmd *cobra.Command, s *spec.Spec, sp *space.Space, idx []int, out []projection.Configuration, devs []*device.Description, f projectFlags) error {
	if f.cacheOut != "" {
		for _, d := range devs {
			if err := projection.WriteCache(filepath.Join(f.cacheOut, d.ID+".json"), s, sp, idx, out, d); err != nil {
				return err
			}
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "gtune: projected times written to %s as Kernel Tuner caches, one per GPU (DEVICE.json)\n", f.cacheOut)
	}
	if f.asJSON {
		return report.WriteJSON(cmd.OutOrStdout(), map[string]any{"spec": s.Path, "kernel": s.KernelName, "configurations": out})
	}
	for _, pc := range out {
		writeProjection(cmd.OutOrStdout(), s, pc)
	}
	return nil
}

// writeProjection prints one configuration's projections, fastest first.
func writeProjection(w io.Writer, s *spec.Spec, pc projection.Configuration) {
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
// the emulation's thread-instruction count and time. Errors are bad
// input: a text that does not parse, no entry of the kernel's name, an
// instruction the emulator does not support.
func emulatedWork(s *spec.Spec, cfg []expr.Value, text []byte, label string) (*backend.Work, int64, time.Duration, error) {
	t0 := time.Now()
	w, c, err := tuner.EmulatedWork(s, cfg, text)
	if err != nil {
		return nil, 0, 0, badInput("%s: %v", label, err)
	}
	var insts int64
	for _, n := range c.ThreadInstructions {
		insts += n
	}
	return w, insts, time.Since(t0), nil
}

// keptWork is tuner.KeptWork of the configurations idx from the database
// at dbPath, by configuration key, said on stderr. It
// returns the work by configuration key and the configurations that have
// it (the others are told on stderr, counted). Errors: no database, none
// of the configurations with PTX kept, an emulation's (bad input).
func keptWork(cmd *cobra.Command, s *spec.Spec, sp *space.Space, idx []int, dbPath string) (map[string]*backend.Work, []int, error) {
	if _, err := os.Stat(dbPath); err != nil {
		return nil, nil, badInput("--emulate reads the PTX kept in --db: %v", err)
	}
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		return nil, nil, inputError{err}
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
			return nil, nil, badInput("%v", err)
		}
		if w, ok := k.Work[i]; ok {
			out[sp.Key(i)] = w
			have = append(have, i)
		}
	}
	if len(have) == 0 {
		return nil, nil, badInput("--emulate: %s keeps no PTX of %s for the %d configurations asked for (PTX is kept by tuning runs on a GPU: gtune tune --backend cuda --db %s)", dbPath, s.Path, len(idx), dbPath)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "gtune: work of %d configurations of %s from emulating the first thread block of the PTX kept in %s (%d thread instructions, %v of emulation, %v on %d CPUs)",
		len(have), s.KernelName, dbPath, k.Instructions, k.Emulation.Round(time.Millisecond), k.Wall.Round(time.Millisecond), k.Workers)
	if k.Missing > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "; %d configurations have none kept and are left out", k.Missing)
	}
	fmt.Fprintln(cmd.ErrOrStderr())
	return out, have, nil
}
