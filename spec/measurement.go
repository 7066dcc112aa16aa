package spec

import (
	"fmt"
	"time"

	"github.com/gtune/gtune/measure"
)

// resolveProtocol checks and applies the energy-protocol fields of
// Gtune.Measurement onto m (which holds the defaults). Errors name the
// field: a negative value, MinTrials above Trials, or a fraction
// (TargetCI, CVFlag) of 1 or more.
func resolveProtocol(l *loader, r *RawMeasurement, m *Measurement) error {
	field := func(name string) string { return "Gtune.Measurement." + name }
	if r.Trials < 0 {
		return l.errf(field("Trials"), "must not be negative")
	}
	if r.Trials > 0 {
		m.Protocol.MaxTrials = r.Trials
		m.Protocol.MinTrials = min(m.Protocol.MinTrials, m.Protocol.MaxTrials)
	}
	if r.MinTrials < 0 {
		return l.errf(field("MinTrials"), "must not be negative")
	}
	if r.MinTrials > 0 {
		if r.MinTrials > m.Protocol.MaxTrials {
			return l.errf(field("MinTrials"), "%d is more than Trials (%d)", r.MinTrials, m.Protocol.MaxTrials)
		}
		m.Protocol.MinTrials = r.MinTrials
	}
	for _, f := range []struct {
		name string
		v    float64
		dst  *float64
	}{{"TargetCI", r.TargetCI, &m.Protocol.Target}, {"CVFlag", r.CVFlag, &m.Protocol.CVFlag}} {
		if f.v < 0 || f.v >= 1 {
			return l.errf(field(f.name), "%g must be a fraction in (0, 1) (0: the default)", f.v)
		}
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	if r.Warmup != nil {
		m.Protocol.Warmup = *r.Warmup
	}
	if r.WarmupSlope < 0 {
		return l.errf(field("WarmupSlope"), "must not be negative")
	}
	if r.WarmupSlope > 0 {
		m.Protocol.WarmupSlope = r.WarmupSlope
	}
	if r.WarmupMaxSeconds < 0 {
		return l.errf(field("WarmupMaxSeconds"), "must not be negative")
	}
	if r.WarmupMaxSeconds > 0 {
		m.Protocol.WarmupMax = time.Duration(r.WarmupMaxSeconds * float64(time.Second))
	}
	for i, name := range r.Observers {
		if _, err := measure.NewObserver(name); err != nil {
			return l.errf(fmt.Sprintf("%s[%d]", field("Observers"), i), "%v", err)
		}
	}
	m.Observers = append([]string(nil), r.Observers...)
	return nil
}

// Request is the measurement of every configuration of this spec
// (measure.Request, with StateKey left to the plan's GPU settings).
// Energy is observed when Gtune.Measurement.Energy says so, else when
// the objective or a metric needs it; more than one trial selects the
// repeated-trials protocol.
func (s *Spec) Request() measure.Request {
	m := s.Measurement
	r := measure.Request{Iterations: m.Iterations, EnergyWindow: m.EnergyWindow, Energy: s.NeedsEnergy, Verify: s.verify != nil,
		Observers: append([]string(nil), m.Observers...)}
	if m.Energy != nil {
		r.Energy = *m.Energy
	}
	if m.Protocol.MaxTrials > 1 {
		p := m.Protocol
		r.Trials = &p
	}
	return r
}
