package tuner

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/stats"
	"github.com/gtune/gtune/store"
)

// ConfirmAlpha is the significance level at which confirm tells two
// configurations' objective values apart (stats.UTest).
const ConfirmAlpha = 0.05

// DefaultConfirmRounds bounds confirm's re-measurements of each
// configuration when Config.ConfirmRounds is 0.
const DefaultConfirmRounds = 10

// Confirmation is one of the best configurations re-measured at the end
// of a run (Config.Confirm): its values of the run's objective (in the
// objective's unit: the run's measurement, then each re-measurement),
// their median and its interval (stats.MedianCI at RepeatLevel), and the
// U test against the next configuration in the confirmed order (PNext;
// NaN for the last) with whether it is below ConfirmAlpha.
type Confirmation struct {
	Key                   string
	Values                []float64
	Median, Lo, Hi, Level float64
	PNext                 float64
	Significant           bool
}

// confirm re-measures the Config.Confirm best valid configurations by the
// run's objective (time, energy, EDP, a metric), interleaved (each once,
// in rank order, then again: ABAB, so that a drift of the GPU falls on
// all alike), until each differs significantly from the next in the
// order of their medians or ConfirmRounds rounds are done, and sets
// Summary.Confirmed. The re-measurements are stored as repeats of each
// configuration's evaluation. Errors: the database's.
func (r *run) confirm() error {
	k, obj := r.c.Confirm, r.c.Objective
	cands := r.bestValid(k)
	if len(cands) < 2 {
		r.sum.ConfirmNote = fmt.Sprintf("--confirm %d: the run has %d valid configuration(s) by %s; nothing to tell apart, nothing re-measured", k, len(cands), obj.Name)
		return nil
	}
	rounds := r.c.ConfirmRounds
	if rounds <= 0 {
		rounds = DefaultConfirmRounds
	}
	var cs []*confirming
	for _, o := range cands {
		c, err := r.confirming(o)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	// wanted says whether c takes another re-measurement: at most
	// rounds of them beyond its first measurement, stored ones counted.
	wanted := func(c *confirming) bool { return len(c.values) < 1+rounds }
	done := func() bool {
		if !slices.ContainsFunc(cs, wanted) {
			return true
		}
		for _, c := range cs {
			if len(c.values) < 3 {
				return false // the U test needs a few values each
			}
		}
		return settled(cs, func(c *confirming) []float64 { return c.values }, obj)
	}
	measuring := !done()
	if measuring {
		if err := r.prepare(); err != nil {
			return err
		}
		for _, c := range cs {
			c.plan = r.planAgain(c.o, r.request)
		}
	}
	byEval := map[*Evaluation]*confirming{}
	for _, c := range cs {
		byEval[c.o] = c
	}
	measured := 0
	took := func(a again, out executor.Outcome) error {
		ok, err := r.confirmed(byEval[a.o], out)
		if ok {
			measured++
		}
		return err
	}
	for round := 0; measuring && round < rounds && r.ctx.Err() == nil && !done(); round++ {
		// Each once, in rank order: ABAB over the rounds.
		var as []again
		for _, c := range cs {
			if c.plan != nil && wanted(c) {
				as = append(as, again{o: c.o, plan: c.plan, repeat: c.next})
				c.next++
			}
		}
		if len(as) == 0 {
			break // none can be measured (a plan or compilation failed)
		}
		if err := r.measureAgain("confirmation", as, took); err != nil {
			return err
		}
	}
	r.confirmations(cs, measured)
	return nil
}

// bestValid are the k best valid configurations of the run by its
// objective, best first.
func (r *run) bestValid(k int) []*Evaluation {
	obj := r.c.Objective
	var cands []*Evaluation
	for _, o := range r.sum.Evaluations {
		if o.Valid() && !math.IsNaN(o.Value) && !math.IsInf(obj.Score(o.Value), 0) {
			cands = append(cands, o)
		}
	}
	slices.SortStableFunc(cands, func(a, b *Evaluation) int {
		return cmp.Compare(obj.Score(a.Value), obj.Score(b.Value))
	})
	if len(cands) > k {
		cands = cands[:k]
	}
	return cands
}

// confirming is one configuration confirm re-measures: its evaluation
// and stored id, its plan, its objective's values so far, the number of
// its next repeat and how many values came from the database.
type confirming struct {
	o      *Evaluation
	id     int64
	plan   *backend.Plan
	values []float64
	next   int
	stored int
}

// confirming starts o's confirmation from what the database holds: the
// repeats stored already (an earlier confirmation, a run with --repeat)
// are its samples, so a re-run continues from them, numbering the new
// repeats after them, and does not measure what it holds. Errors: the
// database's.
func (r *run) confirming(o *Evaluation) (*confirming, error) {
	id := o.evalID
	if id == 0 {
		id = o.storedID
	}
	c := &confirming{o: o, id: id, values: []float64{o.Value}, next: max(1, r.c.Repeat)}
	if id == 0 {
		return c, nil
	}
	reps, err := r.c.DB.Repeats(id)
	if err != nil || len(reps) == 0 {
		return c, err
	}
	reps = withFirst(reps, store.Repeat{Status: string(o.Status), Observations: o.Observations})
	c.next = max(c.next, reps[len(reps)-1].Repeat+1)
	if vs := r.objectiveValues(reps, r.c.Space.Values(o.Index), r.c.Objective); len(vs) > 0 {
		c.values = vs
	}
	c.stored = len(c.values)
	return c, nil
}

// confirmed adds out, a re-measurement of c, to c's values and stores it
// as a repeat. It reports whether out gave a value: not where it was not
// measured (a slot's failure, a failure) or did not observe the
// objective. Errors: the database's.
func (r *run) confirmed(c *confirming, out executor.Outcome) (bool, error) {
	if _, ok := repeatTime(out); !ok {
		return false, nil
	}
	obs := objective.Observations(out.Result, 0, r.sum.Device.Backend).Plan()
	scaled := r.onFirstScale(obs, out.Slot)
	metrics, _ := r.sub.metrics(scaled, r.c.Space.Values(c.o.Index))
	v, ok := r.c.Objective.Value(scaled, metrics)
	if !ok {
		return false, nil
	}
	c.values = append(c.values, v)
	if c.id == 0 {
		return true, nil
	}
	rec := store.Repeat{Repeat: out.Trial.Repeat, GPU: out.GPU, Status: string(out.Result.Status), Observations: obs}
	return true, r.c.DB.AddRepeats(c.id, []store.Repeat{rec})
}

// confirmations sets Summary.Confirmed from cs, in the order of their
// medians, each with its interval and the U test against the next, and
// the note of how many stored measurements were counted beside the
// measured new ones.
func (r *run) confirmations(cs []*confirming, measured int) {
	obj := r.c.Objective
	stored := 0
	for _, c := range cs {
		stored += c.stored
	}
	if stored > 0 {
		r.sum.ConfirmNote = fmt.Sprintf("confirm: %d stored measurements of these configurations counted, %d new", stored, measured)
	}
	slices.SortStableFunc(cs, func(a, b *confirming) int {
		return cmp.Compare(obj.Score(measure.Median(a.values)), obj.Score(measure.Median(b.values)))
	})
	for i, c := range cs {
		iv, _ := stats.MedianCI(c.values, RepeatLevel)
		cf := Confirmation{Key: c.o.Key, Values: c.values, Median: iv.Median, Lo: iv.Lo, Hi: iv.Hi, Level: iv.Level, PNext: math.NaN()}
		if i+1 < len(cs) {
			if p, err := stats.UTest(c.values, cs[i+1].values); err == nil {
				cf.PNext, cf.Significant = p, p < ConfirmAlpha
			}
		}
		r.sum.Confirmed = append(r.sum.Confirmed, cf)
	}
}

// settled says whether every configuration of cs, in the order of their
// medians' scores under obj, differs significantly from the next
// (stats.UTest below ConfirmAlpha).
func settled[C any](cs []C, values func(C) []float64, obj objective.Objective) bool {
	order := slices.Clone(cs)
	slices.SortStableFunc(order, func(a, b C) int {
		return cmp.Compare(obj.Score(measure.Median(values(a))), obj.Score(measure.Median(values(b))))
	})
	for i := 0; i+1 < len(order); i++ {
		p, err := stats.UTest(values(order[i]), values(order[i+1]))
		if err != nil || p >= ConfirmAlpha {
			return false
		}
	}
	return true
}

// confirmSetting is the run's record of the confirm policy.
func confirmSetting(k, rounds int, objective string) string {
	return fmt.Sprintf("the best %d by %s re-measured interleaved (ABAB) up to %d rounds, until each differs from the next (Mann-Whitney U, p < %g)", k, objective, rounds, ConfirmAlpha)
}
