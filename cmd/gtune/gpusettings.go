package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/tuner"
)

// gpuFlags are gtune tune's GPU-settings flags.
type gpuFlags struct {
	strategy   string  // --gpu-settings g1|g2|g3
	clockStep  int     // --clock-step MHz
	powerStep  float64 // --power-step W
	allow      bool    // --allow-gpu-settings
	dryRun     bool    // --dry-run
	onNoPerm   string  // --on-no-permission stop|drop
	journal    string  // --journal
	clockRange string  // --clock-range all|ridge
	simState   string  // --sim-nvml-state (hidden)
}

func addGPUFlags(fl *pflag.FlagSet, g *gpuFlags) {
	fl.StringVar(&g.strategy, "gpu-settings", "", "add GPU settings to the search space as the thesis's strategies name them: g1 (SM clock, memory clock, power limit), g2 (SM and memory clock), g3 (power limit)")
	fl.IntVar(&g.clockStep, "clock-step", 0, "with --gpu-settings: SM clocks this many MHz apart, e.g. 100 (0: every supported clock)")
	fl.Float64Var(&g.powerStep, "power-step", 10, "with --gpu-settings: power limits this many W apart, from the lowest to the highest allowed")
	fl.BoolVar(&g.allow, "allow-gpu-settings", false, "allow gtune to change the GPU's clocks and power limit (needs root on a real GPU); the originals are journalled and restored")
	fl.BoolVar(&g.dryRun, "dry-run", false, "show the GPU settings gtune would set and the search space, set nothing, tune nothing")
	fl.StringVar(&g.onNoPerm, "on-no-permission", "stop", "when the GPU settings may not be changed: stop, or drop them and tune the rest")
	fl.StringVar(&g.journal, "journal", "", "journal of the original GPU settings (default: the database path + .gpu-journal)")
	fl.StringVar(&g.clockRange, "clock-range", "all", "SM clocks to tune: all, or ridge (±10 % around the ridge frequency fitted on a synthetic FMA kernel)")
	fl.StringVar(&g.simState, "sim-nvml-state", "", "simulated GPU only: keep the simulated NVML settings in this file (journal and gtune restore then apply to it)")
	_ = fl.MarkHidden("sim-nvml-state")
}

// settingParams names the spec's own GPU-setting parameters.
func settingParams(s *spec.Spec) []string {
	var out []string
	for _, p := range s.Params {
		if gpuctl.IsSetting(p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

// simulatedBackend tells whether --backend resolves to the simulated GPU
// (auto does without a CUDA driver).
func simulatedBackend(name string) bool {
	return name == "sim" || (name == "auto" && cuda.Available() != nil)
}

// gpuPreflight checks the GPU-settings flags against the spec before any
// database or GPU is touched. On a real GPU GPU-setting parameters need
// --allow-gpu-settings (or --dry-run); the simulated GPU honours them per
// job without changing anything real, so it needs the flag only for its
// NVML control surface (--sim-nvml-state). Errors are bad input (exit 2).
func gpuPreflight(s *spec.Spec, g gpuFlags, simulated bool) error {
	if g.onNoPerm != "stop" && g.onNoPerm != "drop" {
		return badInput("--on-no-permission %q: want stop or drop", g.onNoPerm)
	}
	if g.clockRange != "all" && g.clockRange != "ridge" {
		return badInput("--clock-range %q: want all or ridge", g.clockRange)
	}
	if g.clockStep < 0 || g.powerStep < 0 || math.IsNaN(g.powerStep) {
		return badInput("--clock-step and --power-step must be ≥ 0, got %d MHz and %g W", g.clockStep, g.powerStep)
	}
	declared := settingParams(s)
	var adds []string
	if g.strategy != "" {
		var ok bool
		if adds, ok = gpuctl.Strategies[strings.ToLower(g.strategy)]; !ok {
			return badInput("--gpu-settings %q: want g1 (SM clock, memory clock, power limit), g2 (SM and memory clock) or g3 (power limit)", g.strategy)
		}
		for _, n := range adds {
			if slices.Contains(declared, n) {
				return badInput("--gpu-settings %s adds %s, which %s already declares as a tunable parameter; leave out one of them", g.strategy, n, s.Path)
			}
		}
	}
	all := append(slices.Clone(declared), adds...)
	if g.clockRange == "ridge" && !slices.Contains(all, backend.ParamCoreClock) {
		return badInput("--clock-range ridge narrows the %s dimension, but the search space has none (use --gpu-settings g1 or g2, or declare %s)", backend.ParamCoreClock, backend.ParamCoreClock)
	}
	if ((len(all) > 0 && !simulated) || g.simState != "") && !g.allow && !g.dryRun {
		what := "--gpu-settings " + g.strategy
		if len(all) == 0 {
			what = "--sim-nvml-state (the simulated GPU's NVML control surface)"
		}
		if len(declared) > 0 {
			what = fmt.Sprintf("%s declares the GPU-setting parameters %s", s.Path, strings.Join(declared, ", "))
		}
		return badInput("%s: tuning them changes the GPU's clocks and power limit (for every user of the GPU, until restored), "+
			"which gtune does only with --allow-gpu-settings (root is needed on a real GPU; the original settings are journalled and restored). "+
			"Use --dry-run to see what would be set", what)
	}
	return nil
}

// gpuRun is the GPU-settings part of one tune run.
type gpuRun struct {
	session *gpuctl.Session
	drop    map[string]bool
	space   *space.Space
	done    bool // --dry-run: the plan is printed, nothing else to do
	log     io.Writer
}

// wrap puts the settings handling in front of be (nothing to do without
// GPU settings).
func (r *gpuRun) wrap(be backend.Backend) backend.Backend {
	if r == nil || (r.session == nil && len(r.drop) == 0) {
		return be
	}
	return gpuctl.Wrap(be, r.session, r.drop)
}

// close restores the original settings (deferred: runs at normal exit,
// after SIGINT/SIGTERM cancelled the run, and while a panic unwinds).
func (r *gpuRun) close() {
	if r == nil || r.session == nil {
		return
	}
	_, changed := r.session.Original()
	if err := r.session.Close(); err != nil {
		fmt.Fprintln(r.log, "gtune: restoring the GPU settings failed:", err)
		return
	}
	if changed {
		fmt.Fprintf(r.log, "gtune: original GPU settings of %s restored\n", r.session.Controller().DeviceUUID())
	}
}

// gpuTables gives the supported clocks and power limits of the backend's
// GPU: the simulated description, or what NVML reported to the backend.
func gpuTables(be backend.Backend) (gpuctl.Tables, *sim.Sim, error) {
	if sb, ok := be.(*sim.Sim); ok {
		d := sb.Description()
		return gpuctl.TablesOf(&d), sb, nil
	}
	t, err := gpuctl.TablesFromInfo(be.Device())
	return t, nil, err
}

// setupGPU adds the --gpu-settings parameters, narrows the SM clocks for
// --clock-range ridge, checks every value against the GPU's tables,
// opens the controller and session (with --allow-gpu-settings) and
// handles a missing permission; with --dry-run it prints the plan
// instead. It returns nil when the run involves no GPU setting.
func setupGPU(ctx context.Context, log, out io.Writer, s *spec.Spec, sp *space.Space, be backend.Backend, g gpuFlags, db string) (*gpuRun, error) {
	declared := settingParams(s)
	if g.strategy == "" && len(declared) == 0 && g.simState == "" {
		return nil, nil
	}
	tables, sb, err := gpuTables(be)
	if err != nil {
		return nil, inputError{err}
	}
	r := &gpuRun{space: sp, log: log, drop: map[string]bool{}}
	journal := g.journal
	if journal == "" {
		journal = gpuctl.DefaultJournalPath(db)
	}
	// The spec's own values first: a bad one must cost no setting.
	if err := tables.Check(s.Params); err != nil {
		return nil, inputError{err}
	}
	if g.allow && !g.dryRun {
		var ctl gpuctl.Controller
		meta := gpuctl.Journal{DeviceName: be.Device().Name}
		if sb != nil {
			d := sb.Description()
			c, err := sim.NewControl(&d, sim.ControlOptions{StateFile: g.simState})
			if err != nil {
				return nil, inputError{err}
			}
			if ctl, err = gpuctl.NewSim(c); err != nil {
				return nil, err
			}
			meta.Backend, meta.SimState = "sim", c.StateFile()
			if g.simState == "" {
				journal = "" // an in-memory simulated GPU outlives nothing
			}
		} else {
			if ctl, err = gpuctl.OpenNVML(be.Device().UUID); err != nil {
				return nil, err
			}
			meta.Backend = "nvml"
		}
		r.session = gpuctl.NewSession(ctl, journal, meta)
		if err := r.session.Probe(); err != nil {
			if errors.Is(err, gpuctl.ErrJournalExists) {
				return nil, inputError{err}
			}
			if !errors.Is(err, gpuctl.ErrNoPermission) {
				r.close()
				return nil, err
			}
			r.session = nil
			if g.onNoPerm == "stop" {
				return nil, badInput("no permission to change the GPU settings of %s (%v); run as root, or give --on-no-permission drop to tune the other parameters", be.Device().Name, err)
			}
			fmt.Fprintf(log, "gtune: no permission to change the GPU settings of %s; tuning without them (--on-no-permission drop)\n", be.Device().Name)
			return r, dropSettings(r, s, sp, be, declared)
		}
	}
	var adds []space.Param
	if g.strategy != "" {
		if adds, err = tables.Values(g.strategy, g.clockStep, g.powerStep); err != nil {
			return nil, inputError{err}
		}
	}
	if g.clockRange == "ridge" {
		if err := narrowToRidge(ctx, log, s, adds, be, r, tables, g); err != nil {
			r.close()
			return nil, err
		}
	}
	for _, p := range adds {
		typ := "int"
		if p.Name == backend.ParamPowerLimit {
			typ = "float"
		}
		if err := s.AddParam(p.Name, typ, p.Values); err != nil {
			r.close()
			return nil, err
		}
	}
	if err := tables.Check(s.Params); err != nil {
		r.close()
		return nil, inputError{err}
	}
	if len(adds) > 0 || g.clockRange == "ridge" {
		if r.space, err = s.BuildSpace(); err != nil {
			r.close()
			return nil, err
		}
	}
	if g.dryRun {
		printPlan(out, s, r.space, be, tables, g, journal)
		r.done = true
	}
	return r, nil
}

// dropSettings keeps each of the spec's GPU-setting parameters at one
// value, the GPU's present setting, and clears them from the jobs.
func dropSettings(r *gpuRun, s *spec.Spec, sp *space.Space, be backend.Backend, declared []string) error {
	if len(declared) == 0 {
		return nil
	}
	info := be.Device()
	for _, n := range declared {
		i := slices.IndexFunc(s.Params, func(p space.Param) bool { return p.Name == n })
		var v expr.Value
		switch n {
		case backend.ParamCoreClock:
			v = expr.Int(int64(info.MaxSMClockMHz))
		case backend.ParamMemClock:
			v = expr.Int(int64(info.MemClockMHz))
		default:
			v = expr.Float(info.PowerLimitW)
		}
		s.Params[i].Values = []expr.Value{v}
		r.drop[n] = true
	}
	var err error
	if r.space, err = s.BuildSpace(); err != nil {
		return err
	}
	if r.space.Len() == 0 {
		return badInput("%s: with the GPU settings kept at their present values no configuration satisfies the restrictions", s.Path)
	}
	return nil
}

// narrowToRidge measures the synthetic kernel's power at every supported
// SM clock, fits the ridge frequency and keeps the SM clocks within ±10 %
// of it, in the added parameter or in the spec's own nvml_gr_clock.
func narrowToRidge(ctx context.Context, log io.Writer, s *spec.Spec, adds []space.Param, be backend.Backend, r *gpuRun, t gpuctl.Tables, g gpuFlags) error {
	if _, isSim := be.(*sim.Sim); !isSim && (g.dryRun || r.session == nil) {
		if g.dryRun {
			fmt.Fprintf(log, "gtune: dry run: --clock-range ridge would first run a synthetic FMA kernel at each of the %d SM clocks of %s\n", len(t.DefaultCoreMHz()), be.Device().Name)
			return nil
		}
		return badInput("--clock-range ridge on a real GPU runs a synthetic kernel at every SM clock and needs --allow-gpu-settings")
	}
	mb := be
	if r.session != nil {
		mb = gpuctl.Wrap(be, r.session, nil)
	}
	samples, err := gpuctl.MeasurePowerCurve(ctx, mb, t.DefaultCoreMHz())
	if err != nil {
		return err
	}
	fit, err := gpuctl.FitRidge(samples)
	if err != nil {
		return err
	}
	keep := gpuctl.RidgeWindow(t.DefaultCoreMHz(), fit.RidgeMHz, gpuctl.RidgeFraction)
	fmt.Fprintf(log, "gtune: ridge frequency %.0f MHz (fit RMS %.1f W over %d clocks); SM clocks %d..%d MHz (%d)\n",
		fit.RidgeMHz, fit.RMSW, len(samples), keep[len(keep)-1], keep[0], len(keep))
	in := func(v expr.Value) bool {
		f, _ := v.Float()
		return slices.Contains(keep, int(f))
	}
	for i := range adds {
		if adds[i].Name == backend.ParamCoreClock {
			adds[i].Values = slices.DeleteFunc(adds[i].Values, func(v expr.Value) bool { return !in(v) })
		}
	}
	for i := range s.Params {
		if s.Params[i].Name == backend.ParamCoreClock {
			vals := slices.DeleteFunc(slices.Clone(s.Params[i].Values), func(v expr.Value) bool { return !in(v) })
			if len(vals) == 0 {
				return badInput("%s: none of the values of %s lies within ±10 %% of the ridge frequency %.0f MHz (%d..%d MHz)", s.Path, backend.ParamCoreClock, fit.RidgeMHz, keep[len(keep)-1], keep[0])
			}
			s.Params[i].Values = vals
		}
	}
	return nil
}

func describeValues(p space.Param, unit string) string {
	if len(p.Values) <= 6 {
		var vs []string
		for _, v := range p.Values {
			vs = append(vs, v.String())
		}
		return fmt.Sprintf("%s %s", strings.Join(vs, ", "), unit)
	}
	return fmt.Sprintf("%d values, %s .. %s %s", len(p.Values), p.Values[0].String(), p.Values[len(p.Values)-1].String(), unit)
}

// printPlan is --dry-run's report: what would be set, how, and where the
// journal would go.
func printPlan(w io.Writer, s *spec.Spec, sp *space.Space, be backend.Backend, t gpuctl.Tables, g gpuFlags, journal string) {
	d := be.Device()
	fmt.Fprintf(w, "dry run: no GPU setting is changed and nothing is tuned\n")
	fmt.Fprintf(w, "device: %s (%s), %s backend; now: SM clock %d MHz, memory clock %d MHz, power limit %g W (settable %g–%g W)\n",
		d.Name, d.UUID, d.Backend, d.SMClockMHz, d.MemClockMHz, d.PowerLimitW, t.MinPowerW, t.MaxPowerW)
	fmt.Fprintln(w, "GPU-setting parameters:")
	for _, p := range s.Params {
		switch p.Name {
		case backend.ParamCoreClock:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetGpuLockedClocks(f, f); nvmlDeviceSetApplicationsClocks where locked clocks are not supported\n", p.Name, describeValues(p, "MHz"))
		case backend.ParamMemClock:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetMemoryLockedClocks(m, m); nvmlDeviceSetApplicationsClocks where not supported\n", p.Name, describeValues(p, "MHz"))
		case backend.ParamPowerLimit:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetPowerManagementLimit\n", p.Name, describeValues(p, "W"))
		}
	}
	fmt.Fprintf(w, "space: %d valid configurations\n", sp.Len())
	if sp.Len() > 0 {
		var first []string
		for i, v := range sp.Values(0) {
			if gpuctl.IsSetting(s.Params[i].Name) {
				first = append(first, s.Params[i].Name+"="+v.String())
			}
		}
		fmt.Fprintf(w, "first setting: %s\n", strings.Join(first, " "))
	}
	abs, _ := filepath.Abs(journal)
	fmt.Fprintf(w, "journal: %s (written before the first change; the originals are restored at exit, or by gtune restore)\n", abs)
	if g.allow {
		fmt.Fprintln(w, "permission: --allow-gpu-settings given")
	} else {
		fmt.Fprintln(w, "permission: --allow-gpu-settings not given; a real run would refuse")
	}
}

// cappingReport is the thesis's power-capping ratio over the run's valid
// configurations with a measured power: the power limit in force is the
// configuration's nvml_pwr_limit, else the device's. nil without power.
func cappingReport(sum *tuner.Summary) map[string]any {
	var samples []gpuctl.CapSample
	for _, o := range sum.Outcomes {
		p, ok := o.Observations["power"]
		if !o.Valid() || !ok {
			continue
		}
		cap := sum.Device.PowerLimitW
		for _, q := range o.Params {
			if q.Name == backend.ParamPowerLimit {
				if f, ok := toFloat(q.Value); ok {
					cap = f
				}
			}
		}
		samples = append(samples, gpuctl.CapSample{PowerW: p, CapW: cap})
	}
	if len(samples) == 0 {
		return nil
	}
	ratio, near, total := gpuctl.CappingRatio(samples, gpuctl.CappingTolW)
	return map[string]any{"ratio": ratio, "near_cap": near, "configurations": total, "tolerance_w": float64(gpuctl.CappingTolW)}
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case expr.Value:
		return x.Float()
	}
	return 0, false
}

func writeCapping(w io.Writer, sum *tuner.Summary) {
	r := cappingReport(sum)
	if r == nil {
		return
	}
	fmt.Fprintf(w, "power-capping ratio: %.3f (%d of %d configurations within %g W of the power limit)\n",
		r["ratio"], r["near_cap"], r["configurations"], r["tolerance_w"])
}
