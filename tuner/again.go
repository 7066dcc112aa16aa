package tuner

import (
	"fmt"
	"slices"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
)

// again is one configuration measured again at the end of a run
// (confirmation, settle): o's plan, compiled, as repeat number repeat.
type again struct {
	o      *Evaluation
	plan   *backend.Plan
	repeat int
}

// planAgain builds and compiles the plan of o's configuration, measured
// as req asks; nil where either fails (o was measured, so neither
// should: a compile cache that changed under the run).
func (r *run) planAgain(o *Evaluation, req measure.Request) *backend.Plan {
	plan, err := r.sub.plan(r.c.Space.Values(o.Index))
	if err != nil {
		return nil
	}
	plan.Key, plan.Measure = o.Key, req
	plan.Measure.StateKey = plan.Settings.StateKey()
	cr := r.compile(plan)
	if cr.err != nil {
		return nil
	}
	for i, b := range cr.bins {
		plan.Launches[i].Binary = b
	}
	return plan
}

// measureAgain submits every trial of as, as the executor's slots free,
// and calls took with each outcome in completion order: trials of the
// driver's loop like the search's, over the same executor. Errors:
// took's (the trials still in flight are left to the run's end);
// every GPU of the run failing.
func (r *run) measureAgain(what string, as []again, took func(a again, out executor.Outcome) error) error {
	byTrial := map[int]again{}
	take := func() error {
		out := r.ex.Wait()
		r.noteWarmup(out)
		a := byTrial[out.Trial.ID]
		delete(byTrial, out.Trial.ID)
		return took(a, out)
	}
	for _, a := range as {
		for r.ex.Free() == 0 && len(byTrial) > 0 {
			if err := take(); err != nil {
				return err
			}
		}
		if r.ex.Live() == 0 {
			return fmt.Errorf("%s: every GPU of the run failed", what)
		}
		p := *a.plan
		p.Repeat = a.repeat
		p.Launches = slices.Clone(a.plan.Launches)
		r.trials++
		byTrial[r.trials] = a
		r.ex.Submit(r.ctx, executor.Trial{ID: r.trials, Index: a.o.Index, Repeat: a.repeat, Plan: &p})
	}
	for len(byTrial) > 0 {
		if err := take(); err != nil {
			return err
		}
	}
	return nil
}
