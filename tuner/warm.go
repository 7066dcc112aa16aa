package tuner

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
)

// warmGroup is the first configuration's trials on every GPU of a run
// over several (warmAll): primary is the trial the configuration's
// pending knows, members every trial of the group still in flight.
type warmGroup struct {
	primary int
	members map[int]bool
	taken   bool // a member's outcome was taken for the configuration
	cancel  context.CancelFunc
	// ctx, plan, index and repeat make a duplicate (warmOnFree).
	ctx    context.Context
	plan   *backend.Plan
	index  int
	repeat int
}

// warmOnFree gives every free GPU a duplicate of the warm group's
// configuration while none of the group has been measured yet: the GPUs
// free at the first submission, and a GPU that joins the run later
// (executor.Pool.Await) while the others still warm up, which would
// otherwise warm up on a configuration of its own.
func (r *run) warmOnFree() {
	g := r.warm
	if g == nil || g.taken {
		return
	}
	for r.ex.Free() > 0 {
		r.trials++
		g.members[r.trials] = true
		r.inflight++
		c := *g.plan
		c.Launches = slices.Clone(g.plan.Launches)
		r.ex.Submit(g.ctx, executor.Trial{ID: r.trials, Index: g.index, Repeat: g.repeat, Plan: &c})
	}
}

// warmAll says whether the run's first submission goes to every GPU at
// once. A GPU warms up before its first energy measurement (the thermal
// policy: 15–50 s on cold H100s, BENCHMARKS.md "The executor owns a
// GPU's life"), holding the configuration it measures; on four H100s the
// slowest held one for 50 s while the others had measured the rest. Given
// the same first configuration, every GPU warms at once without holding
// one of its own: the first to finish measures it, the others' runs of
// it are dropped, and cancelled when nothing else is left to measure.
// Its cost: on a run that ends before the slowest GPU is warm, that
// GPU's warm-up measures nothing, as it measured little before. Only
// the steady thermal policies warm up that long; the others' warm-up
// (seconds) is not worth a measurement on every GPU.
func (r *run) warmAll() bool {
	if r.warm != nil || r.trials != 1 || len(r.c.GPUs) == 0 || r.ex.Free() == 0 {
		return false
	}
	if r.c.WarmAll {
		return true
	}
	t := r.request.Trials
	long := t != nil && (t.Thermal == measure.ThermalSteady || t.Thermal == measure.ThermalBoth)
	return r.request.Energy && long && !backend.TraitsOf(r.c.Backend).Modelled
}

// takeWarm sorts an outcome of the warm group: the first to end (a
// failure of a slot aside, while another member may still end) is the
// configuration's, renamed to the primary trial; the others are
// dropped. It reports whether out is to be taken as the configuration's.
func (r *run) takeWarm(out *executor.Outcome) bool {
	g := r.warm
	if g == nil || !g.members[out.Trial.ID] {
		return true
	}
	delete(g.members, out.Trial.ID)
	_, slot := errors.AsType[*executor.SlotError](out.Err)
	cancelled := out.Err != nil && r.ctx.Err() == nil && errors.Is(out.Err, context.Canceled)
	if g.taken || (slot || cancelled) && len(g.members) > 0 {
		r.inflight--
		return false
	}
	g.taken = true
	out.Trial.ID = g.primary
	return true
}

// warmDuplicates is how many trials in flight are the warm group's
// duplicates: its members once one was taken for the configuration (a
// strategy learns nothing from them).
func (r *run) warmDuplicates() int {
	if g := r.warm; g != nil && g.taken {
		return len(g.members)
	}
	return 0
}

// dropWarm cancels the warm group's duplicates once they are all that is
// left: the search is over and nothing is queued.
func (r *run) dropWarm() {
	if n := r.warmDuplicates(); n > 0 && len(r.queue) == 0 && r.stopProposing && r.inflight == n {
		r.warm.cancel()
	}
}

// noteWarmup adds an outcome's warm-up (warmup_time, s: the GPU's first
// energy measurement) to the run's and its GPU's account.
func (r *run) noteWarmup(out executor.Outcome) {
	if out.Result == nil {
		return
	}
	w, ok := out.Result.Observations.Get("warmup_time")
	if !ok || !(w > 0) {
		return
	}
	d := time.Duration(w * float64(time.Second))
	r.sum.Time.Warmup += d
	r.sum.Time.WarmupModelled = backend.TraitsOf(r.c.Backend).Modelled
	if r.sum.GPUs != nil && out.Slot < len(r.sum.GPUs) {
		r.sum.GPUs[out.Slot].Warmup += d
	}
}
