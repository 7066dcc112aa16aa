package spec

import (
	"time"

	"github.com/gtune/gtune/backend"
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
		m.Trials = r.Trials
		m.MinTrials = min(m.MinTrials, m.Trials)
	}
	if r.MinTrials < 0 {
		return l.errf(field("MinTrials"), "must not be negative")
	}
	if r.MinTrials > 0 {
		if r.MinTrials > m.Trials {
			return l.errf(field("MinTrials"), "%d is more than Trials (%d)", r.MinTrials, m.Trials)
		}
		m.MinTrials = r.MinTrials
	}
	for _, f := range []struct {
		name string
		v    float64
		dst  *float64
	}{{"TargetCI", r.TargetCI, &m.TargetCI}, {"CVFlag", r.CVFlag, &m.CVFlag}} {
		if f.v < 0 || f.v >= 1 {
			return l.errf(field(f.name), "%g must be a fraction in (0, 1) (0: the default)", f.v)
		}
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	if r.Warmup != nil {
		m.Warmup = *r.Warmup
	}
	if r.WarmupSlope < 0 {
		return l.errf(field("WarmupSlope"), "must not be negative")
	}
	if r.WarmupSlope > 0 {
		m.WarmupSlope = r.WarmupSlope
	}
	if r.WarmupMaxSeconds < 0 {
		return l.errf(field("WarmupMaxSeconds"), "must not be negative")
	}
	if r.WarmupMaxSeconds > 0 {
		m.WarmupMax = time.Duration(r.WarmupMaxSeconds * float64(time.Second))
	}
	return nil
}

// EnergyProtocol is the backend's form of the energy protocol.
func (m Measurement) EnergyProtocol() *backend.EnergyProtocol {
	return &backend.EnergyProtocol{
		Trials: m.Trials, MinTrials: m.MinTrials, TargetCI: m.TargetCI, CVFlag: m.CVFlag,
		Warmup: m.Warmup, WarmupSlope: m.WarmupSlope, WarmupMaxS: m.WarmupMax.Seconds(),
	}
}
