// Package tuner is the loop that joins a strategy, the compile pool, a
// backend (real or simulated GPU) and the results store. A failure of one
// configuration (compile, launch, runtime, timeout, verification) costs that
// configuration only; it is recorded with its status and reason and the run
// goes on.
package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/trace"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/workload"
)

type pending struct {
	index int
	cfg   []expr.Value
	plan  *backend.Plan
	// trial is the configuration's trial ID while in flight; started
	// when it left the queue, and runWall the backend's wall time for
	// it so far (a stale binary runs it twice).
	trial   int
	started time.Time
	runWall time.Duration
	// fin is closed when the compilation is over; cr is its outcome,
	// read only after fin is closed.
	fin chan struct{}
	cr  compiled
	// With Config.Repeat: the repeats' outcomes so far, how many were
	// submitted, whether one failed (no more are submitted), whether p
	// waits in the queue for its next repeat, and whether it was
	// evaluated (a queued repeat of it is then dropped).
	outs                  []executor.Outcome
	submitted             int
	failed, inQueue, done bool
	// prior are the repeats the database holds of this configuration
	// when a re-run asks for more (a stricter --repeat or
	// --repeat-until): they count toward the policy, and base, one past
	// their highest repeat number, is where the new repeats' numbers
	// (and submitted) start.
	prior []store.Repeat
	base  int
}

// finished reports whether p's compilation is over.
func (p *pending) finished() bool {
	select {
	case <-p.fin:
		return true
	default:
		return false
	}
}

// compiled is the outcome of compiling a plan's launches: a binary each
// (in plan order), the compile time of those compiled for it, ms.
type compiled struct {
	bins      []*backend.Binary
	compileMs float64
	err       error
	// cacheKeys are, per launch, the compile cache key of a binary taken
	// from the cache's earlier contents; "" for one compiled by this run.
	cacheKeys []string
}

// Run tunes one kernel. It returns an error for a run that cannot start or
// continue (a bad configuration of the run, a dead backend); the Summary is
// returned whenever the run started, also with an error, so that what was
// measured is reported.
//
// The steps, in order: start (strategy, problem, run record), then until
// the budget or the strategy is spent: propose (ask the strategy, reuse
// what the database holds, queue compilations), take the oldest compiled
// configuration, measure it as a plan and store it (evaluate), tell the
// strategy (record); finish flags outliers, ranks and closes the run.
func Run(ctx context.Context, c Config) (*Summary, error) {
	t0 := time.Now()
	r, err := start(ctx, c)
	trace.Step("prepare", "tuner", "the run started (strategy, run record, compile pipeline)", t0)
	if err != nil {
		return nil, err
	}
	if r.needReference {
		workload.MarkReference(r.problem)
	}
	if !c.Fresh {
		if r.previous, err = c.DB.Previous(r.sub.hash(), r.sum.Device.UUID); err != nil {
			return r.finish("failed", err)
		}
	}
	r.recorded = newRecorded(r.previous)
	if c.Progress != nil {
		c.Progress.Start(min(r.maxEvals, r.sum.SpaceSize))
	}
	return r.loop()
}

// told records a measured outcome; an error ends the run: the
// database's, or an argument list every configuration would fail on.
func (r *run) told(o *Evaluation) error {
	if err := r.record(o); err != nil {
		return err
	}
	if o.ArgumentMismatch && !r.launched {
		// Every configuration would fail the same way: the spec's
		// Arguments do not describe this kernel.
		return &ConfigError{fmt.Errorf("%s: KernelSpecification.Arguments do not match the kernel's parameters (configuration %s): %s", r.sub.path(), o.Key, o.Reason)}
	}
	if !o.ArgumentMismatch && o.Status != backend.StatusCompileFailed {
		r.launched = true
	}
	return nil
}

// done closes a run that ran to its end.
func (r *run) done() (*Summary, error) {
	if r.best == nil && len(r.sum.Evaluations) == 0 && r.timeLimit > 0 && r.elapsed() >= r.timeLimit {
		// Not "no valid configuration": none was measured at all.
		return r.finish("done", fmt.Errorf("the time limit (%v) was reached before the first configuration was measured (%w)", r.timeLimit, ErrNoValid))
	}
	if r.best == nil {
		return r.finish("done", ErrNoValid)
	}
	return r.finish("done", nil)
}

// loop is the run's driver over its executor (package executor): it
// proposes (ask the strategy, reuse what the database holds, queue
// compilations), gives each free slot the next compiled configuration,
// and takes outcomes in the order they end: stored, then told. On one
// GPU a configuration is told before the strategy is asked for the next
// (a sequential strategy sees every result before it proposes again). A
// run that must stop (an error, the context, the time limit) waits for
// the trials in flight, whose outcomes are stored and told, so that
// nothing measured is lost. A slot's failure (executor.SlotError) gives
// its configuration back to the queue, for another GPU: it was not
// stored, so nothing is measured twice.
func (r *run) loop() (*Summary, error) {
	var stop error // the first error that ends the run
	for stop == nil && r.ctx.Err() == nil {
		if err := r.propose(); err != nil {
			stop = err
			break
		}
		r.dropWarm()
		if len(r.queue) == 0 && r.inflight == 0 {
			break
		}
		if r.ex.Live() == 0 {
			break // every GPU left the run: take set stop
		}
		stop = r.fill()
		if r.inflight > 0 && stop == nil && r.ctx.Err() == nil {
			out, ended := r.ex.Await()
			if !ended {
				// A GPU joined the run (or failed to): it warms up on the
				// first configuration with the others, or fill gives it
				// work.
				r.warmOnFree()
				continue
			}
			if _, slot := errors.AsType[*executor.SlotError](out.Err); !slot && len(r.c.GPUs) > 0 {
				// Over several GPUs the freed GPU takes the next queued
				// configuration (proposed already) before this outcome is
				// stored and told: no GPU waits for the database. On one
				// GPU the outcome is told first, so that the next is
				// chosen among all the strategy proposed by then (a
				// replay's recorded order depends on it).
				stop = r.fill()
			}
			r.take(out, &stop)
		}
	}
	if r.warmDuplicates() > 0 {
		r.warm.cancel() // the run is over: no GPU need finish its warm-up
	}
	for r.inflight > 0 {
		r.take(r.ex.Wait(), &stop)
	}
	unstable := 0
	if stop == nil && r.ctx.Err() == nil {
		unstable, stop = r.remeasureUnstable()
	}
	if stop == nil && r.ctx.Err() == nil {
		stop = r.settle()
	}
	if stop == nil && r.ctx.Err() == nil {
		stop = r.calibrate()
	}
	if unstable > 0 {
		r.note(fmt.Sprintf("%d configurations whose energy trials disagreed measured again", unstable))
	}
	if stop == nil && r.ctx.Err() == nil && r.c.Confirm > 1 {
		stop = r.confirm()
	}
	switch {
	case r.ctx.Err() != nil:
		return r.interrupted()
	case stop != nil:
		return r.finish("failed", stop)
	}
	return r.done()
}

// fill gives each free slot of the executor the next compiled
// configuration of the queue. A configuration that failed to compile is
// stored and told at once, and fill returns so that the strategy may be
// asked again before the next is taken (as it was told).
func (r *run) fill() error {
	for len(r.queue) > 0 && r.ex.Free() > 0 {
		waitStart := time.Now()
		p, ok := r.next()
		r.sum.Time.CompileWait += time.Since(waitStart)
		if !ok {
			return nil // interrupted
		}
		p.inQueue = false
		if p.done || p.failed {
			continue // a repeat no longer wanted
		}
		if r.timeLimit > 0 && r.elapsed() >= r.timeLimit {
			r.stopProposing, r.queue = true, nil
			return nil
		}
		p.started = time.Now()
		if err := p.cr.err; err != nil {
			if _, ok := errors.AsType[*backend.CompileError](err); !ok {
				return err
			}
			o, err := r.evaluated(p, executor.Outcome{Err: err})
			if err != nil {
				return err
			}
			return r.told(o)
		}
		for i, b := range p.cr.bins {
			p.plan.Launches[i].Binary = b
		}
		r.submit(p)
		if r.c.RepeatUntil <= 0 && p.submitted < r.c.Repeat {
			r.requeue(p) // its next repeat goes to the next free slot
		}
	}
	return nil
}

// submit hands p's plan to a free slot of the executor.
func (r *run) submit(p *pending) {
	r.trials++
	p.trial = r.trials
	r.flight[p.trial] = p
	r.inflight++
	plan := p.plan
	if r.c.Repeat > 1 {
		// Each repeat its own plan: several may be in flight at once.
		c := *p.plan
		c.Repeat = p.submitted
		// Its own launches too: fill (and a stale binary's
		// recompilation) set p.plan's binaries while a repeat runs.
		c.Launches = slices.Clone(p.plan.Launches)
		plan = &c
	}
	ctx := r.ctx
	if r.warmAll() {
		// The first configuration on every GPU at once: each warms up
		// on it; the first to finish measures it for the run.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(r.ctx)
		r.warm = &warmGroup{primary: p.trial, members: map[int]bool{p.trial: true}, cancel: cancel,
			ctx: ctx, plan: plan, index: p.index, repeat: p.submitted}
		defer r.warmOnFree()
	}
	r.ex.Submit(ctx, executor.Trial{ID: p.trial, Index: p.index, Repeat: p.submitted, Plan: plan})
	p.submitted++
}

// take stores and tells the outcome of a trial; the first error that
// ends the run goes to *stop. After stop, outcomes are still stored and
// counted (measured is never lost), without the checks that end a run.
// A slot's failure puts its configuration back at the head of the queue;
// the last slot's ends the run. A stale binary of the compile cache
// (staleBinaries) is compiled again and the trial submitted again.
func (r *run) take(out executor.Outcome, stop *error) {
	r.noteWarmup(out)
	r.noteAnchor(out)
	if !r.takeWarm(&out) {
		return
	}
	r.inflight--
	p := r.flight[out.Trial.ID]
	delete(r.flight, out.Trial.ID)
	p.runWall += out.Wall
	if se, ok := errors.AsType[*executor.SlotError](out.Err); ok && r.ctx.Err() == nil {
		if se.Last {
			if *stop == nil {
				*stop = se.Err
				if len(r.c.GPUs) > 0 {
					*stop = fmt.Errorf("every GPU of the run failed; the last, %s: %w", se.GPU, se.Err)
				}
			}
			return
		}
		p.submitted-- // not measured: submitted again
		r.requeue(p)
		return
	}
	if r.retryStale(p, &out) {
		return
	}
	if r.c.Repeat > 1 && !r.repeated(p, &out) {
		return // its other repeats are queued or in flight
	}
	o, err := r.evaluated(p, out)
	if err == nil {
		r.setAnchor(p, o)
	}
	switch {
	case err != nil:
		if *stop == nil {
			*stop = err
		}
	case *stop == nil || r.ctx.Err() != nil:
		if err := r.told(o); err != nil && *stop == nil {
			*stop = err
		}
	default:
		// Stored already; told too, so the summary holds it.
		r.record(o)
	}
}

// prepare allocates the arguments and computes the reference when the
// first configuration needs the GPU (backends compile against the
// prepared problem): a re-run that reuses everything costs no GPU work.
func (r *run) prepare() error {
	if r.prepared {
		return nil
	}
	r.prepared = true
	var ref executor.Reference
	var mu sync.Mutex
	var refTook time.Duration // the longest slot's
	if r.needReference {
		ref = func(ctx context.Context, be backend.Backend) error {
			t0 := time.Now()
			defer func() {
				mu.Lock()
				refTook = max(refTook, time.Since(t0))
				mu.Unlock()
			}()
			build := func(ctx context.Context, p *backend.Plan) error {
				defer trace.Step("prepare", "tuner", "the reference compiled", time.Now())
				return r.build(ctx, p)
			}
			return r.sub.reference(ctx, be, r.problem, build)
		}
	}
	t0 := time.Now()
	err := r.ex.Open(r.ctx, r.problem, ref)
	if !backend.TraitsOf(r.c.Backend).Modelled {
		// A real GPU's cost before its first measurement, stated in the
		// summary (a model's is no GPU's and is left out). The slots
		// prepare and run the reference each on its own, all at once:
		// the longest reference is told apart from the rest.
		// Slots still being prepared go on writing refTook: read it
		// under mu.
		mu.Lock()
		r.sum.Time.Prepare, r.sum.Time.Reference = time.Since(t0)-refTook, refTook
		mu.Unlock()
	}
	return err
}

// record counts an outcome and tells the strategy; a reused one is
// recorded in the database as this run's (store.DB.Reuse), so that the
// run's report holds what the run told, not only what it measured.
// Errors: the database's.
func (r *run) record(o *Evaluation) error {
	sum := r.sum
	if o.Reused && o.storedID != 0 {
		var obj *float64
		if o.Valid() {
			v := o.Value
			obj = &v
		}
		r.reuseLinks = append(r.reuseLinks, store.ReuseLink{Evaluation: o.storedID, Position: len(sum.Evaluations), Objective: obj})
		if len(r.reuseLinks) >= reuseBatch {
			if err := r.flushReuse(); err != nil {
				return err
			}
		}
	}
	if err := r.noteThermal(o); err != nil {
		return err
	}
	sum.Evaluations = append(sum.Evaluations, o)
	if o.Reused {
		sum.Reused++
	} else {
		sum.Evaluated++
	}
	obj := r.c.Objective
	scores := make([]float64, len(r.c.Objectives))
	for i, ob := range r.c.Objectives {
		scores[i] = math.Inf(1)
		if v, ok := ob.Value(o.Observations, o.Metrics); ok && o.Valid() {
			scores[i] = ob.Score(v)
		}
	}
	if !o.Valid() {
		sum.Invalid++
		r.strat.Tell(strategy.Evaluation{Index: o.Index, Score: math.Inf(1), Observations: o.Observations, Objectives: scores})
	} else {
		var samples []float64
		for _, v := range o.Repeats {
			samples = append(samples, obj.Score(v))
		}
		r.strat.Tell(strategy.Evaluation{Index: o.Index, Score: obj.Score(o.Value), Valid: true, Observations: o.Observations, Objectives: scores, KernelTimes: o.KernelTimes, Samples: samples})
		if r.best == nil || obj.Score(o.Value) < obj.Score(r.best.Value) {
			r.best = o
		}
	}
	if r.c.Progress != nil {
		r.c.Progress.Step(len(sum.Evaluations), r.best)
	}
	return nil
}

// noteThermal states the leakage model of a temperature-corrected run
// (measure.ThermalModel) in its settings, from the first measured
// evaluation that carries it: the report's facts. Errors: the
// database's.
func (r *run) noteThermal(o *Evaluation) error {
	if r.thermalNoted || o.Reused {
		return nil
	}
	slope, ok := o.Observations["leakage_slope"]
	if !ok {
		return nil
	}
	r.thermalNoted = true
	set := map[string]any{"leakage_slope_w_per_c": slope, "temperature_ref_c": o.Observations["temperature_ref"],
		"leakage_prior": o.Observations["leakage_prior"] == 1}
	for k, v := range set {
		r.store.Settings[k] = v
	}
	return r.c.DB.SetRunSettings(r.store.ID, set)
}

// reuseBatch is how many reuse links a run records in one transaction
// (store.DB.Reuse): a crash loses at most that many from the run's
// account (the evaluations themselves are their own runs', committed).
const reuseBatch = 256

// flushReuse records the reuse links gathered so far.
func (r *run) flushReuse() error {
	links := r.reuseLinks
	r.reuseLinks = nil
	return r.c.DB.Reuse(r.store.ID, links)
}

// tell records the reused results os, in order.
func (r *run) tell(os []*Evaluation) error {
	for _, o := range os {
		if err := r.record(o); err != nil {
			return err
		}
	}
	return nil
}

// propose asks the strategy for configurations until the look-ahead is
// full: those the database holds are reused at once, the others queued
// and compiled in the pool.
func (r *run) propose() error {
	c := r.c
	for !r.stopProposing && len(r.queue) < r.lookahead {
		if r.considered >= r.maxEvals || (r.timeLimit > 0 && r.elapsed() >= r.timeLimit) {
			r.stopProposing = true
			break
		}
		ids := r.strat.Next(min(r.lookahead-len(r.queue), r.maxEvals-r.considered))
		if len(ids) == 0 {
			// A strategy that needs outstanding results before it can
			// propose more returns none meanwhile (strategy.Strategy.Next);
			// only with nothing outstanding (queued, or measuring on a GPU
			// of a run over several) is the search over.
			if len(r.queue) == 0 && r.inflight == r.warmDuplicates() {
				if r.recorded.pending() {
					if err := r.tell(r.recorded.force()); err != nil {
						return err
					}
					continue
				}
				r.stopProposing = true
			}
			break
		}
		for _, idx := range ids {
			r.considered++
			key := c.Space.Key(idx)
			var prior []store.Repeat
			if e, ok := r.previous[key]; ok {
				// Measured with fewer repeats than this run asks for:
				// measured again, its stored repeats counted.
				var err error
				if prior, err = r.fewerRepeats(e); err != nil {
					return err
				}
				if o, ok := reuse(c, idx, e); ok && prior == nil {
					o.KernelTimes = r.storedKernelTimes(idx, e)
					if err := r.tell(r.recorded.add(e, o)); err != nil {
						return err
					}
					continue
				}
				if err := r.tell(r.recorded.skip(e)); err != nil {
					return err
				}
			}
			if err := r.prepare(); err != nil {
				return err
			}
			cfg := c.Space.Values(idx)
			plan, err := r.sub.plan(cfg)
			if err != nil {
				return fmt.Errorf("configuration %s: %w", key, err)
			}
			plan.Key = key
			plan.Measure = r.request
			plan.Measure.StateKey = plan.Settings.StateKey()
			p := &pending{index: idx, cfg: cfg, plan: plan, fin: make(chan struct{}), prior: prior}
			for _, rep := range prior {
				p.base = max(p.base, rep.Repeat+1)
			}
			p.submitted = p.base
			r.queue = append(r.queue, p)
			r.work <- p // never blocks: at most lookahead are queued
		}
	}
	return nil
}

// retryStale compiles again the binaries of the compile cache that p's
// outcome says the GPU could not use (staleBinaries) and submits p again,
// or queues it at the head where no slot is free: a binary of the cache
// the GPU cannot use is never used as it is. It reports whether it did;
// where the compilation failed, *out becomes that failure.
func (r *run) retryStale(p *pending, out *executor.Outcome) bool {
	launches, why := staleBinaries(p.cr, out.Result, out.Err)
	if len(launches) == 0 || r.ctx.Err() != nil {
		return false
	}
	ms, err := r.recompile(p.plan, p.cr, launches, why)
	if err != nil {
		out.Result, out.Err = nil, err
		return false
	}
	p.cr.compileMs += ms
	for i := range p.cr.cacheKeys {
		p.cr.cacheKeys[i] = "" // none is stale twice
	}
	p.submitted--
	if r.ex.Free() == 0 {
		// Over several GPUs the freed slot went to the next
		// configuration already (loop): this one waits at the head of
		// the queue, compiled.
		r.requeue(p)
		return true
	}
	r.submit(p)
	return true
}

// requeue puts p at the head of the queue, where it is not already.
func (r *run) requeue(p *pending) {
	if !p.inQueue {
		p.inQueue = true
		r.queue = append([]*pending{p}, r.queue...)
	}
}

// repeated adds *out to p's repeats (Config.Repeat) and reports whether
// they are complete: as many as asked (stored ones counted), or a
// failure, the run's end or a converged interval once none is in
// flight; *out is then the median repeat. Under RepeatUntil the next
// repeat is queued once this one says the interval is still too wide
// (one repeat at a time).
func (r *run) repeated(p *pending, out *executor.Outcome) bool {
	p.outs = append(p.outs, *out)
	if out.Err != nil || out.Result == nil || out.Result.Status != backend.StatusValid {
		p.failed = true
	}
	n := p.base + len(p.outs) // repeats so far, stored ones counted
	complete := n >= r.c.Repeat || (p.failed || r.ctx.Err() != nil || r.converged(p)) && n == p.submitted
	if !complete {
		if r.c.RepeatUntil > 0 && n == p.submitted {
			r.requeue(p)
		}
		return false
	}
	p.done = true
	*out = medianRepeat(p.outs, priorTimes(p.prior))
	return true
}
