package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/space"
)

// Replay is a backend.Backend that measures nothing: it answers every
// configuration with what a Cache recorded, as Kernel Tuner's simulation
// mode does (kernel_tuner/runners/simulation.py), so that strategies can be
// run and compared on recorded data at no GPU cost.
//
// Compile always succeeds for a recorded configuration (its Binary carries
// the recorded compile time); Run then reports the recorded status,
// including compile_failed, so that every configuration is charged in Run,
// in the order the tuner evaluates them.
//
// It is safe for concurrent use.
type Replay struct {
	c      *Cache
	sp     *space.Space
	byKey  map[string]*Entry // space key → entry
	dev    backend.DeviceInfo
	energy bool

	mu      sync.Mutex
	charged float64 // ms
	runs    int
}

// NewReplay serves c for the configurations of sp. The tunable parameters
// must match: the same names (in any order), and every value of the space
// among the cache's tune_params (compared with Python ==, so 16.0 matches
// 16). Errors name the parameter (and value) that does not match. The cache
// may hold values and configurations the space does not use.
func NewReplay(c *Cache, sp *space.Space) (*Replay, error) {
	if c == nil || sp == nil {
		return nil, fmt.Errorf("cache: NewReplay needs a cache and a search space")
	}
	name := c.Path
	if name == "" {
		name = "(in memory)"
	}
	cpos := make(map[string]int, len(c.ParamNames))
	for i, n := range c.ParamNames {
		cpos[n] = i
	}
	params := sp.Params()
	perm := make([]int, len(params))
	inSpace := make(map[string]bool, len(params))
	for i, p := range params {
		j, ok := cpos[p.Name]
		if !ok {
			return nil, fmt.Errorf("cache %s has no tunable parameter %q (the search space has it; the cache has %s)", name, p.Name, strings.Join(c.ParamNames, ", "))
		}
		perm[i] = j
		inSpace[p.Name] = true
	}
	for _, n := range c.ParamNames {
		if !inSpace[n] {
			return nil, fmt.Errorf("cache %s has tunable parameter %q, which the search space lacks", name, n)
		}
	}
	for _, p := range params {
		cached := make([]expr.Value, 0, len(c.ParamValues[p.Name]))
		for _, v := range c.ParamValues[p.Name] {
			x, err := expr.FromGo(v)
			if err != nil {
				return nil, fmt.Errorf("cache %s: tunable parameter %q: %v", name, p.Name, err)
			}
			cached = append(cached, x)
		}
		for _, v := range p.Values {
			found := false
			for _, w := range cached {
				if v.Equal(w) {
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("cache %s: tunable parameter %q: value %s of the search space is not among the cache's values %s", name, p.Name, v.String(), expr.List(cached).String())
			}
		}
	}

	r := &Replay{c: c, sp: sp, byKey: make(map[string]*Entry, len(c.Entries))}
	vals := make([]expr.Value, len(params))
	for _, e := range c.Entries {
		if len(e.Params) != len(c.ParamNames) {
			return nil, fmt.Errorf("cache %s: entry %q has %d parameter values, the cache has %d tunable parameters", name, e.Key, len(e.Params), len(c.ParamNames))
		}
		ok := true
		for i := range params {
			x, err := expr.FromGo(e.Params[perm[i]])
			if err != nil {
				ok = false
				break
			}
			vals[i] = x
		}
		if !ok {
			continue
		}
		ix, ok := sp.IndexesOf(vals)
		if !ok {
			continue // uses a value the space does not have
		}
		r.byKey[sp.KeyOf(ix)] = e
		if _, ok := e.Energy(); ok {
			r.energy = true
		}
	}
	dn := c.DeviceName
	if dn == "" {
		dn = "unknown device"
	}
	r.dev = backend.DeviceInfo{
		Backend: "replay", Name: dn, UUID: "replay:" + dn,
		// Kernel Tuner's SimulationDevice claims 1024 threads per block.
		MaxThreadsPerBlock: 1024,
		HasEnergyCounter:   r.energy,
	}
	return r, nil
}

// Device describes the recorded GPU: Backend "replay", Name the cache's
// device_name ("unknown device" when it has none), UUID "replay:<name>".
func (r *Replay) Device() device.Description {
	return device.Description{Name: r.dev.Name, MaxThreadsPerBlock: r.dev.MaxThreadsPerBlock, Local: r.dev}
}

// Prepare does nothing: nothing is allocated for a replay.
func (r *Replay) Prepare(ctx context.Context, p *backend.Problem) error { return nil }

// Compile returns a Binary whose CompileMs is the recorded compile time (0
// when not recorded or the configuration is not in the cache). It never
// fails; a recorded compile failure is reported by Run.
func (r *Replay) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	b := &backend.Binary{Log: "replayed from " + r.source()}
	if e, ok := r.byKey[j.Key]; ok && !math.IsNaN(e.CompileMs) {
		b.CompileMs = e.CompileMs
	}
	return b, nil
}

func (r *Replay) source() string {
	if r.c.Path != "" {
		return r.c.Path
	}
	return "a cache in memory"
}

func nz(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// Run reports the recorded outcome of configuration j.Key: its status (the
// Kernel Tuner marker as Reason when invalid), its times (TimesMs), its
// benchmark time (BenchmarkMs, 0 when not recorded) and, when the cache
// records energy or power, Energy. It charges the recorded compile,
// verification and benchmark times (Charged), as Kernel Tuner's simulation
// mode does; a SaveReference job is not charged.
//
// TimesMs are the recorded times when their mean is the recorded time (as
// Kernel Tuner computes it), else the recorded time alone, so that the
// tuner's time observation (the mean of TimesMs) is always the recorded
// objective.
//
// A configuration that is not in the cache is an error when it satisfies
// the space's restrictions (Kernel Tuner raises there too: a replay must
// not silently skip a configuration a strategy may choose), and is
// reported as launch_failed ("InvalidConfig", charged nothing) otherwise.
func (r *Replay) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(p.Launches) == 0 {
		return nil, errors.New("replay: a plan without launches")
	}
	// One launch is keyed by its configuration; a plan of several (a
	// workload's, its cache exported by gtune export) by the plan's key
	// in the combined space, which is what the recording was keyed by.
	key := p.Launches[0].Job.Key
	if len(p.Launches) > 1 {
		key = p.Key
	}
	e, ok := r.byKey[key]
	if !ok {
		if _, valid := r.sp.Lookup(key); valid {
			return nil, fmt.Errorf("replay: configuration %s satisfies the restrictions but is not in the cache %s", key, r.source())
		}
		return &backend.Result{Status: backend.StatusLaunchFailed,
			Reason: MarkerInvalid + ": not in the cache and fails the restrictions"}, nil
	}
	if !p.Measure.SaveReference {
		r.mu.Lock()
		r.charged += nz(e.CompileMs) + nz(e.VerificationMs) + nz(e.BenchmarkMs)
		r.runs++
		r.mu.Unlock()
	}
	res := &backend.Result{Status: e.Status, BenchmarkMs: nz(e.BenchmarkMs),
		Launches: make([]backend.LaunchResult, len(p.Launches))}
	for i := range res.Launches {
		res.Launches[i].MaxThreadsPerBlock = r.dev.MaxThreadsPerBlock
	}
	if !e.Valid() {
		res.Reason = entryMarker(e) + " (recorded)"
		return res, nil
	}
	res.TimesMs = replayTimes(e)
	if len(p.Launches) == 1 {
		// A recording has the plan's times, which are its launch's only
		// when the plan has one.
		res.Launches[0].TimesMs = res.TimesMs
	}
	res.Observations = e.Observations()
	return res, nil
}

// ReplayMethod is the method of every observation a replay reports.
const ReplayMethod = "replay"

// Observations are what a replay reports of a valid entry: the timing
// observations of its recorded launch times (measure.TimeObservations)
// and, when recorded, energy (J per launch), power (W), edp (J·s),
// sm_clock, mem_clock (MHz) and temperature (°C) (see energyOf), all
// with method ReplayMethod.
func (e *Entry) Observations() measure.Observations {
	times := replayTimes(e)
	runs := make([]measure.PlanTime, len(times))
	for i, t := range times {
		runs[i] = measure.PlanTime{PlanMs: t, LaunchMs: []float64{t}}
	}
	obs := measure.TimeObservations(runs, 1, ReplayMethod)
	en, ok := e.Energy()
	if !ok {
		return obs
	}
	t, _ := obs.Get("time")
	set := func(name string, v float64) {
		obs.Set(measure.Observation{Name: name, Unit: measure.UnitOf(name), Value: v, Method: ReplayMethod, Launch: measure.PlanScope})
	}
	set("energy", en.EnergyJ)
	set("power", en.PowerW)
	set("edp", en.EnergyJ*t/1e3)
	for name, v := range map[string]float64{"sm_clock": en.SMClockMHz, "mem_clock": en.MemClockMHz, "temperature": en.TemperatureC} {
		if v != 0 {
			set(name, v)
		}
	}
	return obs
}

// Objective is a valid entry's time (the mean of its launch times, ms),
// energy (J), power (W) or EDP (J·s) as Observations gives it, computed
// without the rest (its bootstrap interval costs far more than a scan of
// every entry needs). ok is false for another name or a value the entry
// lacks.
func (e *Entry) Objective(name string) (float64, bool) {
	times := replayTimes(e)
	if len(times) == 0 {
		return math.NaN(), false
	}
	t := measure.Summarize(times).Mean
	if name == "time" {
		return t, true
	}
	en, ok := e.Energy()
	if !ok {
		return math.NaN(), false
	}
	switch name {
	case "energy":
		return en.EnergyJ, true
	case "power":
		return en.PowerW, true
	case "edp":
		return en.EnergyJ * t / 1e3, true
	}
	return math.NaN(), false
}

// replayTimes are the launch times to report for a valid entry.
func replayTimes(e *Entry) []float64 {
	if len(e.Times) == 0 {
		if math.IsNaN(e.Time) {
			return nil
		}
		return []float64{e.Time}
	}
	if math.IsNaN(e.Time) {
		return append([]float64(nil), e.Times...)
	}
	sum := 0.0
	for _, t := range e.Times {
		sum += t
	}
	mean := sum / float64(len(e.Times))
	if math.Abs(mean-e.Time) <= 1e-9*math.Abs(e.Time) {
		return append([]float64(nil), e.Times...)
	}
	return []float64{e.Time}
}

func extra(e *Entry, names ...string) (float64, bool) {
	for _, n := range names {
		if v, ok := e.Extra[n]; ok && !math.IsNaN(v) {
			return v, true
		}
	}
	return 0, false
}

// RecordedEnergy is an entry's recorded energy of one launch.
type RecordedEnergy struct {
	EnergyJ      float64 // J per launch
	PowerW       float64 // W
	SMClockMHz   float64 // 0 when not recorded
	MemClockMHz  float64
	TemperatureC float64
}

// Energy gives the recorded energy of a valid entry; ok is false when it
// records neither energy nor power: energy per launch (J) from "energy",
// "nvml_energy" or "ps_energy", power (W) from "power", "nvml_power" or
// "ps_power" (Kernel Tuner's observer names), one derived from the other
// and the time when only one is recorded; SM clock from core_freq, memory
// clock from mem_freq, temperature.
func (e *Entry) Energy() (RecordedEnergy, bool) {
	en, hasE := extra(e, "energy", "nvml_energy", "ps_energy")
	pw, hasP := extra(e, "power", "nvml_power", "ps_power")
	if !hasE && !hasP {
		return RecordedEnergy{}, false
	}
	t := e.Time / 1000 // s
	switch {
	case !hasE:
		en = pw * t
	case !hasP:
		pw = en / t
	}
	out := RecordedEnergy{EnergyJ: en, PowerW: pw}
	out.SMClockMHz, _ = extra(e, "core_freq", "sm_clock")
	out.MemClockMHz, _ = extra(e, "mem_freq", "mem_clock")
	out.TemperatureC, _ = extra(e, "temperature")
	return out, true
}

// Close does nothing.
func (r *Replay) Close() error { return nil }

// Replays is backend.Replayer: the recorded statuses include the
// verification made when they were recorded.
func (r *Replay) Replays() {}

// Traits implements backend.TraitDeclarer: a replay looks its binaries
// up and gives recorded results.
func (r *Replay) Traits() backend.Traits {
	return backend.Traits{InstantCompile: true, Modelled: true}
}

var _ backend.Replayer = (*Replay)(nil)

// Charged is the time Kernel Tuner's simulation mode would have charged to
// the time budget for the configurations run so far: the sum of their
// recorded compile, verification and benchmark times (framework and
// strategy times are the tuner's own and not simulated).
func (r *Replay) Charged() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Duration(r.charged * float64(time.Millisecond))
}

// ChargedMs is Charged in ms, without rounding to whole nanoseconds.
func (r *Replay) ChargedMs() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.charged
}

// Runs is the number of recorded configurations run (and charged) so far.
func (r *Replay) Runs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}

// Recorded is the number of configurations of the space the cache records.
func (r *Replay) Recorded() int { return len(r.byKey) }

// Entry gives the recorded entry of the configuration with this space key.
func (r *Replay) Entry(key string) (*Entry, bool) {
	e, ok := r.byKey[key]
	return e, ok
}

var _ backend.Backend = (*Replay)(nil)
