package measure

import (
	"fmt"
	"sort"
	"time"
)

// IntegrateSamples is the energy (J) between t0 and t1 from power samples
// (the sample-buffer method): the trapezoidal integral of the samples,
// linearly interpolated, over [t0, t1]. samples must be in time order and
// cover the interval (first at or before t0, last at or after t1).
//
// It serves kernels and windows shorter than the energy counter's update
// period: on an H100 the buffer holds a sample every 20 ms for about 2.4 s
// (read it at least every second, see SampleBuffer). Error model: the
// samples are the driver's averages over their spacing h, so a window
// misses at most one sample's worth at each end, ≤ 2·h·|ΔP| / (P·(t1−t0))
// relative, plus the sensor's own gain error; for a steady load of a
// whole number of samples the integral is exact.
//
// Errors: fewer than two samples, t1 before t0, or samples that do not
// cover [t0, t1].
func IntegrateSamples(samples []PowerSample, t0, t1 time.Time) (float64, error) {
	if len(samples) < 2 {
		return 0, fmt.Errorf("measure: IntegrateSamples: %d samples, need at least 2", len(samples))
	}
	if t1.Before(t0) {
		return 0, fmt.Errorf("measure: IntegrateSamples: interval ends (%v) before it starts (%v)", t1, t0)
	}
	first, last := samples[0].At, samples[len(samples)-1].At
	if first.After(t0) || last.Before(t1) {
		return 0, fmt.Errorf("measure: IntegrateSamples: samples cover %v..%v, not the interval %v..%v",
			first.Format(time.StampMicro), last.Format(time.StampMicro), t0.Format(time.StampMicro), t1.Format(time.StampMicro))
	}
	at := func(i int, t time.Time) float64 { // power at t on segment i..i+1
		a, b := samples[i], samples[i+1]
		span := b.At.Sub(a.At).Seconds()
		if span <= 0 {
			return b.W
		}
		return a.W + (b.W-a.W)*t.Sub(a.At).Seconds()/span
	}
	e := 0.0
	for i := 0; i+1 < len(samples); i++ {
		a, b := samples[i].At, samples[i+1].At
		lo, hi := a, b
		if lo.Before(t0) {
			lo = t0
		}
		if hi.After(t1) {
			hi = t1
		}
		if !hi.After(lo) {
			continue
		}
		e += (at(i, lo) + at(i, hi)) / 2 * hi.Sub(lo).Seconds()
	}
	return e, nil
}

// SampleBuffer collects power samples from repeated reads of a driver's
// bounded sample buffer, dropping the ones already seen, so a window
// longer than the buffer's depth (about 2.4 s on an H100) is covered when
// Read is called at least once per depth (gtune reads every second).
type SampleBuffer struct {
	s       Sensors
	last    time.Time
	Samples []PowerSample
}

// NewSampleBuffer starts collecting samples after since.
func NewSampleBuffer(s Sensors, since time.Time) *SampleBuffer {
	return &SampleBuffer{s: s, last: since}
}

// Read appends the samples taken since the previous read.
func (b *SampleBuffer) Read() error {
	got, err := b.s.PowerSamples(b.last)
	if err != nil {
		return err
	}
	sort.Slice(got, func(i, j int) bool { return got[i].At.Before(got[j].At) })
	for _, p := range got {
		if p.At.After(b.last) {
			b.Samples = append(b.Samples, p)
			b.last = p.At
		}
	}
	return nil
}
