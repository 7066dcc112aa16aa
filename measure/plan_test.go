package measure

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// fakeGPU is a GPU whose board draws idleW, or busyW while a load runs,
// with an energy counter that updates every 100 ms: enough to check the
// order and arithmetic of Run without a backend.
type fakeGPU struct {
	now, t0      time.Time
	idleW, busyW float64
	busy         [][2]time.Time // closed busy intervals
	busySince    time.Time
	running      bool
	launchMs     []float64 // per launch of the plan
	planMs       float64
	verdict      Verdict
	timeErr      error
	noSensors    bool
	timeCalls    int
	verifyCalls  int
}

func newFake() *fakeGPU {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &fakeGPU{now: t, t0: t, idleW: 60, busyW: 300, launchMs: []float64{0.5, 0.75}, planMs: 1.0}
}

func (g *fakeGPU) Now() time.Time            { return g.now }
func (g *fakeGPU) Sleep(d time.Duration)     { g.now = g.now.Add(max(d, time.Microsecond)) }
func (g *fakeGPU) Clock() Clock              { return g }
func (g *fakeGPU) Provenance() (a, b string) { return "fake", "fakesensor" }
func (g *fakeGPU) Launches() int             { return len(g.launchMs) }
func (g *fakeGPU) Sync() error               { return nil }
func (g *fakeGPU) Sensors() Sensors {
	if g.noSensors {
		return nil
	}
	return g
}
func (g *fakeGPU) Verify(save bool) (Verdict, error) { g.verifyCalls++; return g.verdict, nil }
func (g *fakeGPU) Time(reps int) ([]PlanTime, error) {
	g.timeCalls++
	if g.timeErr != nil {
		return nil, g.timeErr
	}
	out := make([]PlanTime, reps)
	for i := range out {
		out[i] = PlanTime{PlanMs: g.planMs, LaunchMs: append([]float64(nil), g.launchMs...)}
	}
	return out, nil
}
func (g *fakeGPU) Load(estMs float64) (Load, error) { return g, nil }

// Load: the board is busy from Start to Finish.
func (g *fakeGPU) Start() error { g.busySince, g.running = g.now, true; return nil }
func (g *fakeGPU) Pump() error  { return nil }
func (g *fakeGPU) Finish() (int, time.Duration, error) {
	el := g.now.Sub(g.busySince)
	n := max(1, int(el.Seconds()*1e3/g.planMs))
	end := g.busySince.Add(time.Duration(float64(n) * g.planMs * float64(time.Millisecond)))
	if end.After(g.now) {
		g.now = end
	}
	g.busy = append(g.busy, [2]time.Time{g.busySince, end})
	g.running = false
	return n, end.Sub(g.busySince), nil
}

func (g *fakeGPU) energyAt(t time.Time) float64 {
	e := g.idleW * t.Sub(g.t0).Seconds()
	for _, b := range g.busy {
		if b[0].Before(t) {
			e += (g.busyW - g.idleW) * (minT(b[1], t).Sub(b[0])).Seconds()
		}
	}
	if g.running && g.busySince.Before(t) {
		e += (g.busyW - g.idleW) * t.Sub(g.busySince).Seconds()
	}
	return e
}

func minT(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (g *fakeGPU) EnergyMJ() (uint64, error) {
	step := 100 * time.Millisecond
	at := g.t0.Add(g.now.Sub(g.t0) / step * step)
	return uint64(g.energyAt(at) * 1000), nil
}
func (g *fakeGPU) TemperatureC() (float64, error)       { return 50, nil }
func (g *fakeGPU) ClocksMHz() (float64, float64, error) { return 1980, 2619, nil }
func (g *fakeGPU) ClockEventReasons() (uint64, error)   { return 0, nil }
func (g *fakeGPU) Throttle() (ThrottleTimes, error)     { return ThrottleTimes{}, nil }

// PowerSamples are the mean power of each 20 ms since t0, stamped at
// its end, as an H100's buffer holds them.
func (g *fakeGPU) PowerSamples(since time.Time) ([]PowerSample, error) {
	step := 20 * time.Millisecond
	var out []PowerSample
	for at := g.t0.Add(step); !at.After(g.now); at = at.Add(step) {
		if at.After(since) {
			out = append(out, PowerSample{At: at, W: (g.energyAt(at) - g.energyAt(at.Add(-step))) / step.Seconds()})
		}
	}
	return out, nil
}
func (g *fakeGPU) InstantPowerW() (float64, error) { return 0, ErrNoSensor }

func TestRunTimesAndEnergyOfAPlan(t *testing.T) {
	g := newFake()
	out, err := Run(g, &Meter{}, Request{Iterations: 5, Energy: true, EnergyWindow: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if g.timeCalls != 2 || len(out.Times) != 5 {
		t.Fatalf("Time called %d times, %d timed runs; want warm-up + 5", g.timeCalls, len(out.Times))
	}
	obs := out.Observations
	check := func(name string, launch int, want, tol float64, unit, method string) {
		t.Helper()
		for _, o := range obs {
			if o.Name == name && o.Launch == launch {
				if math.Abs(o.Value-want) > tol || o.Unit != unit || o.Method != method {
					t.Errorf("%s[%d] = %+v; want %g ± %g %s by %s", name, launch, o, want, tol, unit, method)
				}
				return
			}
		}
		t.Errorf("%s[%d] missing", name, launch)
	}
	check("time", PlanScope, 1.0, 0, "ms", "fake-events")
	check("time", 0, 0.5, 0, "ms", "fake-events")
	check("time_median", 1, 0.75, 0, "ms", "fake-events")
	// 300 W for 1 ms per run: 0.3 J, within the counter window's error.
	check("energy", PlanScope, 0.3, 0.3*0.03, "J", "fakesensor-energy-counter")
	check("power", PlanScope, 300, 300*0.03, "W", "fakesensor-energy-counter")
	check("idle_power", PlanScope, 60, 0.5, "W", "fakesensor-energy-counter")
	check("sm_clock", PlanScope, 1980, 0, "MHz", "fakesensor-energy-counter-side-readings")
	e, _ := obs.Get("energy")
	check("edp", PlanScope, e*1.0/1e3, 1e-12, "J·s", "fakesensor-energy-counter×fake-events")
	if err := obs.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if u := UnitOf(o.Name); o.Launch == PlanScope && u != o.Unit {
			t.Errorf("%s: unit %q, Quantities say %q", o.Name, o.Unit, u)
		}
	}
	if out.GPUSeconds < 2 {
		t.Errorf("GPU seconds %g, want at least the 2 s window", out.GPUSeconds)
	}
}

func TestRunStopsAtAFailedVerification(t *testing.T) {
	g := newFake()
	g.verdict = Verdict{MaxError: 0.5, Failure: "output c: error 0.5 exceeds threshold"}
	out, err := Run(g, nil, Request{Verify: true, Energy: true})
	if err != nil || out.Verdict == nil || out.Verdict.Failure == "" || g.timeCalls != 0 || len(out.Observations) != 0 {
		t.Fatalf("outcome %+v, %v; Time called %d times", out, err, g.timeCalls)
	}
}

func TestRunWithoutSensors(t *testing.T) {
	g := newFake()
	g.noSensors = true
	out, err := Run(g, nil, Request{Energy: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Observations.Get("energy"); ok || len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "no energy sensor") {
		t.Fatalf("observations %v notes %q", out.Observations, out.Notes)
	}
	if _, ok := out.Observations.Get("time"); !ok {
		t.Fatal("no time without sensors")
	}
}

func TestRunReportsTheStageOfAFailure(t *testing.T) {
	g := newFake()
	g.timeErr = errors.New("an illegal memory access was encountered")
	_, err := Run(g, nil, Request{})
	var se *StageError
	if !errors.As(err, &se) || se.Stage != "warm-up" || !errors.Is(err, g.timeErr) {
		t.Fatalf("error %v", err)
	}
}

func TestClockObserverWithoutEnergy(t *testing.T) {
	out, err := Run(newFake(), nil, Request{Iterations: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Observations.Get("sm_clock"); ok {
		t.Fatal("clocks read without being asked")
	}
	out, err = Run(newFake(), nil, Request{Iterations: 3, Observers: []string{"clocks"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Observations.Get("sm_clock"); !ok || v != 1980 {
		t.Fatalf("sm_clock %v %v", v, ok)
	}
	if _, ok := out.Observations.Get("energy"); ok {
		t.Fatal("energy without asking")
	}
}

func TestNamedObserverPowerSamples(t *testing.T) {
	g := newFake()
	out, err := Run(g, nil, Request{Iterations: 3, Observers: []string{"power-samples"}})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := out.Observations.Get("power_samples_energy")
	if !ok || math.Abs(e-0.3) > 0.3*0.03 {
		t.Fatalf("sampled_energy %v %v (notes %q), want 0.3 J", e, ok, out.Notes)
	}
	p, _ := out.Observations.Get("power_samples_power")
	if math.Abs(p-300) > 300*0.03 {
		t.Fatalf("sampled_power %v, want 300 W", p)
	}
	if _, err := Run(newFake(), nil, Request{Observers: []string{"wattmeter"}}); err == nil || !strings.Contains(err.Error(), `unknown observer "wattmeter"`) {
		t.Fatalf("unknown observer: %v", err)
	}
	if UnitOf("power_samples_energy") != "J" {
		t.Fatal("a registered observer's quantities are not among Quantities")
	}
}

// CorrectLag undoes a first-order sensor lag: the lag-corrected power of
// a sensor with C = 0.8 s follows the load, the raw samples do not.
func TestLagCorrectionOfALaggingSensor(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := 0.8
	var samples []PowerSample
	pm := 50.0
	for i := 0; i <= 200; i++ {
		p := 50.0
		if i >= 50 {
			p = 250
		}
		// The sensor: dPm/dt = (P - Pm)/C, stepped every 10 ms.
		pm += (p - pm) * 0.01 / c
		samples = append(samples, PowerSample{At: t0.Add(time.Duration(i) * 10 * time.Millisecond), W: pm})
	}
	corr := CorrectLag(samples, c)
	if raw := samples[100].W; raw > 200 {
		t.Fatalf("raw sample %v already follows the step", raw)
	}
	if got := corr[100].W; math.Abs(got-250) > 10 {
		t.Fatalf("corrected %v, want about 250 W", got)
	}
}

// A Meter that inherits a warm GPU (a worker replacing one killed
// mid-run) measures without warming up again and corrects with the
// leakage model it was handed; a fresh one warms up first (15 s of a
// steady temperature: SteadyWindow) and, the fake's temperature never
// moving, corrects with the prior.
func TestInheritSkipsTheWarmup(t *testing.T) {
	req := Request{Iterations: 3, Energy: true, EnergyWindow: time.Second, Trials: &Protocol{Warmup: true, Thermal: ThermalBoth}}
	get := func(out *Outcome, name string) (float64, bool) { return out.Observations.Get(name) }
	fresh, err := Run(newFake(), &Meter{}, req)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := get(fresh, "warmup_time"); !ok || w < SteadyWindow.Seconds() {
		t.Errorf("fresh meter: warm-up %v s (%v), want at least %v", w, ok, SteadyWindow.Seconds())
	}
	if p, _ := get(fresh, "leakage_prior"); p != 1 {
		t.Errorf("fresh meter: leakage prior %v, want 1 (no temperature range to fit)", p)
	}
	m := &Meter{}
	m.Inherit(&ThermalFit{SlopeWPerC: 1.5, RefC: 60})
	hot, err := Run(newFake(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := get(hot, "warmup_time"); ok {
		t.Errorf("inherited meter warmed up for %v s", w)
	}
	s, _ := get(hot, "leakage_slope")
	p, _ := get(hot, "leakage_prior")
	if s != 1.5 || p != 0 || !m.Warmed() {
		t.Errorf("inherited meter: leakage slope %v (prior %v), warmed %v; want 1.5, 0, true", s, p, m.Warmed())
	}
}
