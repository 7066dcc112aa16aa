package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/model"
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

// projectedConfig is one configuration's projections, fastest first.
type projectedConfig struct {
	Key         string             `json:"key"`
	Projections []model.Projection `json:"projections"`
}

func runProject(ctx context.Context, cmd *cobra.Command, path string, f projectFlags) error {
	s, err := loadProjectSpec(path, f)
	if err != nil {
		return err
	}
	devs, err := projectDevices(f.devices)
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
	w := projectWork{}
	if f.ptx != "" {
		if w.emulated, err = ptxWork(cmd, s, sp, idx[0], f); err != nil {
			return err
		}
	}
	if f.emulate {
		if w.kept, idx, err = keptWork(cmd, s, sp, idx, f.db); err != nil {
			return err
		}
	}
	if f.from != "" {
		if w.anchor, idx, err = projectAnchor(s, sp, idx, f); err != nil {
			return err
		}
	}
	var out []projectedConfig
	for _, i := range idx {
		pc, ok, err := projectConfig(s, sp, i, devs, profiles, w)
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

// projectWork is where a projection takes each configuration's work
// from besides the spec: emulated from --ptx (one configuration), kept
// from a tuning run's PTX (--emulate), and the run it is anchored on
// (--from).
type projectWork struct {
	emulated *backend.Work
	kept     map[string]*backend.Work
	anchor   *measuredRun
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
func projectAnchor(s *spec.Spec, sp *space.Space, idx []int, f projectFlags) (*measuredRun, []int, error) {
	anchor, err := loadMeasuredRun(f.from, f.db, s)
	if err != nil {
		return nil, nil, err
	}
	fromProfiles, err := registry.Profiles(f.db, []*device.Description{anchor.device})
	if err != nil {
		return nil, nil, err
	}
	anchor.profile = fromProfiles[0]
	var kept []int
	for _, i := range idx {
		if _, ok := anchor.times[sp.Key(i)]; ok {
			kept = append(kept, i)
		}
	}
	if len(kept) == 0 {
		return nil, nil, badInput("--from %s: the run measured none of the configurations asked for (%d valid configurations measured)", f.from, len(anchor.times))
	}
	return anchor, kept, nil
}

// projectConfig projects configuration i onto each GPU of devs (over
// its profile) and ranks them; with an anchor, each projection is
// scaled by the anchor run's measured time (model.Anchored). ok is false
// where the model cannot place the configuration where the anchor run
// measured it (nothing to anchor on). A GPU that cannot launch it is
// left out. Errors: a spec that gives no work, the model's.
func projectConfig(s *spec.Spec, sp *space.Space, i int, devs []*device.Description, profiles []model.Profile, w projectWork) (projectedConfig, bool, error) {
	pc := projectedConfig{Key: sp.Key(i)}
	j, err := s.Job(sp.Values(i))
	if err != nil {
		return pc, false, err
	}
	if w.emulated != nil {
		j.Work = w.emulated
	}
	if k, ok := w.kept[pc.Key]; ok {
		j.Work = k
	}
	var from model.Projection
	if a := w.anchor; a != nil {
		// The registers the compiler gave it on the run's GPU, not the
		// spec's estimate.
		if r := a.registers[pc.Key]; r > 0 && j.Work != nil {
			wk := *j.Work
			wk.Registers = r
			j.Work = &wk
		}
		from, err = model.Project(a.device, a.profile, j.Work, j.Geometry())
		if _, bad := errors.AsType[*model.LaunchError](err); bad {
			return pc, false, nil
		} else if err != nil {
			return pc, false, fmt.Errorf("--from: configuration %s on %s: %w", pc.Key, a.device.ID, err)
		}
	}
	for k, d := range devs {
		p, err := model.Project(d, profiles[k], j.Work, j.Geometry())
		if err == nil && w.anchor != nil {
			ms := w.anchor.times[pc.Key]
			p.TimeMs, p.From, p.MeasuredMs = model.Anchored(ms, from, p), w.anchor.device.ID, ms
		}
		var le *model.LaunchError
		switch {
		case errors.As(err, &le):
			continue // this GPU cannot launch it: not among the candidates
		case errors.Is(err, model.ErrNoWork):
			return pc, false, badInput("%s: configuration %s: the Gtune.Simulation section gives no work (Flops and Bytes are 0)", s.Path, pc.Key)
		case err != nil:
			return pc, false, err
		}
		pc.Projections = append(pc.Projections, p)
	}
	model.Rank(pc.Projections)
	return pc, true, nil
}

// writeProjections writes the projections: as Kernel Tuner caches, one
// per GPU (--write-cache), and as JSON or a table per configuration.
func writeProjections(cmd *cobra.Command, s *spec.Spec, sp *space.Space, idx []int, out []projectedConfig, devs []*device.Description, f projectFlags) error {
	if f.cacheOut != "" {
		for _, d := range devs {
			if err := writeProjectedCache(filepath.Join(f.cacheOut, d.ID+".json"), s, sp, idx, out, d); err != nil {
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
func writeProjection(w io.Writer, s *spec.Spec, pc projectedConfig) {
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

// projectDevices resolves --devices: device-database ids, or every CUDA
// GPU of compute capability 5.0 on.
func projectDevices(list string) ([]*device.Description, error) {
	if strings.TrimSpace(list) == "" {
		var out []*device.Description
		for _, d := range device.All() {
			if d.IsCUDA() && d.ComputeMajor >= 5 {
				out = append(out, d)
			}
		}
		return out, nil
	}
	var out []*device.Description
	seen := map[string]bool{}
	for _, id := range strings.Split(list, ",") {
		d, err := device.Lookup(strings.TrimSpace(id))
		if err != nil {
			return nil, inputError{fmt.Errorf("--devices: %w", err)}
		}
		if seen[d.ID] {
			return nil, badInput("--devices: %s is given twice", d.ID)
		}
		seen[d.ID] = true
		if !d.IsCUDA() {
			return nil, badInput("--devices: %s is not a CUDA GPU (the projection models CUDA GPUs)", d.ID)
		}
		out = append(out, d)
	}
	return out, nil
}

// measuredRun is a tuning run a projection is anchored on: its GPU, that
// GPU's profile, and each valid configuration's measured time per
// launch, ms.
type measuredRun struct {
	device    *device.Description
	profile   model.Profile
	times     map[string]float64
	registers map[string]int // per thread, as compiled for the run's GPU
}

// loadMeasuredRun reads --from: RUN of the database at dbPath, or
// FILE:RUN. The run must have tuned s (same spec hash) on a GPU the
// device database knows. Errors are bad input.
func loadMeasuredRun(from, dbPath string, s *spec.Spec) (*measuredRun, error) {
	file, runText := dbPath, from
	if i := strings.LastIndex(from, ":"); i >= 0 {
		file, runText = from[:i], from[i+1:]
	}
	id, err := strconv.ParseInt(runText, 10, 64)
	if err != nil || id <= 0 || file == "" {
		return nil, badInput("--from %q: want RUN (a run of --db) or FILE:RUN, e.g. h100.db:3", from)
	}
	if _, err := os.Stat(file); err != nil {
		return nil, badInput("--from %q: %v", from, err)
	}
	db, err := store.OpenReadOnly(file)
	if err != nil {
		return nil, inputError{err}
	}
	defer db.Close()
	run, err := db.Run(id)
	if err != nil {
		return nil, inputError{fmt.Errorf("--from %q: %w", from, err)}
	}
	if run.SpecHash != s.Hash {
		return nil, badInput("--from %q: run %d tuned %s (spec hash %.12s), not %s as it is now (%.12s)", from, id, run.SpecPath, run.SpecHash, s.Path, s.Hash)
	}
	d, err := device.LookupName(strings.TrimPrefix(run.DeviceName, "Simulated "))
	if err != nil {
		return nil, inputError{fmt.Errorf("--from %q: the run's GPU: %w", from, err)}
	}
	evs, err := db.RunEvaluations(id)
	if err != nil {
		return nil, err
	}
	m := &measuredRun{device: d, times: map[string]float64{}, registers: map[string]int{}}
	for _, e := range evs {
		if t, ok := e.Observations["time"]; ok && e.Status == "valid" && t > 0 {
			m.times[e.Key], m.registers[e.Key] = t, e.Registers
		}
	}
	if len(m.times) == 0 {
		return nil, badInput("--from %q: run %d has no valid configuration with a measured time", from, id)
	}
	return m, nil
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

// writeProjectedCache writes the times projected on d (out, of the
// configurations idx of sp) as a Kernel Tuner cache file at path
// (cache.FromRun): each configuration's projected time as its time, one
// the model cannot launch on d as a launch failure. The device name says
// it is a projection. Errors: the file's.
func writeProjectedCache(path string, s *spec.Spec, sp *space.Space, idx []int, out []projectedConfig, d *device.Description) error {
	byKey := map[string]projectedConfig{}
	for _, pc := range out {
		byKey[pc.Key] = pc
	}
	run := &store.Run{DeviceName: d.Name + " (projected by gtune)", Kernel: s.KernelName, Objective: "time"}
	var evs []*store.Evaluation
	names := sp.Params()
	for _, i := range idx {
		key := sp.Key(i)
		cfg := sp.Values(i)
		e := &store.Evaluation{Key: key, Status: string(backend.StatusLaunchFailed)}
		for k, p := range names {
			e.Params = append(e.Params, store.Param{Name: p.Name, Value: cfg[k].GoValue()})
		}
		for _, p := range byKey[key].Projections {
			if p.Device == d.ID {
				e.Status, e.Observations = string(backend.StatusValid), map[string]float64{"time": p.TimeMs}
			}
		}
		evs = append(evs, e)
	}
	if len(evs) == 0 {
		return badInput("--write-cache: no configuration projected")
	}
	c, err := cache.FromRun(run, evs)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return inputError{fmt.Errorf("--write-cache: %v", err)}
	}
	return nil
}
