package measure

import (
	"fmt"
	"math"
	"time"
)

// PulseLoad is a calibrated busy kernel for SensorCheck: Pulse starts a
// busy period of about d on the GPU and returns at once (the work runs
// asynchronously); Sync waits for all of it.
type PulseLoad interface {
	Pulse(d time.Duration) error
	Sync() error
}

// SensorCheckOptions set SensorCheck's schedule; zero values take the
// defaults in brackets.
type SensorCheckOptions struct {
	Idle        time.Duration // idle observation of the counter (1.5 s)
	PulsePeriod time.Duration // pulsed load period (100 ms)
	PulseBusy   time.Duration // busy part of each period (25 ms)
	Pulses      int           // number of periods (20)
	Steady      time.Duration // continuous load for the per-period spread (1.5 s)
	PollPower   time.Duration // polling period of the instantaneous power (5 ms)
	Poll        time.Duration // counter polling period (DefaultPoll)
}

func (o SensorCheckOptions) withDefaults() SensorCheckOptions {
	if o.Idle <= 0 {
		o.Idle = 1500 * time.Millisecond
	}
	if o.PulsePeriod <= 0 {
		o.PulsePeriod = 100 * time.Millisecond
	}
	if o.PulseBusy <= 0 {
		o.PulseBusy = 25 * time.Millisecond
	}
	if o.Pulses <= 0 {
		o.Pulses = 20
	}
	if o.Steady <= 0 {
		o.Steady = 1500 * time.Millisecond
	}
	if o.PollPower <= 0 {
		o.PollPower = 5 * time.Millisecond
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	return o
}

// SensorReport is what SensorCheck found. Times in s, energy in J (counter
// steps in mJ), power in W; a NaN is a reading the GPU does not offer.
type SensorReport struct {
	Device string `json:"device"`

	CounterPeriodS    float64 `json:"counter_period_s"`     // median gap between counter updates at idle
	CounterPeriodStdS float64 `json:"counter_period_std_s"` // spread of the gaps
	CounterStepMJ     float64 `json:"counter_step_mj"`      // median increment per update at idle
	CounterMinStepMJ  float64 `json:"counter_min_step_mj"`  // smallest increment seen
	CounterReadS      float64 `json:"counter_read_s"`       // median latency of one counter read
	IdlePowerW        float64 `json:"idle_power_w"`         // counter over the idle observation

	SamplesAvailable bool    `json:"samples_available"`
	SampleSpacingS   float64 `json:"sample_spacing_s"` // median spacing of buffered power samples
	SampleDepthS     float64 `json:"sample_depth_s"`   // time the buffer spans
	SampleCount      int     `json:"sample_count"`
	InstantAvailable bool    `json:"instant_available"`

	// Pulsed load: busy PulseBusyS of every PulsePeriodS for PulseSpanS.
	PulseBusyS         float64  `json:"pulse_busy_s"`
	PulsePeriodS       float64  `json:"pulse_period_s"`
	PulseSpanS         float64  `json:"pulse_span_s"`
	CounterEnergyJ     float64  `json:"counter_energy_j"` // counter difference over the span (reference)
	SampleEnergyJ      float64  `json:"sample_energy_j"`  // sample-buffer integral over the span
	PolledEnergyJ      float64  `json:"polled_energy_j"`  // mean polled instantaneous power × span
	SampleErrorRel     float64  `json:"sample_error_rel"` // SampleEnergyJ / CounterEnergyJ − 1
	PolledErrorRel     float64  `json:"polled_error_rel"` // PolledEnergyJ / CounterEnergyJ − 1
	PolledReadings     int      `json:"polled_readings"`
	SteadyPowerW       float64  `json:"steady_power_w"`        // continuous load, counter
	SteadyPeriodCV     float64  `json:"steady_period_cv"`      // CV of the power of single update periods under continuous load
	SteadyPeriodCVMean float64  `json:"steady_period_cv_mean"` // the same with every period taken as the mean period
	SteadySampleRel    float64  `json:"steady_sample_rel"`     // sample-buffer / counter energy under continuous load − 1
	SteadyPeriods      int      `json:"steady_periods"`        // update periods in the spread
	EdgeS              float64  `json:"edge_s"`                // uncertainty of an update instant used in the advice: poll + read
	TrialS             float64  `json:"trial_s"`               // WindowLength(period, edge, 1 %, 1)
	StandaloneS        float64  `json:"standalone_s"`          // WindowLength(period, edge, 1 %, 2)
	Advice             []string `json:"advice"`
}

// SensorCheck measures the energy sensors of one GPU (part 3 of the
// issue): the counter's update period and step at idle, the power-sample
// buffer's spacing and depth, and a pulsed load (busy PulseBusy of every
// PulsePeriod) measured three ways — counter difference, sample-buffer
// integral and mean of polled instantaneous power — over the same span,
// then a continuous load split into single update periods. Advice says
// which method to trust for which window length. Errors: the counter
// missing or not updating, or the load failing.
func SensorCheck(c Clock, s Sensors, l PulseLoad, o SensorCheckOptions) (*SensorReport, error) {
	o = o.withDefaults()
	r := &SensorReport{SampleEnergyJ: math.NaN(), PolledEnergyJ: math.NaN(), SampleErrorRel: math.NaN(), PolledErrorRel: math.NaN(),
		SampleSpacingS: math.NaN(), SampleDepthS: math.NaN(), SteadySampleRel: math.NaN()}

	// Idle: period, step, read latency.
	r0, err := AlignedRead(c, s, o.Poll)
	if err != nil {
		return nil, err
	}
	last := r0
	var gaps, steps, reads []float64
	for last.At.Sub(r0.At) < o.Idle {
		t := c.Now()
		v, err := s.EnergyMJ()
		reads = append(reads, c.Now().Sub(t).Seconds())
		if err != nil {
			return nil, err
		}
		if v != last.MJ {
			now := c.Now()
			gaps = append(gaps, now.Sub(last.At).Seconds())
			steps = append(steps, float64(v-last.MJ))
			last = CounterReading{At: now, MJ: v}
			continue
		}
		c.Sleep(o.Poll)
	}
	gs, ss := Summarize(gaps), Summarize(steps)
	r.CounterPeriodS, r.CounterPeriodStdS = gs.Median, gs.Std
	r.CounterStepMJ, r.CounterMinStepMJ = ss.Median, ss.Min
	r.CounterReadS = Median(reads)
	r.IdlePowerW = float64(last.MJ-r0.MJ) / 1000 / last.At.Sub(r0.At).Seconds()

	// Sample buffer: spacing and depth.
	if smp, err := s.PowerSamples(time.Time{}); err == nil && len(smp) > 1 {
		r.SamplesAvailable = true
		r.SampleCount = len(smp)
		var d []float64
		for i := 1; i < len(smp); i++ {
			d = append(d, smp[i].At.Sub(smp[i-1].At).Seconds())
		}
		r.SampleSpacingS = Median(d)
		r.SampleDepthS = smp[len(smp)-1].At.Sub(smp[0].At).Seconds()
	}
	_, ierr := s.InstantPowerW()
	r.InstantAvailable = ierr == nil

	// Pulsed load.
	r.PulseBusyS, r.PulsePeriodS = o.PulseBusy.Seconds(), o.PulsePeriod.Seconds()
	start, err := AlignedRead(c, s, o.Poll)
	if err != nil {
		return nil, err
	}
	sb := NewSampleBuffer(s, start.At.Add(-time.Second))
	_ = sb.Read()
	lastRead := c.Now()
	var polled []float64
	for i := 0; i < o.Pulses; i++ {
		slot := start.At.Add(time.Duration(i) * o.PulsePeriod)
		if d := slot.Sub(c.Now()); d > 0 {
			c.Sleep(d)
		}
		if err := l.Pulse(o.PulseBusy); err != nil {
			return nil, &ErrWork{err}
		}
		for next := slot.Add(o.PulsePeriod); c.Now().Before(next); {
			if w, err := s.InstantPowerW(); err == nil {
				polled = append(polled, w)
			}
			if r.SamplesAvailable && c.Now().Sub(lastRead) >= time.Second {
				_ = sb.Read()
				lastRead = c.Now()
			}
			c.Sleep(min(o.PollPower, next.Sub(c.Now())))
		}
	}
	if err := l.Sync(); err != nil {
		return nil, &ErrWork{err}
	}
	endAt := start.At.Add(time.Duration(o.Pulses) * o.PulsePeriod)
	if d := endAt.Sub(c.Now()); d > 0 {
		c.Sleep(d)
	}
	v, err := s.EnergyMJ()
	if err != nil {
		return nil, err
	}
	end, err := WaitUpdate(c, s, v, o.Poll, 2*time.Second)
	if err != nil {
		return nil, err
	}
	span := end.At.Sub(start.At).Seconds()
	r.PulseSpanS = span
	r.CounterEnergyJ = float64(end.MJ-start.MJ) / 1000
	if r.SamplesAvailable {
		c.Sleep(2 * time.Duration(r.SampleSpacingS*float64(time.Second))) // the sample covering end.At
		_ = sb.Read()
		if e, err := IntegrateSamples(sb.Samples, start.At, end.At); err == nil {
			r.SampleEnergyJ = e
			r.SampleErrorRel = e/r.CounterEnergyJ - 1
		}
	}
	r.PolledReadings = len(polled)
	if len(polled) > 0 {
		r.PolledEnergyJ = Summarize(polled).Mean * span
		r.PolledErrorRel = r.PolledEnergyJ/r.CounterEnergyJ - 1
	}

	// Continuous load split into update periods.
	if err := r.steady(c, s, l, o); err != nil {
		return nil, err
	}

	per := time.Duration(r.CounterPeriodS * float64(time.Second))
	edge := o.Poll + time.Duration(r.CounterReadS*float64(time.Second))
	r.EdgeS = edge.Seconds()
	r.TrialS = WindowLength(per, edge, 0.01, 1).Seconds()
	r.StandaloneS = WindowLength(per, edge, 0.01, 2).Seconds()
	r.Advice = advice(r)
	return r, nil
}

func (r *SensorReport) steady(c Clock, s Sensors, l PulseLoad, o SensorCheckOptions) error {
	t0 := c.Now()
	queued := t0
	pump := func() error {
		for queued.Sub(c.Now()) < 2*o.PulsePeriod {
			if err := l.Pulse(o.PulsePeriod); err != nil {
				return &ErrWork{err}
			}
			if queued.Before(c.Now()) {
				queued = c.Now()
			}
			queued = queued.Add(o.PulsePeriod)
		}
		return nil
	}
	prev, err := s.EnergyMJ()
	if err != nil {
		return err
	}
	sb := NewSampleBuffer(s, t0.Add(-time.Second))
	_ = sb.Read()
	var marks []CounterReading
	seen := 0
	for c.Now().Sub(t0) < o.Steady+2*o.PulsePeriod {
		if err := pump(); err != nil {
			return err
		}
		v, err := s.EnergyMJ()
		if err != nil {
			return err
		}
		if v != prev {
			prev = v
			seen++
			if seen >= 2 { // the first two periods fill the sensor's lag
				marks = append(marks, CounterReading{At: c.Now(), MJ: v})
			}
			continue
		}
		c.Sleep(o.Poll)
	}
	if err := l.Sync(); err != nil {
		return &ErrWork{err}
	}
	if len(marks) < 3 {
		return fmt.Errorf("energy counter moved %d times in %v of load", len(marks), o.Steady)
	}
	var pw []float64
	for i := 1; i < len(marks); i++ {
		pw = append(pw, float64(marks[i].MJ-marks[i-1].MJ)/1000/marks[i].At.Sub(marks[i-1].At).Seconds())
	}
	st := Summarize(pw)
	r.SteadyPeriods, r.SteadyPeriodCV = len(pw), st.CV()
	// The same with every period taken as the mean period (as
	// RunProtocol's trials): the spread without the read jitter.
	mean := marks[len(marks)-1].At.Sub(marks[0].At).Seconds() / float64(len(pw))
	var pn []float64
	for i := 1; i < len(marks); i++ {
		pn = append(pn, float64(marks[i].MJ-marks[i-1].MJ)/1000/mean)
	}
	r.SteadyPeriodCVMean = Summarize(pn).CV()
	a, b := marks[0], marks[len(marks)-1]
	ce := float64(b.MJ-a.MJ) / 1000
	r.SteadyPowerW = ce / b.At.Sub(a.At).Seconds()
	if r.SamplesAvailable {
		_ = sb.Read()
		if e, err := IntegrateSamples(sb.Samples, a.At, b.At); err == nil {
			r.SteadySampleRel = e/ce - 1
		}
	}
	return nil
}

func advice(r *SensorReport) []string {
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "n/a"
		}
		return fmt.Sprintf("%+.1f %%", 100*x)
	}
	var a []string
	if r.SamplesAvailable {
		a = append(a, fmt.Sprintf("window < %.0f ms (one counter update): sample buffer (%.0f ms samples, %.1f s deep; read at least every second), integrated over the CPU-timestamped kernel interval; pulsed load %s against the counter",
			1e3*r.CounterPeriodS, 1e3*r.SampleSpacingS, r.SampleDepthS, pct(r.SampleErrorRel)))
	} else {
		a = append(a, fmt.Sprintf("window < %.0f ms: no sample buffer on this GPU; lengthen the window to whole counter periods", 1e3*r.CounterPeriodS))
	}
	a = append(a, fmt.Sprintf("window ≥ %.0f ms: energy counter, trials cut at counter updates from one continuous run (%.0f ms per trial for ±1 %% alignment error; single-period power spread under steady load: CV %.2f %%, %.2f %% with the mean period)",
		1e3*r.CounterPeriodS, 1e3*r.TrialS, 100*r.SteadyPeriodCV, 100*r.SteadyPeriodCVMean))
	a = append(a, fmt.Sprintf("stand-alone window (idle before and after): counter with idle-tail correction, ≥ %.0f ms", 1e3*r.StandaloneS))
	if r.InstantAvailable {
		a = append(a, fmt.Sprintf("polled instantaneous power: display and progress only (pulsed load %s against the counter)", pct(r.PolledErrorRel)))
	}
	return a
}
