// Package objective turns a backend result into named observations, evaluates
// the user's metrics (expressions over observations, parameters and
// constants) and orders configurations by the chosen objective.
package objective

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/spec"
)

// Built-in objective names. Units: time ms (mean of the timed launches, as
// in Kernel Tuner caches), energy J per launch, power W (mean over the
// energy window), edp J·s (energy per launch × time per launch).
const (
	Time   = "time"
	Energy = "energy"
	Power  = "power"
	EDP    = "edp"
)

// Builtins lists the built-in objectives.
var Builtins = []string{Time, Energy, Power, EDP}

// Objective is what a tuning run optimises.
type Objective struct {
	Name     string
	Maximize bool
	Unit     string
}

// Score maps a value to a number where lower is better, so strategies never
// need to know the direction.
func (o Objective) Score(v float64) float64 {
	if o.Maximize {
		return -v
	}
	return v
}

// Direction is "maximize" or "minimize".
func (o Objective) Direction() string {
	if o.Maximize {
		return "maximize"
	}
	return "minimize"
}

// FromSpec resolves the spec's objective (name, direction and unit).
func FromSpec(s *spec.Spec) Objective {
	o := Objective{Name: s.Objective, Maximize: s.ObjectiveMaximize}
	switch s.Objective {
	case Time:
		o.Unit = "ms"
	case Energy:
		o.Unit = "J"
	case Power:
		o.Unit = "W"
	case EDP:
		o.Unit = "J·s"
	default:
		for _, m := range s.Metrics {
			if m.Name == s.Objective {
				o.Unit = m.Unit
			}
		}
	}
	return o
}

// Observations lists a valid result's observations by name (the names of
// spec.ObservationNames): time (mean), time_median, time_min, time_max,
// time_std (ms); registers (per thread), shared_memory (static, bytes per
// thread block), local_memory (bytes per thread), max_threads_per_block;
// compile_time and benchmark_time (ms); and, when an energy window ran,
// energy (J per launch), power (W), edp (J·s), sm_clock and mem_clock (MHz),
// temperature (°C). The measurement protocol adds time_cv, time_ci_low and
// time_ci_high (bootstrap 95 % interval of the median launch time, ms,
// measure.BootstrapCI with seed 1) always, and with energy energy_ci_low,
// energy_ci_high (J per launch), energy_cv, energy_trials, dynamic_energy
// (J per launch above idle), idle_power (W), energy_gpu_time (s),
// throttled and unstable (0/1); a window without trials counts as one
// trial (interval = value, CV 0). Each trial's energy per launch is
// recorded as energy_trial_1, energy_trial_2, ... (J): records for the
// results database, not names a metric may read.
func Observations(r *backend.Result, compileMs float64) map[string]float64 {
	st := measure.Summarize(r.TimesMs)
	tLo, tHi := measure.BootstrapCI(r.TimesMs, 2000, 0.95, 1)
	obs := map[string]float64{
		"time":                  st.Mean,
		"time_median":           st.Median,
		"time_min":              st.Min,
		"time_max":              st.Max,
		"time_std":              st.Std,
		"registers":             float64(r.Registers),
		"shared_memory":         float64(r.SharedStaticBytes),
		"local_memory":          float64(r.LocalBytes),
		"max_threads_per_block": float64(r.MaxThreadsPerBlock),
		"compile_time":          compileMs,
		"benchmark_time":        r.BenchmarkMs,
		"time_cv":               st.CV(),
		"time_ci_low":           tLo,
		"time_ci_high":          tHi,
	}
	if e := r.Energy; e != nil {
		obs[Energy] = e.EnergyPerLaunchJ
		obs[Power] = e.MeanPowerW
		obs[EDP] = e.EnergyPerLaunchJ * st.Mean / 1000
		obs["sm_clock"] = e.SMClockMHz
		obs["mem_clock"] = e.MemClockMHz
		obs["temperature"] = e.TemperatureC
		obs["energy_ci_low"], obs["energy_ci_high"] = e.EnergyPerLaunchJ, e.EnergyPerLaunchJ
		obs["energy_cv"], obs["energy_trials"] = e.CV, 1
		if len(e.TrialsJ) > 0 {
			obs["energy_ci_low"], obs["energy_ci_high"] = e.CILowJ, e.CIHighJ
			obs["energy_trials"] = float64(len(e.TrialsJ))
			for i, v := range e.TrialsJ {
				obs[fmt.Sprintf("energy_trial_%d", i+1)] = v
			}
		}
		// Per launch: the launch's share of the window's energy above idle.
		obs["dynamic_energy"] = 0
		if e.MeanPowerW > 0 {
			obs["dynamic_energy"] = e.EnergyPerLaunchJ * (1 - e.IdlePowerW/e.MeanPowerW)
		}
		obs["idle_power"] = e.IdlePowerW
		obs["energy_gpu_time"] = e.GPUSeconds
		obs["throttled"], obs["unstable"] = b2f(e.Throttled), b2f(e.Unstable)
	}
	return obs
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metricReads reports whether every name m reads is available, so that a
// metric over energy observations is skipped, not failed, in a time-only run.
func metricReads(m spec.Metric, have map[string]float64, env expr.Env) bool {
	for _, n := range m.Expr.Names() {
		if _, ok := have[n]; ok {
			continue
		}
		if _, ok := env.Lookup(n); ok {
			continue
		}
		return false
	}
	return true
}

type chainEnv struct {
	vals map[string]float64
	base expr.Env
}

func (c chainEnv) Lookup(name string) (expr.Value, bool) {
	if v, ok := c.vals[name]; ok {
		return expr.Float(v), true
	}
	return c.base.Lookup(name)
}

// MissingError lists the metrics a configuration has no value for,
// because their expression failed on its observations (e.g. a division
// by zero), with why.
type MissingError struct {
	Names   []string
	Reasons []string
}

func (e *MissingError) Error() string {
	parts := make([]string, len(e.Names))
	for i := range e.Names {
		parts[i] = e.Reasons[i]
	}
	return "metrics missing: " + strings.Join(parts, "; ")
}

// Metrics evaluates the spec's metrics in the order written, each seeing
// the observations, the configuration's parameters, the constants and the
// metrics before it. A metric that reads an observation not present (e.g.
// power without an energy window) is left out. A metric whose expression
// fails for these observations (a division by zero, a result that is no
// number) is missing for this configuration, and so is every later
// metric that reads it: the map holds the others and the error, a
// *MissingError, names the failed ones. The configuration stays valid
// unless its objective is a missing metric (Value then reports it
// absent).
func Metrics(ms []spec.Metric, obs map[string]float64, base expr.Env) (map[string]float64, error) {
	vals := make(map[string]float64, len(obs)+len(ms))
	for k, v := range obs {
		vals[k] = v
	}
	env := chainEnv{vals: vals, base: base}
	out := make(map[string]float64, len(ms))
	var missing *MissingError
	for _, m := range ms {
		if !metricReads(m, vals, base) {
			continue
		}
		reason := ""
		v, err := m.Expr.Eval(env)
		if err != nil {
			reason = fmt.Sprintf("metric %q (%s): %v", m.Name, m.Expr.Source(), err)
		} else if f, ok := v.Float(); !ok {
			reason = fmt.Sprintf("metric %q (%s) is %s, not a number", m.Name, m.Expr.Source(), v)
		} else {
			out[m.Name] = f
			vals[m.Name] = f
			continue
		}
		if missing == nil {
			missing = &MissingError{}
		}
		missing.Names = append(missing.Names, m.Name)
		missing.Reasons = append(missing.Reasons, reason)
	}
	if missing != nil {
		return out, missing
	}
	return out, nil
}

// Value picks the objective's value out of observations and metrics.
func (o Objective) Value(obs, metrics map[string]float64) (float64, bool) {
	if v, ok := obs[o.Name]; ok && !math.IsNaN(v) {
		return v, true
	}
	if v, ok := metrics[o.Name]; ok && !math.IsNaN(v) {
		return v, true
	}
	return 0, false
}

// Point is one configuration's position in objective space, for Pareto
// fronts: every coordinate is a score (lower is better).
type Point struct {
	ID     int
	Scores []float64
}

// ParetoFront returns the IDs of the points no other point dominates
// (another point dominates p when it is no worse in every score and better
// in at least one), sorted by the first score. O(n²), which is fine for the
// thousands of configurations one run holds.
func ParetoFront(ps []Point) []int {
	var front []Point
	for i, p := range ps {
		dominated := false
		for j, q := range ps {
			if i != j && dominates(q, p) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, p)
		}
	}
	sort.SliceStable(front, func(a, b int) bool { return front[a].Scores[0] < front[b].Scores[0] })
	ids := make([]int, len(front))
	for i, p := range front {
		ids[i] = p.ID
	}
	return ids
}

func dominates(q, p Point) bool {
	better := false
	for k := range p.Scores {
		if q.Scores[k] > p.Scores[k] {
			return false
		}
		if q.Scores[k] < p.Scores[k] {
			better = true
		}
	}
	return better
}
