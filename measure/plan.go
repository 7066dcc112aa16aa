package measure

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Executor is what a backend gives the measurement routine for one plan
// of launches loaded on its GPU: primitives only (launch, events,
// sensors). The order of the protocol — verification, warm-up, timed
// runs, energy windows, observers — is Run's alone, so a real and a
// simulated GPU are measured by the same code.
//
// Errors of Verify, Time, Sync and of the Load are the plan's failures
// (a launch refused, a kernel that faulted); Run returns them wrapped in
// a *StageError and the backend maps them to a status.
type Executor interface {
	// Clock is the time source (WallClock on a real GPU).
	Clock() Clock
	// Sensors returns the GPU's sensors; nil when it has none (no NVML,
	// or a GPU without a power sensor).
	Sensors() Sensors
	// Provenance prefixes the Method of every observation: "cuda",
	// "nvml" for sensor readings on a real GPU, "sim" on the simulator.
	Provenance() (timing, sensors string)
	// Launches is the number of launches of the plan.
	Launches() int
	// Verify runs the plan once from the outputs' initial contents and
	// compares the outputs with their expected contents (and saves them
	// as the reference when save is set).
	Verify(save bool) (Verdict, error)
	// Time runs the plan reps times back to back, each repetition timed
	// with events: the whole plan (first launch issued to last launch
	// done, over all streams) and each launch on its stream, ms.
	Time(reps int) ([]PlanTime, error)
	// Load returns the plan run back to back, for energy windows; estMs
	// is the time of one run of the plan.
	Load(estMs float64) (Load, error)
	// Sync waits until the GPU is idle.
	Sync() error
}

// PlanTime is one timed run of a plan, ms.
type PlanTime struct {
	PlanMs   float64   `json:"plan_ms"`
	LaunchMs []float64 `json:"launch_ms"` // indexed by launch
}

// Verdict is the outcome of a verification run.
type Verdict struct {
	MaxError float64 // largest error found over the outputs
	Failure  string  // why the outputs are wrong; "" when they verify
}

// Request is what to measure of a plan: the one description of the
// measurement protocol (the spec's Gtune.Measurement maps onto it; its
// defaults are here).
type Request struct {
	// Iterations is the number of timed runs of the plan after one
	// warm-up run; <= 0 means DefaultIterations.
	Iterations int `json:"iterations"`
	// Verify runs a verification first; SaveReference saves its outputs.
	Verify        bool `json:"verify"`
	SaveReference bool `json:"save_reference"`
	// Energy runs the energy observer: one stand-alone counter window of
	// EnergyWindow (0: DefaultEnergyWindow) when Trials is nil, else the
	// repeated-trials protocol (RunProtocol).
	Energy       bool          `json:"energy"`
	EnergyWindow time.Duration `json:"energy_window"`
	Trials       *Protocol     `json:"trials,omitempty"`
	// StateKey names the device state (its GPU settings); idle power is
	// measured once per state.
	StateKey string `json:"state_key"`
	// Observers are registered observers (Register) run after the
	// built-in ones, by name.
	Observers []string `json:"observers,omitempty"`
	// SensorLagS is the power sensor's time constant C, s, for the lag
	// correction of sampled power (CorrectLag; the device database's
	// SensorCapacitanceS); 0: no correction.
	SensorLagS float64 `json:"sensor_lag_s,omitempty"`
}

// Defaults of Request.
const (
	DefaultIterations   = 7
	DefaultEnergyWindow = time.Second
)

// Outcome is what Run measured of one plan.
type Outcome struct {
	Verdict      *Verdict   // nil when no verification ran
	Times        []PlanTime // one per timed run
	Observations Observations
	// Notes are why some observation is missing (a sensor failed): the
	// plan's measurement stands without it.
	Notes []string
	// GPUSeconds is the GPU time the measurement took, s (verification,
	// warm-up, timed runs and energy windows).
	GPUSeconds float64
}

// StageError is a failure of the plan itself during one stage of Run
// ("verification", "warm-up", "timed runs", "energy window").
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return e.Stage + ": " + e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// Session is what an Observer sees of the measurement in progress.
type Session struct {
	Exec    Executor
	Meter   *Meter
	Request Request
	// PlanMs is the median time of one run of the plan, from the timed
	// runs, ms.
	PlanMs float64
}

// Observer is a measurement other than time, made once per plan after
// the timed runs (it may run the plan again, as the energy observer
// does). A new sensor (a power meter, profiler metrics) is one Observer.
// An error wrapped in *ErrWork is a failure of the plan; any other error
// is a sensor failure, noted, and the plan stands.
type Observer interface {
	// Name identifies the observer in notes and docs.
	Name() string
	// Provides lists the whole-plan observations it makes.
	Provides() []Quantity
	// Observe measures; GPUSeconds is the GPU time it used, s.
	Observe(s *Session) (obs Observations, gpuSeconds float64, err error)
}

// Meter is a GPU's measurement state, kept across plans by its backend:
// the idle power of each device state, whether the GPU has been warmed
// up, and the pooled update period of its energy counter.
type Meter struct {
	mu      sync.Mutex
	idle    map[string]IdleResult
	warmed  bool
	periods PeriodEstimate
	fit     *ThermalFit // the leakage model fitted at the warm-up (ThermalModel)
	heat    HeatLog     // the temperatures of every energy measurement (ThermalSettle)
	// IdleWindow is how long idle power is measured (0: 1 s, about ten
	// counter updates, which also seed the update-period estimate).
	IdleWindow time.Duration
}

// Idle returns the idle power of a device state, measuring it (after
// sync, with nothing queued) the first time.
func (m *Meter) Idle(c Clock, s Sensors, key string, sync func() error) (IdleResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.idle[key]; ok {
		return r, nil
	}
	if sync != nil {
		if err := sync(); err != nil {
			return IdleResult{}, &ErrWork{err}
		}
	}
	w := m.IdleWindow
	if w <= 0 {
		w = time.Second
	}
	r, err := IdlePower(c, s, w, DefaultPoll)
	if err != nil {
		return r, err
	}
	m.periods.Add(r.Gaps...)
	if m.idle == nil {
		m.idle = map[string]IdleResult{}
	}
	m.idle[key] = r
	return r, nil
}

// Forget drops the idle powers (the GPU's state changed under them).
func (m *Meter) Forget() {
	m.mu.Lock()
	m.idle = nil
	m.mu.Unlock()
}

// warm reports whether this is the first warm-up asked for, and records
// that it happened.
func (m *Meter) warm(want bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := want && !m.warmed
	m.warmed = m.warmed || want
	return first
}

// Run measures a plan: a verification run (when asked), one warm-up run,
// Iterations timed runs, then each observer in turn — the energy
// observer when the request asks for energy and the GPU has sensors
// (its window records clocks, temperature and clock-event reasons too) —
// followed by the request's named observers (Register; "clocks" reads
// the clocks of a time-only measurement, at the cost of four NVML reads
// per configuration: about 1 ms on an H100, BENCHMARKS.md) and extra. An unknown observer name is an
// error before anything runs. Timing observations are
// computed here (TimeQuantities); a failure of the plan is a
// *StageError; a failed verification is an Outcome with a Verdict whose
// Failure is set and nothing else measured.
func Run(x Executor, m *Meter, r Request, extra ...Observer) (*Outcome, error) {
	if m == nil {
		m = &Meter{}
	}
	var named []Observer
	for _, name := range r.Observers {
		o, err := NewObserver(name)
		if err != nil {
			return nil, err
		}
		named = append(named, o)
	}
	extra = append(named, extra...)
	out := &Outcome{}
	timing, _ := x.Provenance()
	if r.Verify || r.SaveReference {
		v, err := x.Verify(r.SaveReference)
		if err != nil {
			return nil, &StageError{"verification", err}
		}
		out.Verdict = &v
		if v.Failure != "" && r.Verify {
			return out, nil
		}
	}
	warm, err := x.Time(1)
	if err != nil {
		return nil, &StageError{"warm-up", err}
	}
	for _, t := range warm {
		out.GPUSeconds += t.PlanMs / 1e3
	}
	n := r.Iterations
	if n <= 0 {
		n = DefaultIterations
	}
	times, err := x.Time(n)
	if err != nil {
		return nil, &StageError{"timed runs", err}
	}
	out.Times = times
	for _, t := range times {
		out.GPUSeconds += t.PlanMs / 1e3
	}
	out.Observations = append(out.Observations, TimeObservations(times, x.Launches(), timing+"-events")...)

	sess := &Session{Exec: x, Meter: m, Request: r, PlanMs: Median(planMs(times))}
	var observers []Observer
	switch {
	case x.Sensors() == nil:
		if r.Energy {
			out.Notes = append(out.Notes, "energy: this GPU has no energy sensor")
		}
	case r.Energy:
		observers = append(observers, EnergyObserver{})
	}
	for _, o := range extra {
		if _, isClock := o.(ClockObserver); isClock && (r.Energy || x.Sensors() == nil) {
			continue // the energy window read them, or nothing can
		}
		observers = append(observers, o)
	}
	for _, o := range observers {
		obs, gpuS, err := o.Observe(sess)
		out.GPUSeconds += gpuS
		if err != nil {
			var we *ErrWork
			if errors.As(err, &we) {
				return nil, &StageError{o.Name(), we.Err}
			}
			out.Notes = append(out.Notes, fmt.Sprintf("%s: %v", o.Name(), err))
			continue
		}
		for _, ob := range obs {
			out.Observations.Set(ob)
		}
	}
	if e, ok := out.Observations.Get("energy"); ok {
		t, _ := out.Observations.Get("time")
		method := "energy×time"
		for _, ob := range out.Observations {
			if ob.Name == "energy" && ob.Launch == PlanScope {
				method = ob.Method + "×" + timing + "-events"
			}
		}
		out.Observations.Set(Observation{Name: "edp", Unit: "J·s", Value: e * t / 1e3, Method: method, Launch: PlanScope})
	}
	return out, nil
}

func planMs(ts []PlanTime) []float64 {
	v := make([]float64, len(ts))
	for i, t := range ts {
		v[i] = t.PlanMs
	}
	return v
}

// TimeQuantities are the timing observations Run makes of the whole plan
// (all in ms but time_cv). Each launch gets time and time_median of its
// own events.
var TimeQuantities = []Quantity{
	{"time", "ms", "mean time of one run of the plan over the timed runs (one launch: as in Kernel Tuner caches)"},
	{"time_median", "ms", "median of the timed runs"},
	{"time_min", "ms", "fastest timed run"},
	{"time_max", "ms", "slowest timed run"},
	{"time_std", "ms", "sample standard deviation of the timed runs"},
	{"time_cv", "1", "coefficient of variation of the timed runs"},
	{"time_ci_low", "ms", "bootstrap 95 % interval of the median time, low end (BootstrapCI, seed 1)"},
	{"time_ci_high", "ms", "high end of that interval"},
}

// TimeObservations are the timing observations of timed runs ts of a
// plan of launches launches (TimeQuantities for the plan; time and
// time_median for each launch), all with method.
func TimeObservations(ts []PlanTime, launches int, method string) Observations {
	var obs Observations
	out := &obs
	v := planMs(ts)
	st := Summarize(v)
	lo, hi := BootstrapCI(v, 2000, 0.95, 1)
	b := obsBuilder{out, method, PlanScope}
	b.add("time", "ms", st.Mean)
	b.add("time_median", "ms", st.Median)
	b.add("time_min", "ms", st.Min)
	b.add("time_max", "ms", st.Max)
	b.add("time_std", "ms", st.Std)
	b.add("time_cv", "1", st.CV())
	b.add("time_ci_low", "ms", lo)
	b.add("time_ci_high", "ms", hi)
	for k := 0; k < launches; k++ {
		var lv []float64
		for _, t := range ts {
			if k < len(t.LaunchMs) {
				lv = append(lv, t.LaunchMs[k])
			}
		}
		if len(lv) == 0 {
			continue
		}
		ls := Summarize(lv)
		lb := obsBuilder{out, method, k}
		lb.add("time", "ms", ls.Mean)
		lb.add("time_median", "ms", ls.Median)
	}
	return obs
}

// Thermal returns the leakage model fitted on this GPU's warm-up
// (ThermalModel); false before one.
func (m *Meter) Thermal() (ThermalFit, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fit == nil {
		return ThermalFit{}, false
	}
	return *m.fit, true
}

func (m *Meter) setThermal(f ThermalFit) {
	m.mu.Lock()
	m.fit = &f
	m.mu.Unlock()
}

// Inherit marks the GPU as warmed up by an earlier measuring process and
// takes that process's leakage model (fit; nil: it fitted none): a
// worker that replaces one killed mid-run (a timeout, a crash) finds the
// GPU at its working temperature, where warming it up again took at
// least the steady policy's SteadyWindow (15 s) a restart: 12 min 25 s of
// warm-up over four H100s in a DGEMM sweep with 29 timeouts
// (BENCHMARKS.md, "The BEAST DGEMM sweep on four H100s").
func (m *Meter) Inherit(fit *ThermalFit) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.warmed = true
	if fit != nil {
		f := *fit
		m.fit = &f
	}
}

// Warmed reports whether a warm-up has run on this GPU (a simulated GPU
// starts its die temperature from it).
func (m *Meter) Warmed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.warmed
}
