package spec

import (
	"fmt"
	"math"
	"time"

	"github.com/gtune/gtune/measure"
)

// Bounds of a measurement section beyond those of spec.go (maxIterations,
// maxEnergyWindowS): like those, a larger value is a typo, not a plan.
const (
	maxTimeoutS       = 3600 // a configuration's time limit
	maxTrials         = 1000 // energy trials per configuration
	maxWarmupS        = 600  // the longest warm-up
	maxWarmupSlopeCps = 100  // °C/s: no GPU warms faster
	maxRefTempC       = 150  // °C: no GPU runs hotter
)

// CheckMeasurement checks every number and name of a measurement
// section, whatever file it is in: a spec's Gtune.Measurement or a
// workload's measurement section (one schema, one set of bounds). field
// gives a field's name as the file spells it, from its name in
// RawMeasurement (e.g. "EnergyWindowSeconds"). Every number must be
// finite and within its bounds: Iterations 1-100000 (nil: the default),
// EnergyWindowSeconds 0-60 s, TimeoutSeconds 0-3600 s, Trials and
// MinTrials 0-1000 (MinTrials at most Trials: resolveProtocol), TargetCI and CVFlag in
// [0, 1), WarmupSlope 0-100 °C/s, WarmupMaxSeconds 0-600 s (0: the
// default); Observers must be registered (measure.NewObserver). Errors: a
// *Error naming file and field, the first problem found.
func CheckMeasurement(file string, field func(name string) string, r *RawMeasurement) error {
	bad := func(name, format string, a ...any) error {
		return &Error{File: file, Field: field(name), Msg: fmt.Sprintf(format, a...)}
	}
	if r.Iterations != nil && (*r.Iterations < 1 || *r.Iterations > maxIterations) {
		return bad("Iterations", "%d: must be between 1 and %d", *r.Iterations, maxIterations)
	}
	for _, f := range []struct {
		name     string
		v, max   float64
		unit, is string
	}{
		{"EnergyWindowSeconds", r.EnergyWindowSeconds, maxEnergyWindowS, " s", "0 (the default, " + measure.DefaultEnergyWindow.String() + ")"},
		{"TimeoutSeconds", r.TimeoutSeconds, maxTimeoutS, " s", "0 (the default, " + DefaultTimeout.String() + ")"},
		{"WarmupSlope", r.WarmupSlope, maxWarmupSlopeCps, " °C/s", "0 (the default)"},
		{"WarmupMaxSeconds", r.WarmupMaxSeconds, maxWarmupS, " s", "0 (the default)"},
		{"ReferenceTemperature", r.ReferenceTemperature, maxRefTempC, " °C", "0 (the default, 60 °C)"},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > f.max {
			return bad(f.name, "%g: must be between %s and %g%s", f.v, f.is, f.max, f.unit)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"TargetCI", r.TargetCI}, {"CVFlag", r.CVFlag}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v >= 1 {
			return bad(f.name, "%g must be a fraction in (0, 1) (0: the default)", f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Trials", r.Trials}, {"MinTrials", r.MinTrials}} {
		if f.v < 0 || f.v > maxTrials {
			return bad(f.name, "%d: must be between 0 (the default) and %d", f.v, maxTrials)
		}
	}
	if err := measure.CheckThermal(r.Thermal); err != nil {
		return &Error{File: file, Field: field("Thermal"), Msg: err.Error()}
	}
	for i, name := range r.Observers {
		if _, err := measure.NewObserver(name); err != nil {
			return &Error{File: file, Field: fmt.Sprintf("%s[%d]", field("Observers"), i), Msg: err.Error(), Err: err}
		}
	}
	return nil
}

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
	if r.Thermal != "" {
		if err := measure.CheckThermal(r.Thermal); err != nil {
			return l.errf(field("Thermal"), "%v", err)
		}
		m.Protocol.Thermal = r.Thermal
	}
	if r.ReferenceTemperature > 0 {
		m.Protocol.RefTempC = r.ReferenceTemperature
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
