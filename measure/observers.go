package measure

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// EnergyObserver measures a plan's energy from the GPU's cumulative
// energy counter: one stand-alone counter window (CounterWindow) or the
// repeated-trials protocol (RunProtocol) when the request has Trials. A
// "run" below is one run of the whole plan, all launches on all streams.
type EnergyObserver struct{}

// Name is "energy".
func (EnergyObserver) Name() string { return "energy" }

// EnergyQuantities are what EnergyObserver provides.
var EnergyQuantities = []Quantity{
	{"energy", "J", "energy of one run of the plan (median of the trials with the protocol)"},
	{"power", "W", "mean board power while the plan ran back to back"},
	{"edp", "J·s", "energy × time of one run (computed by Run)"},
	{"dynamic_energy", "J", "energy of one run above the idle power of the device state"},
	{"idle_power", "W", "idle power of the device state"},
	{"sm_clock", "MHz", "mean SM clock during the window"},
	{"mem_clock", "MHz", "mean memory clock during the window"},
	{"temperature", "°C", "GPU temperature at the end of the window"},
	{"clock_event_reasons", "bitmask", "NVML clock-event reasons seen during the window, OR-ed"},
	{"power_throttle_time", "s", "power-cap throttle time inside the window"},
	{"thermal_throttle_time", "s", "thermal throttle time inside the window"},
	{"throttled", "bool", "1 when a thermal or hardware slowdown was seen: the window is suspect"},
	{"energy_window", "s", "length of the measured window"},
	{"energy_runs", "count", "runs of the plan inside the window"},
	{"energy_gpu_time", "s", "GPU time the energy measurement took, warm-up included"},
	{"energy_ci_low", "J", "bootstrap 95 % interval of the median energy per run, low end (= energy without trials)"},
	{"energy_ci_high", "J", "high end of that interval"},
	{"energy_cv", "1", "coefficient of variation of the trials (0 without trials)"},
	{"energy_trials", "count", "trials measured (1 without trials)"},
	{"unstable", "bool", "1 when the trials' CV is above the protocol's flag"},
	{"sample_energy", "J", "energy of one run from the power-sample buffer over the same span (cross-check)"},
	{"energy_uncorrected", "J", "energy of one run as measured, before the temperature correction (thermal policy model)"},
	{"leakage_slope", "W/°C", "the run's leakage model: board power per °C of die temperature (thermal policy model)"},
	{"temperature_ref", "°C", "the die temperature energy was corrected to (thermal policy model)"},
	{"leakage_prior", "bool", "1 when the leakage slope is the prior (the warm-up spanned too few °C to fit one)"},
	{"warmup_time", "s", "warm-up before the trials (the run's first energy measurement)"},
	{"thermal_steady", "bool", "1 when the GPU was at a thermal steady state by the end of the measurement (thermal policy settle)"},
}

// Provides lists EnergyQuantities.
func (EnergyObserver) Provides() []Quantity { return EnergyQuantities }

// Observe measures the energy. The idle power of the request's device
// state is measured first when unknown (Meter.Idle).
func (EnergyObserver) Observe(s *Session) (Observations, float64, error) {
	x := s.Exec
	sens := x.Sensors()
	if sens == nil {
		return nil, 0, errors.New("no energy sensor")
	}
	_, prov := x.Provenance()
	clk := x.Clock()
	idle, err := s.Meter.Idle(clk, sens, s.Request.StateKey, x.Sync)
	if err != nil {
		var we *ErrWork
		if errors.As(err, &we) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("idle power: %w", err)
	}
	l, err := x.Load(s.PlanMs)
	if err != nil {
		return nil, 0, &ErrWork{err}
	}
	if c, ok := l.(io.Closer); ok {
		defer c.Close()
	}
	if err := x.Sync(); err != nil {
		return nil, 0, &ErrWork{err}
	}
	var out Observations
	if s.Request.Trials == nil {
		window := s.Request.EnergyWindow
		if window <= 0 {
			window = DefaultEnergyWindow
		}
		w, err := CounterWindow(clk, sens, l, window, idle.PowerW, DefaultPoll)
		if err != nil {
			return nil, 0, err
		}
		gpuS := w.End.At.Sub(w.Start.At).Seconds()
		b := obsBuilder{&out, prov + "-energy-counter", PlanScope}
		windowObservations(b, w)
		b.add("energy_gpu_time", "s", gpuS)
		b.add("energy_ci_low", "J", w.EnergyPerLaunchJ)
		b.add("energy_ci_high", "J", w.EnergyPerLaunchJ)
		b.add("energy_cv", "1", 0)
		b.add("energy_trials", "count", 1)
		b.add("unstable", "bool", 0)
		return out, gpuS, nil
	}
	p := *s.Request.Trials
	p.Period = idle.Period
	p.periods = &s.Meter.periods
	p.heat = &s.Meter.heat
	p.LaunchS = s.PlanMs / 1e3
	p.Warmup = s.Meter.warm(p.Warmup)
	r, err := RunProtocol(clk, sens, l, idle.PowerW, p)
	if err != nil {
		return nil, 0, err
	}
	if r.Fit != nil {
		s.Meter.setThermal(*r.Fit)
	}
	b := obsBuilder{&out, prov + "-energy-counter-trials", PlanScope}
	if thermalModel(p.Thermal) {
		b = correctThermal(b, s.Meter, p, r)
	}
	windowObservations(b, &r.Window)
	b.add("energy_gpu_time", "s", r.GPUS)
	b.add("energy_ci_low", "J", r.Energy.CILow)
	b.add("energy_ci_high", "J", r.Energy.CIHigh)
	b.add("energy_cv", "1", r.Energy.CV)
	b.add("energy_trials", "count", float64(len(r.TrialEnergyJ)))
	b.add("unstable", "bool", boolValue(r.Energy.Unstable))
	if r.WarmupS > 0 {
		b.add("warmup_time", "s", r.WarmupS)
	}
	if p.Thermal == ThermalSettle {
		b.add("thermal_steady", "bool", boolValue(r.Steady))
	}
	for i, v := range r.TrialEnergyJ {
		b.add(fmt.Sprintf("energy_trial_%d", i+1), "J", v)
	}
	if !math.IsNaN(r.SampleEnergyJ) && r.Launches > 0 {
		obsBuilder{&out, prov + "-power-samples", PlanScope}.add("sample_energy", "J", r.SampleEnergyJ/float64(r.Launches))
	}
	return out, r.GPUS, nil
}

// correctThermal applies the leakage model to r (ThermalFit.Factor at
// r's mean power and end temperature): energy, its trials and interval,
// dynamic energy and power become those at the model's reference
// temperature, the measured energy is kept as energy_uncorrected, and the
// returned builder's method says so. Without a fit on this GPU (no
// warm-up ran: Warmup off) the prior slope of this plan's own power is
// used.
func correctThermal(b obsBuilder, m *Meter, p Protocol, r *ProtocolResult) obsBuilder {
	fit, ok := m.Thermal()
	if !ok {
		fit = ThermalFit{RefC: p.RefTempC, LoadW: r.MeanPowerW, Prior: true, SlopeWPerC: PriorLeakage * r.MeanPowerW}
	}
	f := fit.Factor(r.MeanPowerW, r.TemperatureC)
	b.add("energy_uncorrected", "J", r.EnergyPerLaunchJ)
	b.add("leakage_slope", "W/°C", fit.SlopeWPerC)
	b.add("temperature_ref", "°C", fit.RefC)
	b.add("leakage_prior", "bool", boolValue(fit.Prior))
	r.MeanPowerW -= fit.SlopeWPerC * (r.TemperatureC - fit.RefC)
	r.EnergyPerLaunchJ *= f
	r.EnergyJ *= f
	r.DynamicEnergyJ *= f
	r.Energy.Median *= f
	r.Energy.CILow *= f
	r.Energy.CIHigh *= f
	for i := range r.TrialEnergyJ {
		r.TrialEnergyJ[i] *= f
	}
	b.method += "-temperature-corrected"
	return b
}

// windowObservations are the observations every energy window makes.
func windowObservations(b obsBuilder, w *Window) {
	b.add("energy", "J", w.EnergyPerLaunchJ)
	b.add("power", "W", w.MeanPowerW)
	dyn := 0.0
	if w.MeanPowerW > 0 {
		// The run's share of the window's energy above idle.
		dyn = w.EnergyPerLaunchJ * (1 - w.IdlePowerW/w.MeanPowerW)
	}
	b.add("dynamic_energy", "J", dyn)
	b.add("idle_power", "W", w.IdlePowerW)
	b.add("energy_window", "s", w.WindowS)
	b.add("energy_runs", "count", float64(w.Launches))
	clocks := obsBuilder{b.out, b.method + "-side-readings", b.launch}
	clocks.add("sm_clock", "MHz", w.SMClockMHz)
	clocks.add("mem_clock", "MHz", w.MemClockMHz)
	clocks.add("temperature", "°C", w.TemperatureC)
	clocks.add("clock_event_reasons", "bitmask", float64(w.Reasons))
	clocks.add("power_throttle_time", "s", w.PowerThrottleS)
	clocks.add("thermal_throttle_time", "s", w.ThermalThrottleS)
	clocks.add("throttled", "bool", boolValue(w.Throttled))
}

// ClockObserver reads the SM and memory clocks, the temperature and the
// clock-event reasons once after the timed runs: what a plan measured
// without energy still records of the GPU's state.
type ClockObserver struct{}

// Name is "clocks".
func (ClockObserver) Name() string { return "clocks" }

// Provides lists sm_clock, mem_clock (MHz), temperature (°C) and
// clock_event_reasons.
func (ClockObserver) Provides() []Quantity {
	return []Quantity{
		{"sm_clock", "MHz", "SM clock after the timed runs"},
		{"mem_clock", "MHz", "memory clock after the timed runs"},
		{"temperature", "°C", "GPU temperature after the timed runs"},
		{"clock_event_reasons", "bitmask", "NVML clock-event reasons after the timed runs"},
	}
}

// Observe reads the sensors; readings a GPU lacks are left out.
func (ClockObserver) Observe(s *Session) (Observations, float64, error) {
	sens := s.Exec.Sensors()
	_, prov := s.Exec.Provenance()
	var out Observations
	b := obsBuilder{&out, prov + "-after-timing", PlanScope}
	if sm, mem, err := sens.ClocksMHz(); err == nil {
		b.add("sm_clock", "MHz", sm)
		b.add("mem_clock", "MHz", mem)
	}
	if t, err := sens.TemperatureC(); err == nil {
		b.add("temperature", "°C", t)
	}
	if r, err := sens.ClockEventReasons(); err == nil {
		b.add("clock_event_reasons", "bitmask", float64(r))
	}
	return out, 0, nil
}
