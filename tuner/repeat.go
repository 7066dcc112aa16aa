package tuner

import (
	"cmp"
	"slices"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
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
// configuration is what it says).
func medianRepeat(outs []executor.Outcome) executor.Outcome {
	type timed struct {
		t float64
		i int
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
	// Stable: equal times stay in repeat order.
	slices.SortStableFunc(v, func(a, b timed) int { return cmp.Compare(a.t, b.t) })
	return outs[v[(len(v)-1)/2].i]
}

// repeatRecords are the repeats of p for the store, in repeat order, the
// metrics they give the evaluation (the interval of the median time,
// stats.MedianCI at RepeatLevel, and the number of repeats) and the
// objective's value of each valid repeat.
func (r *run) repeatRecords(p *pending) ([]store.Repeat, map[string]float64, []float64) {
	outs := slices.Clone(p.outs)
	slices.SortStableFunc(outs, func(a, b executor.Outcome) int { return a.Trial.Repeat - b.Trial.Repeat })
	var recs []store.Repeat
	var times, values []float64
	for _, o := range outs {
		rec := store.Repeat{Repeat: o.Trial.Repeat, GPU: o.GPU}
		switch {
		case o.Err != nil:
			rec.Status = string(backend.StatusRuntimeFailed)
		case o.Result != nil:
			rec.Status = string(o.Result.Status)
			rec.Observations = objective.Observations(o.Result, 0, r.sum.Device.Backend).Plan()
		}
		if t, ok := repeatTime(o); ok {
			times = append(times, t)
			metrics, _ := r.sub.metrics(rec.Observations, p.cfg)
			if v, ok := r.c.Objective.Value(rec.Observations, metrics); ok {
				values = append(values, v)
			}
		}
		recs = append(recs, rec)
	}
	m := map[string]float64{"repeats": float64(len(outs))}
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
	var times []float64
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
