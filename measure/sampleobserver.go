package measure

import (
	"errors"
	"io"
	"time"
)

// PowerSampleObserver measures a plan's energy from the driver's
// power-sample buffer (nvmlDeviceGetSamples, NVML_TOTAL_POWER_SAMPLES)
// instead of the energy counter: the plan runs back to back for Window,
// and the samples over that span are integrated (IntegrateSamples). On
// GPUs whose power sensor lags the load (Kepler, Maxwell), the samples
// are corrected first with equation 6 of
// multi-kernel-autotuning-performance-energy.md (CorrectLag) when the
// request gives the sensor's time constant (Request.SensorLagS; the
// device database's SensorCapacitanceS). Asked for by name:
// Gtune.Measurement.Observers ["power-samples"].
type PowerSampleObserver struct {
	// Window is the back-to-back span; 0: 2 s. The buffer (about 2.4 s
	// deep on an H100) is read every 500 ms meanwhile.
	Window time.Duration
}

// Name is "power-samples".
func (*PowerSampleObserver) Name() string { return "power-samples" }

// Provides lists power_samples_energy (J per run of the plan) and
// power_samples_power (W).
func (*PowerSampleObserver) Provides() []Quantity {
	return []Quantity{
		{"power_samples_energy", "J", "energy of one run of the plan from the power-sample buffer (lag-corrected where the sensor lags)"},
		{"power_samples_power", "W", "mean of the sampled power over the window"},
	}
}

// Observe runs the window and integrates the samples.
func (o *PowerSampleObserver) Observe(s *Session) (Observations, float64, error) {
	x := s.Exec
	sens := x.Sensors()
	if sens == nil {
		return nil, 0, errors.New("no power sensor")
	}
	window := o.Window
	if window <= 0 {
		window = 2 * time.Second
	}
	clk := x.Clock()
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
	// The integral needs a sample at or before the start: wait for one.
	buf := NewSampleBuffer(sens, clk.Now().Add(-time.Second))
	for wait := clk.Now().Add(200 * time.Millisecond); ; clk.Sleep(5 * time.Millisecond) {
		if err := buf.Read(); err != nil {
			return nil, 0, err
		}
		if len(buf.Samples) > 0 || !clk.Now().Before(wait) {
			break
		}
	}
	t0 := clk.Now()
	if err := l.Start(); err != nil {
		return nil, 0, &ErrWork{err}
	}
	nextRead := t0.Add(500 * time.Millisecond)
	for clk.Now().Sub(t0) < window {
		if err := l.Pump(); err != nil {
			l.Finish()
			return nil, 0, &ErrWork{err}
		}
		if clk.Now().After(nextRead) {
			if err := buf.Read(); err != nil {
				l.Finish()
				return nil, 0, err
			}
			nextRead = clk.Now().Add(500 * time.Millisecond)
		}
		clk.Sleep(DefaultPoll)
	}
	n, busy, err := l.Finish()
	if err != nil {
		return nil, 0, &ErrWork{err}
	}
	t1 := t0.Add(busy)
	// The sample covering the end arrives up to one sample period later.
	deadline := clk.Now().Add(200 * time.Millisecond)
	for {
		if err := buf.Read(); err != nil {
			return nil, busy.Seconds(), err
		}
		if k := len(buf.Samples); k > 0 && !buf.Samples[k-1].At.Before(t1) || !clk.Now().Before(deadline) {
			break
		}
		clk.Sleep(10 * time.Millisecond)
	}
	samples := CorrectLag(buf.Samples, s.Request.SensorLagS)
	e, err := IntegrateSamples(samples, t0, t1)
	if err != nil {
		return nil, busy.Seconds(), err
	}
	_, prov := x.Provenance()
	method := prov + "-power-samples"
	if s.Request.SensorLagS > 0 {
		method += "-lag-corrected"
	}
	var out Observations
	b := obsBuilder{&out, method, PlanScope}
	b.add("power_samples_energy", "J", e/float64(max(n, 1)))
	if busy > 0 {
		b.add("power_samples_power", "W", e/busy.Seconds())
	}
	return out, busy.Seconds(), nil
}
