package gpuctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/workload"
)

// Options are the GPU-settings choices of one tuning run. Error messages
// name them by gtune tune's flags, given here with each field.
type Options struct {
	Strategy   string  // --gpu-settings: g1, g2 or g3 (Strategies); "" adds none
	ClockStep  int     // --clock-step: SM clocks this many MHz apart (0: every supported clock)
	PowerStep  float64 // --power-step: power limits this many W apart
	Allow      bool    // --allow-gpu-settings: the user allows changing the GPU's settings
	DryRun     bool    // --dry-run: make the Plan, change nothing
	OnNoPerm   string  // --on-no-permission: stop, or drop the settings and tune the rest
	Journal    string  // --journal: the journal's path ("": DefaultJournalPath of the database)
	ClockRange string  // --clock-range: all, or ridge (RidgeFraction around the fitted ridge frequency)
	SimState   string  // --sim-nvml-state: the simulated GPU's NVML state file ("": in memory)
}

// InputError marks an error caused by the user's input (a flag, a spec
// value, a missing permission the user can give): gtune exits with status
// 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(err error) error { return &InputError{err} }

func badInput(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// SettingParams names the spec's own GPU-setting parameters (IsSetting),
// in spec order.
func SettingParams(s *spec.Spec) []string {
	var out []string
	for _, p := range s.Params {
		if IsSetting(p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

// Preflight checks o against the spec before any database or GPU is
// touched. GPU-setting parameters need Allow (or DryRun) on the simulated
// GPU as on a real one, so that a command that works on the simulator
// works on a GPU; so does the simulated NVML control surface (SimState).
// simulated is kept for the callers' sake and changes nothing. Every
// error is an *InputError.
func Preflight(s *spec.Spec, o Options, simulated bool) error {
	if o.OnNoPerm != "stop" && o.OnNoPerm != "drop" {
		return badInput("--on-no-permission %q: want stop or drop", o.OnNoPerm)
	}
	if o.ClockRange != "all" && o.ClockRange != "ridge" {
		return badInput("--clock-range %q: want all or ridge", o.ClockRange)
	}
	if o.ClockStep < 0 || o.PowerStep <= 0 || math.IsNaN(o.PowerStep) {
		return badInput("--clock-step must be ≥ 0 and --power-step > 0, got %d MHz and %g W", o.ClockStep, o.PowerStep)
	}
	declared := SettingParams(s)
	var adds []string
	if o.Strategy != "" {
		var ok bool
		if adds, ok = Strategies[strings.ToLower(o.Strategy)]; !ok {
			return badInput("--gpu-settings %q: want g1 (SM clock, memory clock, power limit), g2 (SM and memory clock) or g3 (power limit)", o.Strategy)
		}
		for _, n := range adds {
			if slices.Contains(declared, n) {
				return badInput("--gpu-settings %s adds %s, which %s already declares as a tunable parameter; leave out one of them", o.Strategy, n, s.Path)
			}
		}
	}
	all := append(slices.Clone(declared), adds...)
	if o.ClockRange == "ridge" && !slices.Contains(all, backend.ParamCoreClock) {
		return badInput("--clock-range ridge narrows the %s dimension, but the search space has none (use --gpu-settings g1 or g2, or declare %s)", backend.ParamCoreClock, backend.ParamCoreClock)
	}
	if (len(all) > 0 || o.SimState != "") && !o.Allow && !o.DryRun {
		what := "--gpu-settings " + o.Strategy
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

// Run is the GPU-settings part of one tuning run (Setup).
type Run struct {
	session *Session
	// others are the sessions of the further GPUs of a run over several
	// (AddGPUs), in order; simState the first GPU's simulated state file.
	others   []*Session
	simState string
	drop     map[string]bool
	space    *space.Space
	plan     *Plan
	log      io.Writer
}

// Plan is what a dry run would set (Options.DryRun): nothing is changed
// and nothing is tuned.
type Plan struct {
	Device               backend.DeviceInfo // the GPU and its present settings
	MinPowerW, MaxPowerW float64            // settable power limits, W
	// Params are the spec's GPU-setting parameters (added ones included),
	// in spec order: clocks in MHz, power limits in W.
	Params    []space.Param
	SpaceSize int // valid configurations
	// FirstSetting is name=value of each GPU setting of the first
	// configuration; nil for an empty space.
	FirstSetting []string
	Journal      string // absolute path of the journal
	Allowed      bool   // Options.Allow was given
}

// Space is the search space with the GPU-setting parameters added,
// narrowed or kept at one value.
func (r *Run) Space() *space.Space { return r.space }

// Plan is the dry run's plan, nil when the run is not a dry run.
func (r *Run) Plan() *Plan { return r.plan }

// Wrap puts the settings handling in front of be (Wrap); r nil or
// without GPU settings to apply or drop gives be itself.
func (r *Run) Wrap(be backend.Backend) backend.Backend {
	if r == nil || (r.session == nil && len(r.drop) == 0) {
		return be
	}
	return Wrap(be, r.session, r.drop)
}

// Close restores the original settings of every GPU of the run (defer
// it: it runs at normal exit, after SIGINT/SIGTERM cancelled the run,
// and while a panic unwinds), and says on the log that it did, or why
// restoring failed. r may be nil.
func (r *Run) Close() {
	if r == nil || r.session == nil {
		return
	}
	for _, s := range append([]*Session{r.session}, r.others...) {
		_, changed := s.Original()
		if err := s.Close(); err != nil {
			fmt.Fprintf(r.log, "gtune: restoring the GPU settings of %s failed: %v\n", s.Controller().DeviceUUID(), err)
			continue
		}
		if changed {
			fmt.Fprintf(r.log, "gtune: original GPU settings of %s restored\n", s.Controller().DeviceUUID())
		}
	}
}

// tablesOf gives the supported clocks and power limits of the backend's
// GPU: the simulated description, or what NVML reported to the backend.
func tablesOf(be backend.Backend) (Tables, backend.Simulator, error) {
	if sb, ok := backend.Capability[backend.Simulator](be); ok {
		d := sb.Description()
		return TablesOf(&d), sb, nil
	}
	t, err := TablesFromInfo(be.Device().Local)
	return t, nil, err
}

// Setup prepares the GPU settings of one tuning run of s (space sp) on be:
// it adds the Options.Strategy parameters (Tables.Values), narrows the SM
// clocks for ClockRange ridge (narrowToRidge), checks every value against
// the GPU's tables, and with Allow opens the controller (NVML, or the
// simulated GPU's control surface) and a Session journalled at
// Options.Journal (default DefaultJournalPath(db)). Without permission it
// stops (OnNoPerm stop) or keeps the spec's GPU-setting parameters at the
// GPU's present values (drop). With DryRun it makes the Plan instead of
// changing anything. Notes (no permission, the ridge fit, the restore at
// Close) go to log. It returns nil when the run involves no GPU setting.
// Errors caused by the input are *InputError; after an error the original
// settings are back.
func Setup(ctx context.Context, log io.Writer, s *spec.Spec, sp *space.Space, be backend.Backend, o Options, db string) (*Run, error) {
	declared := SettingParams(s)
	if o.Strategy == "" && len(declared) == 0 && o.SimState == "" {
		return nil, nil
	}
	tables, sb, err := tablesOf(be)
	if err != nil {
		return nil, inputError(err)
	}
	r := &Run{space: sp, log: log, drop: map[string]bool{}, simState: o.SimState}
	journal := o.Journal
	if journal == "" {
		journal = DefaultJournalPath(db)
	}
	// The spec's own values first: a bad one must cost no setting.
	if err := tables.Check(s.Params); err != nil {
		return nil, inputError(err)
	}
	if o.Allow && !o.DryRun {
		noPerm, err := r.open(be, sb, o, journal)
		if err != nil {
			return nil, err
		}
		if noPerm != nil {
			if o.OnNoPerm == "stop" {
				return nil, badInput("no permission to change the GPU settings of %s (%v); run as root, or give --on-no-permission drop to tune the other parameters", be.Device().Name, noPerm)
			}
			fmt.Fprintf(log, "gtune: no permission to change the GPU settings of %s; tuning without them (--on-no-permission drop)\n", be.Device().Name)
			return r, dropSettings(r, s, be, declared)
		}
	}
	var adds []space.Param
	if o.Strategy != "" {
		if adds, err = tables.Values(o.Strategy, o.ClockStep, o.PowerStep); err != nil {
			return nil, inputError(err)
		}
	}
	if o.ClockRange == "ridge" {
		if err := narrowToRidge(ctx, log, s, adds, be, r, tables, o); err != nil {
			r.Close()
			return nil, err
		}
	}
	for _, p := range adds {
		typ := "int"
		if p.Name == backend.ParamPowerLimit {
			typ = "float"
		}
		if err := s.AddParam(p.Name, typ, p.Values); err != nil {
			r.Close()
			return nil, err
		}
	}
	if err := tables.Check(s.Params); err != nil {
		r.Close()
		return nil, inputError(err)
	}
	if len(adds) > 0 || o.ClockRange == "ridge" {
		if r.space, err = s.BuildSpace(); err != nil {
			r.Close()
			return nil, err
		}
	}
	if o.DryRun {
		r.plan = makePlan(s, r.space, be, tables, o, journal)
	}
	return r, nil
}

// open opens the controller (NVML, or the simulated GPU's control
// surface) and a Session journalled at journal, and probes it. noPerm is
// the probe's error when the settings may not be changed (r has no
// session then); err is any other failure, after which nothing is held.
func (r *Run) open(be backend.Backend, sb backend.Simulator, o Options, journal string) (noPerm, err error) {
	r.session, noPerm, err = openSession(be, sb, o.SimState, journal)
	if err != nil && r.session != nil {
		r.Close()
		r.session = nil
	}
	return noPerm, err
}

// openSession opens be's controller and a probed Session journalled at
// journal (simState: the simulated GPU's state file, "" in memory). On
// noPerm or err it returns the session only where one must be closed (a
// failed probe that may have changed something).
func openSession(be backend.Backend, sb backend.Simulator, simState, journal string) (s *Session, noPerm, err error) {
	var ctl Controller
	meta := Journal{DeviceName: be.Device().Name}
	if sb != nil {
		d := sb.Description()
		c, err := sim.NewControl(&d, sim.ControlOptions{StateFile: simState, UUID: be.Device().UUID})
		if err != nil {
			return nil, nil, inputError(err)
		}
		if ctl, err = NewSim(c); err != nil {
			return nil, nil, err
		}
		meta.Backend, meta.SimState = "sim", c.StateFile()
		if simState == "" {
			journal = "" // an in-memory simulated GPU outlives nothing
		}
	} else {
		if ctl, err = OpenNVML(be.Device().UUID); err != nil {
			return nil, nil, err
		}
		meta.Backend = "nvml"
	}
	s = NewSession(ctl, journal, meta)
	if err := s.Probe(); err != nil {
		if errors.Is(err, ErrJournalExists) {
			return nil, nil, inputError(err)
		}
		if !errors.Is(err, ErrNoPermission) {
			return s, nil, err
		}
		return nil, err, nil
	}
	return s, nil, nil
}

// AddGPUs opens a session on each further GPU of a run over several
// (gtune tune --devices; more are of the first GPU's model, which the
// tuner checks), journalled beside the first GPU's journal with the GPU's
// position appended (".1", ".2", ...): each GPU's settings are applied
// to it before each of its Runs, and its originals put back at Close.
// A run whose settings were dropped for want of permission drops them on
// every GPU. Without permission on a further GPU it returns an
// *InputError (the run's settings cannot be applied to all GPUs alike);
// after an error every GPU's originals are back. r nil, or a run without
// settings to apply, adds nothing.
func (r *Run) AddGPUs(more []backend.Backend) error {
	if r == nil || r.session == nil {
		return nil
	}
	for i, be := range more {
		sb, _ := backend.Capability[backend.Simulator](be)
		journal, simState := r.session.JournalPath(), r.simState
		if journal != "" {
			journal = fmt.Sprintf("%s.%d", journal, i+1)
		}
		if simState != "" {
			simState = fmt.Sprintf("%s.%d", simState, i+1)
		}
		s, noPerm, err := openSession(be, sb, simState, journal)
		if s != nil && (noPerm != nil || err != nil) {
			s.Close()
		}
		if noPerm != nil {
			err = badInput("no permission to change the GPU settings of %s (%s), GPU %d of the run (%v): run as root, or tune the GPU settings on one GPU", be.Device().Name, be.Device().UUID, i+1, noPerm)
		}
		if err != nil {
			r.Close()
			return err
		}
		r.others = append(r.others, s)
	}
	return nil
}

// WrapGPUs is Wrap for the further GPUs of a run over several, in the
// order AddGPUs was given them.
func (r *Run) WrapGPUs(more []backend.Backend) []backend.Backend {
	out := make([]backend.Backend, len(more))
	for i, be := range more {
		switch {
		case r == nil || (r.session == nil && len(r.drop) == 0):
			out[i] = be
		case i < len(r.others):
			out[i] = Wrap(be, r.others[i], r.drop)
		default:
			out[i] = Wrap(be, nil, r.drop)
		}
	}
	return out
}

// SetupWorkload prepares the chip's GPU settings of a workload run:
// Options.Strategy adds its parameters to set (workload.Set.AddSetting),
// every value is checked against the GPU's tables, and the controller
// and journalled Session are opened as Setup does. Changing settings
// needs Options.Allow; without permission the run stops (a workload's
// settings are its search space). --clock-range ridge and --dry-run are
// for specs. It returns nil when the workload tunes no GPU setting.
// Errors caused by the input are *InputError.
func SetupWorkload(log io.Writer, set *workload.Set, be backend.Backend, o Options, db string) (*Run, error) {
	if o.Strategy == "" && len(set.Settings) == 0 {
		return nil, nil
	}
	if o.ClockRange == "ridge" || o.DryRun {
		return nil, badInput("--clock-range ridge and --dry-run take a spec, not a workload")
	}
	if !o.Allow {
		return nil, badInput("workload %s tunes GPU settings (%s): give --allow-gpu-settings", set.Path, settingNames(set.Settings))
	}
	tables, sb, err := tablesOf(be)
	if err != nil {
		return nil, inputError(err)
	}
	if o.Strategy != "" {
		adds, err := tables.Values(o.Strategy, o.ClockStep, o.PowerStep)
		if err != nil {
			return nil, inputError(err)
		}
		for _, p := range adds {
			if err := set.AddSetting(p.Name, p.Values); err != nil {
				return nil, badInput("workload %s: %v", set.Path, err)
			}
		}
	}
	if err := tables.Check(set.Settings); err != nil {
		return nil, inputError(err)
	}
	journal := o.Journal
	if journal == "" {
		journal = DefaultJournalPath(db)
	}
	r := &Run{log: log, drop: map[string]bool{}, simState: o.SimState}
	noPerm, err := r.open(be, sb, o, journal)
	if err != nil {
		return nil, err
	}
	if noPerm != nil {
		return nil, badInput("no permission to change the GPU settings of %s (%v); run as root", be.Device().Name, noPerm)
	}
	return r, nil
}

func settingNames(ps []space.Param) string {
	n := make([]string, len(ps))
	for i, p := range ps {
		n[i] = p.Name
	}
	return strings.Join(n, ", ")
}

// dropSettings keeps each of the spec's GPU-setting parameters at one
// value, the GPU's present setting, and clears them from the jobs.
func dropSettings(r *Run, s *spec.Spec, be backend.Backend, declared []string) error {
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
// SM clock (MeasurePowerCurve), fits the ridge frequency (FitRidge) and
// keeps the SM clocks within ±RidgeFraction of it, in the added parameter
// or in the spec's own nvml_gr_clock.
func narrowToRidge(ctx context.Context, log io.Writer, s *spec.Spec, adds []space.Param, be backend.Backend, r *Run, t Tables, o Options) error {
	// The simulated GPU asks the same permission as a real one: a dry
	// run (or a run without --allow-gpu-settings) changes no clock on
	// either, so it only says what it would measure.
	if o.DryRun || r.session == nil {
		if o.DryRun {
			fmt.Fprintf(log, "gtune: dry run: --clock-range ridge would first run a synthetic FMA kernel at each of the %d SM clocks of %s\n", len(t.DefaultCoreMHz()), be.Device().Name)
			return nil
		}
		return badInput("--clock-range ridge runs a synthetic kernel at every SM clock and needs --allow-gpu-settings")
	}
	mb := be
	if r.session != nil {
		mb = Wrap(be, r.session, nil)
	}
	samples, err := MeasurePowerCurve(ctx, mb, t.DefaultCoreMHz())
	if err != nil {
		return err
	}
	fit, err := FitRidge(samples)
	if err != nil {
		return err
	}
	keep := RidgeWindow(t.DefaultCoreMHz(), fit.RidgeMHz, RidgeFraction)
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

// makePlan is the dry run's Plan of s's space sp on be.
func makePlan(s *spec.Spec, sp *space.Space, be backend.Backend, t Tables, o Options, journal string) *Plan {
	p := &Plan{Device: be.Device().Local, MinPowerW: t.MinPowerW, MaxPowerW: t.MaxPowerW, SpaceSize: sp.Len(), Allowed: o.Allow}
	for _, q := range s.Params {
		if IsSetting(q.Name) {
			p.Params = append(p.Params, q)
		}
	}
	if sp.Len() > 0 {
		for i, v := range sp.Values(0) {
			if IsSetting(s.Params[i].Name) {
				p.FirstSetting = append(p.FirstSetting, s.Params[i].Name+"="+v.String())
			}
		}
	}
	p.Journal, _ = filepath.Abs(journal)
	return p
}

// PowerLimitOf is the power limit (W) that a configuration's parameter
// sets: ok when name is nvml_pwr_limit and value a number (float64, int,
// int64 or a numeric expr.Value). A configuration without one ran under
// the device's power limit.
func PowerLimitOf(name string, value any) (w float64, ok bool) {
	if name != backend.ParamPowerLimit {
		return 0, false
	}
	return toFloat(value)
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
