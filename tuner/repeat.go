package tuner

import (
	"cmp"
	"math"
	"slices"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/stats"
	"github.com/gtune/gtune/store"
)

// RepeatLevel is the confidence of the time interval of a configuration
// measured several times (Config.Repeat).
const RepeatLevel = 0.95

// repeatTime is a repeat's plan time (ms): the mean of its timed launches
// as the backend reported them (Result.TimesMs), NaN where it has none.
func repeatTime(o executor.Outcome) (float64, bool) {
	if o.Err != nil || o.Result == nil || o.Result.Status != backend.StatusValid || len(o.Result.TimesMs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, t := range o.Result.TimesMs {
		sum += t
	}
	return sum / float64(len(o.Result.TimesMs)), true
}

// medianRepeat is the outcome that stands for a configuration measured
// several times: the valid repeat of median time (the lower middle one of
// an even count: a measurement, whose energy and power go with its time),
// else the first failure (a repeat that failed ends the repeats, and the
// configuration is what it says). prior are the times (ms) of repeats
// measured by an earlier run (pending.prior): they count toward the
// median, and where it falls on one of them, the repeat of this run
// nearest to it in time stands for the configuration (the stored
// repeats keep only plan-level observations, not a Result).
func medianRepeat(outs []executor.Outcome, prior []float64) executor.Outcome {
	type timed struct {
		t float64
		i int // -1: a prior repeat
	}
	var v []timed
	for i, o := range outs {
		if t, ok := repeatTime(o); ok {
			v = append(v, timed{t, i})
		}
	}
	for _, o := range outs {
		if _, ok := repeatTime(o); !ok {
			return o
		}
	}
	for _, t := range prior {
		v = append(v, timed{t, -1})
	}
	// Stable: equal times stay in repeat order.
	slices.SortStableFunc(v, func(a, b timed) int { return cmp.Compare(a.t, b.t) })
	m := v[(len(v)-1)/2]
	if m.i >= 0 {
		return outs[m.i]
	}
	best := -1
	for k, x := range v {
		if x.i >= 0 && (best < 0 || math.Abs(x.t-m.t) < math.Abs(v[best].t-m.t)) {
			best = k
		}
	}
	return outs[v[best].i]
}

// priorTimes are the plan times (ms) of the valid stored repeats rs.
func priorTimes(rs []store.Repeat) []float64 {
	var ts []float64
	for _, r := range rs {
		if t, ok := r.Observations["time"]; ok && r.Status == string(backend.StatusValid) {
			ts = append(ts, t)
		}
	}
	return ts
}

// withFirst is rs, a configuration's stored repeats, with first (its
// evaluation's own measurement, as repeat 0) before them where they lack
// repeat 0: a run without --repeat keeps its measurement as the
// evaluation only, and repeats stored later (a confirmation) start at 1.
func withFirst(rs []store.Repeat, first store.Repeat) []store.Repeat {
	if len(rs) > 0 && rs[0].Repeat == 0 {
		return rs
	}
	first.Repeat = 0
	return append([]store.Repeat{first}, rs...)
}

// objectiveValues are the run's objective's values of the valid repeats
// rs of configuration cfg.
func (r *run) objectiveValues(rs []store.Repeat, cfg []expr.Value, obj objective.Objective) []float64 {
	var vs []float64
	for _, rec := range rs {
		if rec.Status != string(backend.StatusValid) {
			continue
		}
		metrics, _ := r.sub.metrics(rec.Observations, cfg)
		if v, ok := obj.Value(rec.Observations, metrics); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// fewerRepeats says whether the stored evaluation e of a configuration
// was measured less than this run's repeat policy asks (Config.Repeat
// repeats; with RepeatUntil, an interval of the median time still wider
// than asked and fewer than Repeat repeats), and if so returns its
// repeats as stored (a single measurement, stored without repeats,
// as repeat 0), which the run counts toward the policy. nil where e is
// to be reused as it is: the policy is met, or e is not valid (a
// failure is what it says), or the run repeats nothing. Errors: the
// database's.
func (r *run) fewerRepeats(e *store.Evaluation) ([]store.Repeat, error) {
	if r.c.Repeat <= 1 || r.c.Fresh || e.Status != string(backend.StatusValid) {
		return nil, nil
	}
	rs, err := r.c.DB.Repeats(e.ID)
	if err != nil {
		return nil, err
	}
	rs = withFirst(rs, store.Repeat{GPU: e.GPU, Status: e.Status, Observations: e.Observations})
	if len(rs) >= r.c.Repeat {
		return nil, nil
	}
	if r.c.RepeatUntil > 0 {
		if iv, err := stats.MedianCI(priorTimes(rs), RepeatLevel); err == nil && !iv.Short && iv.Median > 0 && (iv.Hi-iv.Lo)/2/iv.Median <= r.c.RepeatUntil {
			return nil, nil
		}
	}
	return rs, nil
}

// repeatRecords are the repeats of p for the store, in repeat order, the
// metrics they give the evaluation (the interval of the median time,
// stats.MedianCI at RepeatLevel, and the number of repeats) and the
// objective's value of each valid repeat.
func (r *run) repeatRecords(p *pending) ([]store.Repeat, map[string]float64, []float64) {
	outs := slices.Clone(p.outs)
	slices.SortStableFunc(outs, func(a, b executor.Outcome) int { return a.Trial.Repeat - b.Trial.Repeat })
	recs := slices.Clone(p.prior)
	times := priorTimes(p.prior)
	values := r.objectiveValues(p.prior, p.cfg, r.c.Objective)
	for _, o := range outs {
		rec := repeatOf(o, r.sum.Device.Backend)
		if t, ok := repeatTime(o); ok {
			times = append(times, t)
			metrics, _ := r.sub.metrics(rec.Observations, p.cfg)
			if v, ok := r.c.Objective.Value(rec.Observations, metrics); ok {
				values = append(values, v)
			}
		}
		recs = append(recs, rec)
	}
	m := map[string]float64{"repeats": float64(len(recs))}
	if iv, err := stats.MedianCI(times, RepeatLevel); err == nil {
		m["time_ci_low"], m["time_ci_high"], m["time_ci_level"] = iv.Lo, iv.Hi, iv.Level
	}
	return recs, m, values
}

// converged says whether p's repeats so far pin its median time down to
// Config.RepeatUntil: the interval of the median (stats.MedianCI at
// RepeatLevel, reached: not Short) has a half-width of at most
// RepeatUntil of the median. Never with a fixed number of repeats.
func (r *run) converged(p *pending) bool {
	if r.c.RepeatUntil <= 0 {
		return false
	}
	times := priorTimes(p.prior)
	for _, o := range p.outs {
		if t, ok := repeatTime(o); ok {
			times = append(times, t)
		}
	}
	iv, err := stats.MedianCI(times, RepeatLevel)
	if err != nil || iv.Short || iv.Median <= 0 {
		return false
	}
	return (iv.Hi-iv.Lo)/2/iv.Median <= r.c.RepeatUntil
}
