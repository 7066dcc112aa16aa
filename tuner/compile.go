package tuner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gtune/gtune/backend"
)

// startPool starts the compile pool's workers; stopPool (at finish)
// lets them end once the compilations queued are over.
func (r *run) startPool() {
	for range r.c.CompileWorkers {
		go func() {
			for p := range r.work {
				p.cr = r.compile(p.plan)
				close(p.fin)
				select { // wake the loop if it waits for any compilation
				case r.anyDone <- struct{}{}:
				default:
				}
			}
		}()
	}
}

// next takes the configuration to evaluate next off the queue: the first
// proposed, once compiled; with Config.CompletionOrder the first proposed
// among those compiled, waiting for any compilation when none is, so that
// a slow compilation does not hold the others back. Among compilations
// that are over, proposal order decides, so the order is a function of
// when compilations end and when the loop looks (after each evaluation):
// the same compile and evaluation times give the same order, and the
// order actually taken is the order stored. ok is false when the run's
// context ends first.
func (r *run) next() (p *pending, ok bool) {
	if r.recordedPos != nil {
		return r.nextRecorded()
	}
	if !r.c.CompletionOrder {
		p = r.queue[0]
		select {
		case <-p.fin:
		case <-r.ctx.Done():
			return nil, false
		}
		r.queue = r.queue[1:]
		return p, true
	}
	for {
		for i, q := range r.queue {
			if q.finished() {
				r.queue = slices.Delete(r.queue, i, i+1)
				return q, true
			}
		}
		select {
		case <-r.anyDone:
		case <-r.ctx.Done():
			return nil, false
		}
	}
}

// nextRecorded is next with Config.RecordedOrder: it waits for every
// outstanding compilation (so that the choice does not depend on which
// finished first) and takes the outstanding configuration recorded first.
func (r *run) nextRecorded() (*pending, bool) {
	best := -1
	for i, q := range r.queue {
		select {
		case <-q.fin:
		case <-r.ctx.Done():
			return nil, false
		}
		if best < 0 || r.recordedRank(q) < r.recordedRank(r.queue[best]) {
			best = i
		}
	}
	p := r.queue[best]
	r.queue = slices.Delete(r.queue, best, best+1)
	return p, true
}

// recordedRank is p's position in Config.RecordedOrder, after all of it
// when not recorded.
func (r *run) recordedRank(p *pending) int {
	if i, ok := r.recordedPos[p.plan.Key]; ok {
		return i
	}
	return len(r.recordedPos)
}

// compilerWorks is a backend told that its compiler is known to work
// (compileproc.Backend.Works).
type compilerWorks interface{ Works() }

// build compiles plan's launches through the run's build layer (compile,
// remembering each binary for the run) and sets their binaries: the
// reference run's plan, whose configuration the run may measure again
// and then does not compile again. Errors: a compilation's.
func (r *run) build(ctx context.Context, plan *backend.Plan) error {
	cr := r.compileAs(plan, true)
	if cr.err != nil {
		return cr.err
	}
	for i, b := range cr.bins {
		plan.Launches[i].Binary = b
	}
	return nil
}

// compile compiles plan's launches, each kernel instance once per run
// (binaries) and, with Config.CompileCache, once across runs. A single
// launch without the cache is compiled directly, unless this run
// compiled it already (the reference configuration: build): a spec's
// configurations never repeat within a run, and their binaries are not
// kept. compileMs counts only what was compiled for this plan.
func (r *run) compile(plan *backend.Plan) compiled { return r.compileAs(plan, false) }

// compileAs is compile; keep remembers a single launch's binary too.
func (r *run) compileAs(plan *backend.Plan, keep bool) compiled {
	var out compiled
	for i, l := range plan.Launches {
		var bin *backend.Binary
		var err error
		fresh, fromCache, cacheKey := true, false, ""
		t0 := time.Now()
		switch {
		case r.compiler != "":
			bin, fresh, fromCache, cacheKey, err = r.bins.cached(r.ctx, r.c.Backend, r.c.CompileCache, r.compiler, r.problem.Kernels[l.Job.Kernel], l.Job)
			if fromCache && err == nil {
				// The cache's binary is this compiler's: it works.
				if w, ok := backend.Capability[compilerWorks](r.c.Backend); ok {
					w.Works()
				}
			}
		case len(plan.Launches) == 1 && !keep && !r.bins.has(binaryKey{l.Job.Kernel, l.Job.Key}):
			bin, err = r.c.Backend.Compile(r.ctx, l.Job)
		default:
			bin, fresh, err = r.bins.compile(r.ctx, r.c.Backend, l.Job)
		}
		if fresh {
			// Wall time here, not bin.CompileMs: a simulated GPU reports a
			// modelled compile time; a failed compilation took time too.
			r.compileWall.Add(int64(time.Since(t0)))
		}
		if err != nil {
			if len(plan.Launches) > 1 {
				if ce, ok := errors.AsType[*backend.CompileError](err); ok {
					err = &backend.CompileError{Log: fmt.Sprintf("launch %d (%s): %s", i, l.Job.Key, ce.Log)}
				}
			}
			return compiled{err: err}
		}
		out.bins = append(out.bins, bin)
		if !fromCache {
			cacheKey = ""
		}
		out.cacheKeys = append(out.cacheKeys, cacheKey)
		if fresh {
			out.compileMs += bin.CompileMs
			r.compiled.Add(1)
		} else {
			r.compileReused.Add(1)
		}
	}
	return out
}
