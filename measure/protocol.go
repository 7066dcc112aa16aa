package measure

import (
	"math"
	"time"
)

// ProtocolResult is what RunProtocol measured.
type ProtocolResult struct {
	// Window spans all trials: from the first trial's starting counter
	// update to the last trial's ending one. Its EnergyPerLaunchJ is the
	// median of the trials.
	Window
	TrialEnergyJ []float64 // energy per launch of each trial, J
	TrialPowerW  []float64 // mean power of each trial, W
	Energy       TrialStats
	TrialS       float64 // length of one trial, s
	WarmupS      float64 // warm-up before the trials (0: none), s
	WarmupSteady bool    // the temperature slope fell below the threshold
	// Steady says whether the GPU was at a thermal steady state by the
	// end of this measurement (HeatLog.Steady over the Meter's log, this
	// measurement's readings included); false without a log.
	Steady bool
	// Fit is the leakage model fitted on the warm-up (ThermalModel and a
	// warm-up ran); nil otherwise.
	Fit  *ThermalFit
	GPUS float64 // time the GPU was kept busy, warm-up included, s
	// SampleEnergyJ is the sample-buffer integral (IntegrateSamples) over
	// the same span as EnergyJ, a cross-check; NaN when the driver has no
	// sample buffer.
	SampleEnergyJ float64
}

// RunProtocol measures the energy per launch of a load with repeated
// trials cut from one continuous back-to-back run (the default method):
//
//  1. warm up (when p.Warmup) until the temperature's least-squares slope
//     over the last WarmupWindow is below WarmupSlope, or WarmupMax;
//  2. keep running through two counter updates, so the sensor's lag (up
//     to one period) is filled with this load's power, and mark the second;
//  3. every m update periods mark a trial: its mean power is the counter
//     difference over m update periods, the period being the median gap
//     between consecutive updates pooled in p.periods with this run's
//     (PeriodEstimate says why not the CPU time between the trial's own
//     marks), m from WindowLength(Period, Edge, Target, 1) and at least
//     two launches;
//  4. stop after MinTrials once the bootstrap interval's half-width is
//     under Target, or after MaxTrials; synchronise;
//  5. energy per launch of a trial = its mean power × GPU time per launch
//     (the launches' event time / launches, idle gaps included).
//
// Because the load never stops between marks, no idle tail needs
// correcting and a trial is as short as one update period. Error model
// per trial: ±2·Edge/T from the update instants plus the load's own power
// fluctuation; the trials' spread measures both, and the interval bounds
// the median. idleW gives DynamicEnergyJ. Power samples are read every
// second while it runs (the H100's buffer holds 2.4 s). A Load failure
// is an *ErrWork.
func RunProtocol(c Clock, s Sensors, l Load, idleW float64, p Protocol) (*ProtocolResult, error) {
	p = p.WithDefaults()
	res := &ProtocolResult{SampleEnergyJ: math.NaN()}
	res.IdlePowerW = idleW
	if err := l.Start(); err != nil {
		return nil, &ErrWork{err}
	}
	tStart := c.Now()
	finished := false
	defer func() {
		if !finished {
			l.Finish()
		}
	}()
	sb := NewSampleBuffer(s, tStart.Add(-time.Millisecond))
	haveSamples := sb.Read() == nil
	lastRead := tStart
	step := func() error {
		if err := l.Pump(); err != nil {
			return &ErrWork{err}
		}
		if haveSamples && c.Now().Sub(lastRead) >= time.Second {
			haveSamples = sb.Read() == nil
			lastRead = c.Now()
		}
		c.Sleep(p.Poll)
		return nil
	}

	// 1. Warm-up. Under ThermalModel each counter period's power is
	// kept with the temperature last read, for the leakage fit.
	if p.Warmup || p.Settle {
		fit, err := warmUp(c, s, p, res, tStart, step)
		if err != nil {
			return nil, err
		}
		res.WarmupS = c.Now().Sub(tStart).Seconds()
		res.Fit = fit
	}

	// 2. Lead-in: two updates.
	prev, err := s.EnergyMJ()
	if err != nil {
		return nil, err
	}
	var mark CounterReading
	// gaps are the times between consecutive updates seen in this run; a
	// gap much longer than the prior period spans a missed update.
	var gaps []float64
	var lastSeen time.Time
	seenUpdate := func(now time.Time) {
		if !lastSeen.IsZero() {
			if g := now.Sub(lastSeen); g < p.Period*3/2 {
				gaps = append(gaps, g.Seconds())
			}
		}
		lastSeen = now
	}
	deadline := c.Now().Add(3 * time.Second)
	for seen := 0; seen < 2; {
		v, err := s.EnergyMJ()
		if err != nil {
			return nil, err
		}
		if v != prev {
			seen++
			prev = v
			mark = CounterReading{At: c.Now(), MJ: v}
			seenUpdate(mark.At)
			continue
		}
		if c.Now().After(deadline) {
			return nil, errNoUpdate
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	m := int(WindowLength(p.Period, p.Edge, p.Target, 1) / p.Period)
	if p.LaunchS > 0 {
		m = max(m, int(math.Ceil(2*p.LaunchS/p.Period.Seconds())))
	}
	first := mark
	ex := startExtras(c, s)

	// 3–4. Trials.
	count := 0
	var trialMJ []uint64 // counter difference of each trial, mJ
	trialPowers := func() {
		per := p.period(gaps)
		res.TrialPowerW = res.TrialPowerW[:0]
		for _, e := range trialMJ {
			res.TrialPowerW = append(res.TrialPowerW, float64(e)/1000/(float64(m)*per))
		}
	}
	deadline = c.Now().Add(time.Duration(m*p.MaxTrials+10) * p.Period * 3)
	for done := false; !done; {
		v, err := s.EnergyMJ()
		if err != nil {
			return nil, err
		}
		if v != prev {
			now := c.Now()
			prev = v
			count++
			seenUpdate(now)
			if count == m {
				trialMJ = append(trialMJ, v-mark.MJ)
				trialPowers()
				mark = CounterReading{At: now, MJ: v}
				count = 0
				done = p.Done(res.TrialPowerW)
			}
			continue
		}
		if c.Now().After(deadline) {
			return nil, errNoUpdate
		}
		ex.poll()
		if err := step(); err != nil {
			return nil, err
		}
	}
	if p.periods != nil {
		p.periods.Add(gaps...)
		gaps = nil // now in the pool
	}
	trialPowers()
	if haveSamples {
		haveSamples = sb.Read() == nil
	}
	finished = true
	n, busy, err := l.Finish()
	if err != nil {
		return nil, &ErrWork{err}
	}
	res.GPUS = c.Now().Sub(tStart).Seconds()
	res.Extras = ex.finish()
	if p.heat != nil {
		if !math.IsNaN(res.TemperatureC) && res.TemperatureC > 0 {
			p.heat.add(res.GPUS, res.TemperatureC)
		}
		p.heat.advance(res.GPUS)
		res.Steady = p.heat.steadyNow(0)
	}
	// 5. Energy per launch.
	perLaunch := busy.Seconds() / float64(max(n, 1))
	res.TrialS = float64(m) * p.Period.Seconds()
	for _, w := range res.TrialPowerW {
		res.TrialEnergyJ = append(res.TrialEnergyJ, w*perLaunch)
	}
	res.Energy = p.Summarize(res.TrialEnergyJ)
	res.Start, res.End = first, mark
	res.WindowS = mark.At.Sub(first.At).Seconds()
	res.BusyS = busy.Seconds()
	res.EnergyJ = float64(mark.MJ-first.MJ) / 1000
	res.Launches = int(math.Round(res.WindowS / math.Max(perLaunch, 1e-12)))
	if res.WindowS > 0 {
		res.MeanPowerW = res.EnergyJ / res.WindowS
	}
	res.EnergyPerLaunchJ = res.Energy.Median
	res.DynamicEnergyJ = res.EnergyJ - idleW*res.WindowS
	if haveSamples {
		if e, err := IntegrateSamples(sb.Samples, first.At, mark.At); err == nil {
			res.SampleEnergyJ = e
		}
	}
	return res, nil
}

type noUpdateError struct{}

func (noUpdateError) Error() string { return "energy counter stopped updating during the run" }

var errNoUpdate error = noUpdateError{}

// warmUp runs the load until the temperature is steady (RunProtocol's
// step 1): the least-squares slope over the last WarmupWindow under
// WarmupSlope, or WarmupMax. Under Settle the test is the Meter's
// HeatLog with ThermalSteady's parameters, the readings of the
// measurements before this one included: a GPU the run has already
// brought to a steady state warms up no further. Every reading goes on
// the log. Under ThermalModel it returns the leakage fit of the warm-up.
func warmUp(c Clock, s Sensors, p Protocol, res *ProtocolResult, tStart time.Time, step func() error) (*ThermalFit, error) {
	if p.Settle && p.heat != nil && p.heat.steadyNow(0) {
		res.WarmupSteady = true
		return nil, nil
	}
	var ts, temps []float64
	var periods []thermalPeriod
	fit := thermalModel(p.Thermal)
	lastMJ, haveMJ := uint64(0), false
	next := tStart
	for {
		now := c.Now()
		el := now.Sub(tStart)
		if fit && len(temps) > 0 {
			if v, err := s.EnergyMJ(); err == nil {
				if haveMJ && v != lastMJ {
					periods = append(periods, thermalPeriod{powerW: float64(v-lastMJ) / 1000 / p.Period.Seconds(), tempC: temps[len(temps)-1]})
				}
				lastMJ, haveMJ = v, true
			}
		}
		if !now.Before(next) {
			next = now.Add(100 * time.Millisecond)
			v, err := s.TemperatureC()
			if err != nil {
				break // no thermometer: nothing to wait for
			}
			ts = append(ts, el.Seconds())
			temps = append(temps, v)
			if p.heat != nil {
				p.heat.add(el.Seconds(), v)
			}
			if p.Settle && p.heat != nil {
				if p.heat.steadyNow(el.Seconds()) {
					res.WarmupSteady = true
					break
				}
			} else if el >= p.WarmupWindow {
				k := 0
				for k < len(ts) && ts[k] < el.Seconds()-p.WarmupWindow.Seconds() {
					k++
				}
				if math.Abs(Slope(ts[k:], temps[k:])) < p.WarmupSlope {
					res.WarmupSteady = true
					break
				}
			}
			if el >= p.WarmupMax {
				break
			}
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	if fit && len(temps) > 0 {
		// The first counter period may hold idle time before the
		// load; the next two its ramp and the sensor's lag.
		f := fitThermal(periods, p.RefTempC, 3)
		return &f, nil
	}
	return nil, nil
}
