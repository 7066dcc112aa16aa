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

// Observations completes a valid result's typed observations (what
// measure.Run made: timing, energy, clocks — see measure.Quantities for
// names and units) with the compiled resources of each launch (registers,
// shared_memory, local_memory, max_threads_per_block; for a plan of one
// launch also of the whole plan, so metrics read them by name as before)
// and the run records compile_time (ms, the sum over the plan's kernels)
// and benchmark_time (ms). Metrics and objectives read the whole-plan
// view, Observations.Plan(). backendName ("cuda", "sim", "replay") names
// where the resources were read (method "<backend>-kernel-attributes").
func Observations(r *backend.Result, compileMs float64, backendName string) measure.Observations {
	out := append(measure.Observations(nil), r.Observations...)
	for i, l := range r.Launches {
		scopes := []int{i}
		if len(r.Launches) == 1 {
			scopes = append(scopes, measure.PlanScope)
		}
		for _, k := range scopes {
			set := func(name, unit string, v int) {
				out.Set(measure.Observation{Name: name, Unit: unit, Value: float64(v), Method: backendName + "-kernel-attributes", Launch: k})
			}
			set("registers", "count", l.Registers)
			set("shared_memory", "B", l.SharedStaticBytes)
			set("local_memory", "B", l.LocalBytes)
			set("max_threads_per_block", "count", l.MaxThreadsPerBlock)
		}
	}
	out.Set(measure.Observation{Name: "compile_time", Unit: "ms", Value: compileMs, Method: "gtune-compile-pool", Launch: measure.PlanScope})
	out.Set(measure.Observation{Name: "benchmark_time", Unit: "ms", Value: r.BenchmarkMs, Method: "gtune", Launch: measure.PlanScope})
	return out
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
// in at least one), sorted by the first score (points with equal scores
// in their order in ps). Two scores take O(n log n) (sorted by both, one
// sweep: a point is on the front when its second score is below every
// earlier one's, or it repeats the last point kept), so that a report of
// a run of 10^5 configurations is quick; more take O(n²).
func ParetoFront(ps []Point) []int {
	if front, ok := paretoFront2(ps); ok {
		return front
	}
	return paretoFrontAll(ps)
}

// paretoFrontAll is ParetoFront by comparing every pair of points.
func paretoFrontAll(ps []Point) []int {
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

// paretoFront2 is ParetoFront for points of two scores, none NaN; ok
// false for others.
func paretoFront2(ps []Point) ([]int, bool) {
	for _, p := range ps {
		if len(p.Scores) != 2 || math.IsNaN(p.Scores[0]) || math.IsNaN(p.Scores[1]) {
			return nil, false
		}
	}
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		pa, pb := ps[idx[a]].Scores, ps[idx[b]].Scores
		if pa[0] != pb[0] {
			return pa[0] < pb[0]
		}
		return pa[1] < pb[1]
	})
	var ids []int
	var last []float64
	for _, i := range idx {
		s := ps[i].Scores
		if last == nil || s[1] < last[1] || s[0] == last[0] && s[1] == last[1] {
			ids = append(ids, ps[i].ID)
			last = s
		}
	}
	return ids, true
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
