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
// configurations' times apart (stats.UTest).
const ConfirmAlpha = 0.05

// DefaultConfirmRounds bounds confirm's re-measurements of each
// configuration when Config.ConfirmRounds is 0.
const DefaultConfirmRounds = 10

// Confirmation is one of the best configurations re-measured at the end
// of a run (Config.Confirm): its times (ms: the run's measurement, then
// each re-measurement), their median and its interval
// (stats.MedianCI at RepeatLevel), and the U test against the next
// configuration in the confirmed order (PNext; NaN for the last) with
// whether it is below ConfirmAlpha.
type Confirmation struct {
	Key                   string
	Times                 []float64
	Median, Lo, Hi, Level float64
	PNext                 float64
	Significant           bool
}

// confirm re-measures the Config.Confirm best valid configurations by
// time, interleaved (each once, in rank order, then again: ABAB, so that
// a drift of the GPU falls on all alike), until each differs
// significantly from the next in the order of their medians or
// ConfirmRounds rounds are done, and sets Summary.Confirmed. The
// re-measurements are stored as repeats of each configuration's
// evaluation. Errors: the database's.
func (r *run) confirm() error {
	k := r.c.Confirm
	var cands []*Evaluation
	for _, o := range r.sum.Evaluations {
		if o.Valid() && !math.IsNaN(o.Observations["time"]) && o.Observations["time"] > 0 {
			cands = append(cands, o)
		}
	}
	slices.SortStableFunc(cands, func(a, b *Evaluation) int {
		return cmp.Compare(a.Observations["time"], b.Observations["time"])
	})
	if len(cands) > k {
		cands = cands[:k]
	}
	if len(cands) < 2 {
		return nil
	}
	type cand struct {
		o     *Evaluation
		id    int64
		plan  *backend.Plan
		times []float64
		next  int // next repeat number
	}
	var cs []*cand
	for _, o := range cands {
		cfg := r.c.Space.Values(o.Index)
		plan, err := r.sub.plan(cfg)
		if err != nil {
			continue
		}
		plan.Key, plan.Measure = o.Key, r.request
		plan.Measure.StateKey = plan.Settings.StateKey()
		cr := r.compile(plan)
		if cr.err != nil {
			continue
		}
		for i, b := range cr.bins {
			plan.Launches[i].Binary = b
		}
		id := o.evalID
		if id == 0 {
			id = o.storedID
		}
		first := max(1, r.c.Repeat)
		cs = append(cs, &cand{o: o, id: id, plan: plan, times: []float64{o.Observations["time"]}, next: first})
	}
	rounds := r.c.ConfirmRounds
	if rounds <= 0 {
		rounds = DefaultConfirmRounds
	}
	byTrial := map[int]*cand{}
	inflight := 0
	take := func() error {
		out := r.ex.Wait()
		inflight--
		c := byTrial[out.Trial.ID]
		delete(byTrial, out.Trial.ID)
		t, ok := repeatTime(out)
		if !ok {
			return nil // not measured (a slot's failure, a failure): no sample
		}
		c.times = append(c.times, t)
		rec := store.Repeat{Repeat: out.Trial.Repeat, GPU: out.GPU, Status: string(out.Result.Status),
			Observations: objective.Observations(out.Result, 0, r.sum.Device.Backend).Plan()}
		if c.id != 0 {
			return r.c.DB.AddRepeats(c.id, []store.Repeat{rec})
		}
		return nil
	}
	for round := 0; round < rounds && r.ctx.Err() == nil; round++ {
		for _, c := range cs {
			for r.ex.Free() == 0 {
				if err := take(); err != nil {
					return err
				}
			}
			p := *c.plan
			p.Repeat = c.next
			p.Launches = slices.Clone(c.plan.Launches)
			r.trials++
			byTrial[r.trials] = c
			inflight++
			r.ex.Submit(r.ctx, executor.Trial{ID: r.trials, Index: c.o.Index, Repeat: c.next, Plan: &p})
			c.next++
		}
		for inflight > 0 {
			if err := take(); err != nil {
				return err
			}
		}
		if round >= 1 && settled(cs, func(c *cand) []float64 { return c.times }) {
			break
		}
	}
	slices.SortStableFunc(cs, func(a, b *cand) int { return cmp.Compare(measure.Median(a.times), measure.Median(b.times)) })
	for i, c := range cs {
		iv, _ := stats.MedianCI(c.times, RepeatLevel)
		cf := Confirmation{Key: c.o.Key, Times: c.times, Median: iv.Median, Lo: iv.Lo, Hi: iv.Hi, Level: iv.Level, PNext: math.NaN()}
		if i+1 < len(cs) {
			if p, err := stats.UTest(c.times, cs[i+1].times); err == nil {
				cf.PNext, cf.Significant = p, p < ConfirmAlpha
			}
		}
		r.sum.Confirmed = append(r.sum.Confirmed, cf)
	}
	return nil
}

// settled says whether every configuration of cs, in the order of their
// median times, differs significantly from the next (stats.UTest below
// ConfirmAlpha).
func settled[C any](cs []C, times func(C) []float64) bool {
	order := slices.Clone(cs)
	slices.SortStableFunc(order, func(a, b C) int { return cmp.Compare(measure.Median(times(a)), measure.Median(times(b))) })
	for i := 0; i+1 < len(order); i++ {
		p, err := stats.UTest(times(order[i]), times(order[i+1]))
		if err != nil || p >= ConfirmAlpha {
			return false
		}
	}
	return true
}

// confirmSetting is the run's record of the confirm policy.
func confirmSetting(k, rounds int) string {
	return fmt.Sprintf("the best %d by time re-measured interleaved (ABAB) up to %d rounds, until each differs from the next (Mann-Whitney U, p < %g)", k, rounds, ConfirmAlpha)
}
