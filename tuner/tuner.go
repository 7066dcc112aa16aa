// Package tuner is the loop that joins a strategy, the compile pool, a
// backend (real or simulated GPU) and the results store. A failure of one
// configuration (compile, launch, runtime, timeout, verification) costs that
// configuration only; it is recorded with its status and reason and the run
// goes on.
package tuner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/plausibility"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/stats"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

// Progress receives the run's progress; the CLI draws a bar with it.
type Progress interface {
	Start(total int)
	// Step reports one more configuration done and the best so far
	// (best is nil until a valid configuration is found).
	Step(done int, best *Evaluation)
	Finish()
}

// Config is one tuning run.
type Config struct {
	// Subject is what the run tunes: FromSpec or FromWorkload. Space is
	// its space (a workload's combined space).
	Subject   Subject
	Space     *space.Space
	Backend   backend.Backend
	DB        *store.DB
	Objective objective.Objective
	Strategy  string
	// RunKind, when set, is the strategy name the results database
	// records for the run in place of Strategy: gtune measure, a run over
	// a space of one configuration, is recorded as "measure".
	RunKind string
	// StrategyParams are the strategy's hyperparameters by name.
	StrategyParams map[string]any
	Seed           uint64
	// Objectives are the run's objectives when it has several (a Pareto
	// front; multi-objective strategies search them all, in order); empty:
	// Objective alone. Objective is then Objectives[0].
	Objectives []objective.Objective
	// Inputs are what strategies may declare they need
	// (strategy.Needs), provided by the caller (Provide does it from
	// what a strategy declares); nil where the strategy does not need
	// them.
	Resources func(index int) (registers, sharedMemory int, err error)
	Target    *strategy.Target
	Priors    []strategy.PriorTimes
	Kernels   []strategy.Part
	// MaxEvals bounds the configurations considered (evaluated or reused);
	// 0 means no bound beyond the spec's Budget.
	MaxEvals int
	// TimeLimit bounds the run's wall time (or Clock's time); 0 means no
	// bound beyond the spec's Budget.
	TimeLimit time.Duration
	// Clock, when set, gives the time elapsed since the run started, in
	// place of the wall clock, for TimeLimit and Summary.Elapsed; a replay
	// gives the recorded time charged so far (Kernel Tuner's simulation
	// mode).
	Clock func() time.Duration
	// Fresh re-measures configurations the database already holds.
	Fresh bool
	// CompileWorkers is the number of compilations in flight at most
	// (default: the backend's compile processes when it has them, else
	// the CPU count; one less than the CPU count at most when the run
	// measures energy).
	CompileWorkers int
	// InFlight is, per GPU, the configurations a strategy that waits for
	// results before proposing more (bayes_opt, transfer) keeps in
	// progress: the others compile while one is measured
	// (strategy.Options.Batch is InFlight per GPU). 0: DefaultInFlight
	// on a backend that compiles, 1 on a simulated or replayed GPU, whose
	// compilations cost nothing; stored in the run's settings.
	InFlight int
	// Lookahead is the number of configurations proposed and not yet told
	// at most (default twice CompileWorkers); stored in the run's
	// settings.
	Lookahead int
	// RecordedOrder, when set, are configuration keys in the order a
	// recorded run told them (a replayed cache's timestamps): among the
	// configurations outstanding, once all are compiled, the one recorded
	// first is evaluated next (those not recorded last, in proposal
	// order). With the recorded run's strategy, seed and Lookahead this
	// replays its told order exactly: the recorded next one is always
	// among those outstanding. Used by replays; a resumed run follows its
	// database's order by itself.
	RecordedOrder []string
	// CompletionOrder evaluates the configurations in the order their
	// compilations finish (the first proposed among those finished)
	// rather than the order they were proposed: a slow compilation does
	// not hold back the GPU while others are ready. The results are told
	// to the strategy, and stored, in the order evaluated.
	CompletionOrder bool
	// CompileCache, when set, keeps binaries in memory and on disk
	// between runs (package compilecache): a kernel already compiled, in
	// this run or an earlier one, is not compiled again. It needs a
	// backend that is a backend.Compiler; nil: every distinct kernel of
	// the run is compiled once, within the run only.
	CompileCache *compilecache.Cache
	// DiscardPTX: the PTX of each compiled configuration (where the
	// backend makes it, backend.Binary.PTX) is not stored with its
	// evaluation. Kept by default so that the projection can emulate
	// configurations later (gtune project --emulate); it takes 11 KB
	// per configuration of benchmark_hub's convolution, gzip-compressed.
	DiscardPTX bool
	// Repeat measures each configuration this many times (trials through
	// the executor, on any GPU of the run; a repeat that fails ends the
	// configuration's repeats); 0 or 1: once. The evaluation is the
	// median repeat by time (the lower middle one for an even count: a
	// measurement, so that its energy and power go with its time), its
	// metrics the times' median interval (package stats: time_ci_low,
	// time_ci_high, time_ci_level) and every repeat is stored
	// (store.Repeat).
	Repeat int
	// RepeatUntil, when positive, makes Repeat a cap: a configuration is
	// measured again, one repeat at a time, until the relative half-width
	// of its median time's interval (stats.MedianCI at RepeatLevel) is at
	// most RepeatUntil (0.01: ±1 %), or Repeat repeats were made. The
	// interval needs 6 repeats to reach 95 %.
	RepeatUntil float64
	// Confirm, when 2 or more, re-measures that many best configurations
	// by time at the end of the run, interleaved, until their order is
	// settled or ConfirmRounds rounds (0: DefaultConfirmRounds) are done
	// (Summary.Confirmed says which differences are significant).
	Confirm, ConfirmRounds int
	// Shard, "I/K", says that Space is shard I of K of the kernel's
	// search space (package shard; gtune tune --shard), recorded in the
	// run's settings for gtune merge; "" for a whole space.
	Shard string
	// GPUs are further GPUs of the same model as Backend's that measure
	// configurations beside it, one configuration each at a time (gtune
	// tune --devices): one run over every GPU of a host. Backend
	// compiles, computes the reference and is GPU 0; each evaluation
	// records the GPU that measured it (store.Evaluation.GPU). Start
	// refuses a GPU of another model (their results must not be mixed)
	// or one given twice. Their results are told in completion order.
	GPUs []backend.Backend
	// Executor measures the run's trials (package executor): opened when
	// the run first needs a GPU (its arguments prepared, the reference
	// run), then given every trial. nil: an executor.Pool over Backend
	// and GPUs. Its slots must be Backend and GPUs, in that order (the
	// shares and each evaluation's GPU are read from it).
	Executor executor.Executor
	// Calibrate puts the energies of a run over several GPUs on the
	// first GPU's scale by an anchor each GPU measures through the run
	// (calibrate): on by itself where the run measures energy on
	// several GPUs whose results are measured, not modelled; Calibrate
	// forces it (a simulated GPU).
	Calibrate bool
	// WarmAll gives the first configuration of a run over several GPUs
	// to every GPU at once (warmAll): on by itself where the run
	// measures energy on GPUs that are measured, not modelled; set, it
	// is on for any run over several GPUs (the simulated ones of tests).
	WarmAll      bool
	Progress     Progress
	GtuneVersion string
	// Peaks are the GPU's ceilings a measurement is checked against
	// (package plausibility, Peaks); zero: no peak check.
	Peaks plausibility.Peaks
}

// Evaluation is one evaluated configuration as the run saw it. gtune has
// one name for an evaluated configuration: store.Evaluation is how it is
// kept, this how the run ranks it (with its objective value),
// strategy.Evaluation what a strategy is told of it (its scores);
// backend.Result is not one: it is what running a plan gave.
type Evaluation struct {
	Index  int
	Key    string
	Params []store.Param
	// GPU is the UUID of the GPU that measured it in a run over several
	// (its median repeat's; a reused one's as stored); "" on one GPU.
	GPU          string
	Status       backend.Status
	Reason       string
	Value        float64 // objective value, valid configurations only
	Observations map[string]float64
	// Typed are the observations of a configuration measured by this run
	// (of the plan and of each launch, with units and methods); nil for a
	// reused or failed one.
	Typed   measure.Observations
	Metrics map[string]float64
	// KernelTimes are the time of each kernel of a workload (ms, by
	// member; from its launch's events, overlapping the others'), NaN
	// where unknown; nil for one kernel.
	KernelTimes []float64
	// Repeats is the objective's value of each valid repeat, in repeat
	// order, when the configuration was measured several times
	// (Config.Repeat); nil otherwise.
	Repeats []float64
	Reused  bool
	// Implausible says why the measurement cannot be right (package
	// plausibility); "" when it can. Such an outcome is never among Best.
	Implausible string
	// ArgumentMismatch: the kernel's parameters differ from the spec's
	// Arguments; it was never launched.
	ArgumentMismatch bool
	// evalID is the stored evaluation this run measured; storedID the
	// one a reused outcome came from (recorded as reused by this run, never
	// annotated by it).
	evalID, storedID int64
	// slot is the executor's slot that measured it, ended when
	// (calibration across GPUs).
	slot  int
	ended time.Time
}

// Valid reports whether the configuration ran and verified.
func (o *Evaluation) Valid() bool { return o.Status == backend.StatusValid }

// Summary is the result of a run.
type Summary struct {
	RunID     int64
	Device    device.Description // the backend's Device()
	Objective objective.Objective
	Strategy  string
	SpaceSize int
	Evaluated int // measured in this run
	Reused    int // taken from the database
	Invalid   int // evaluated or reused, but not valid
	Best      []*Evaluation
	// Objectives are the run's objectives (Config.Objectives, or the one
	// Objective); Front is the Pareto front of the valid, plausible
	// outcomes over them when there are several (objective.ParetoFront),
	// ordered by the first.
	Objectives []objective.Objective
	Front      []*Evaluation
	// Implausible are the valid outcomes flagged as implausible that
	// would otherwise rank before Best[0], best first.
	Implausible []*Evaluation
	Evaluations []*Evaluation
	Interrupted bool
	Elapsed     time.Duration
	// Time says where the run's wall time went.
	Time Time
	// Compiled is the number of kernels compiled by this run;
	// CompileReused the binaries it took from the compile cache
	// (Config.CompileCache: earlier runs) or from an earlier plan of its
	// own (a workload's kernel in several plans).
	Compiled, CompileReused int
	// CompilePool is what the backend's compile processes did in this run
	// (package compileproc); nil when it compiles in this process.
	CompilePool *compileproc.Stats
	// GPUs is what each GPU of a run over several (Config.GPUs) did, in
	// Backend, GPUs order; nil on one GPU.
	GPUs []GPUShare
	// Confirmed are the best configurations re-measured at the end of the
	// run (Config.Confirm), in the order of their median times.
	Confirmed []Confirmation
	// ConfirmNote says what confirmation did beyond Confirmed: why it
	// re-measured nothing (fewer than two valid configurations), or how
	// many stored measurements it counted (a re-run); "" otherwise.
	ConfirmNote string
	// ThermalNote says what the thermal policy did after the search:
	// what settle re-measured (measure.ThermalSettle: configurations
	// measured while the GPU warmed up that could be the best), how
	// anchor corrected the energies (measure.ThermalAnchor); "" under
	// the other policies, or where there was nothing to do.
	ThermalNote string
}

// GPUShare is one GPU's part of a run over several: the configurations
// it measured and its time in the backend (measuring, launching, the
// worker's round trips).
type GPUShare struct {
	UUID, Name string
	// Evaluated counts the configurations the GPU measured (one that
	// failed to compile reaches no GPU), Busy the wall time it spent
	// measuring them, Warmup the part of it its warm-up took.
	Evaluated int
	Busy      time.Duration
	Warmup    time.Duration
	// Dropped says why the GPU left the run (its backend failed
	// executor.MaxFailures times in a row; its configurations went to
	// the others); "" when it stayed.
	Dropped string
}

// Time is where a run's wall time went (Summary.Elapsed being all of
// it). The tuner overlaps compiling with measuring: Compile runs in the
// compile pool while the backend measures, so the parts do not add up.
type Time struct {
	// CompileWait is how long the run waited for a configuration's
	// compilation to finish with nothing else to do.
	CompileWait time.Duration
	// Backend is the time spent in Backend.Run: the GPU's work on the
	// configurations with the launch and measurement overheads.
	Backend time.Duration
	// Framework is the tuner's own work on the configurations
	// (store.Evaluation.FrameworkMs, summed).
	Framework time.Duration
	// Warmup is the GPUs' warm-up before their first energy measurement
	// (the observation warmup_time, summed over the GPUs): the cost the
	// thermal policy adds to the run, on each GPU once.
	Warmup time.Duration
	// WarmupModelled: the warm-up is the model's time, not wall time (a
	// simulated GPU's: backend.Traits.Modelled).
	WarmupModelled bool
	// Compile is the wall time of the compilations this run made,
	// summed over the pool's workers: Compile / Elapsed is the number of
	// compilations in flight on average.
	Compile time.Duration
}

// ConfigError is a run that cannot start because of how it was asked
// for: an unknown strategy or hyperparameter, an empty budget.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrNoValid is returned when no configuration of the run was valid.
var ErrNoValid = errors.New("no valid configuration was found")

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
	r, err := start(ctx, c)
	if err != nil {
		return nil, err
	}
	if r.needReference {
		dir, err := newReferenceDirFor(r.sub, r.problem)
		if err != nil {
			return r.finish("failed", err)
		}
		defer os.RemoveAll(dir)
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
			out := r.ex.Wait()
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
			// Its next repeat goes to the next free slot.
			p.inQueue = true
			r.queue = append([]*pending{p}, r.queue...)
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
		r.warm = &warmGroup{primary: p.trial, members: map[int]bool{p.trial: true}, cancel: cancel}
		defer func() {
			for r.ex.Free() > 0 {
				r.trials++
				r.warm.members[r.trials] = true
				r.inflight++
				c := *plan
				c.Launches = slices.Clone(plan.Launches)
				r.ex.Submit(ctx, executor.Trial{ID: r.trials, Index: p.index, Repeat: p.submitted - 1, Plan: &c})
			}
		}()
	}
	r.ex.Submit(ctx, executor.Trial{ID: p.trial, Index: p.index, Repeat: p.submitted, Plan: plan})
	p.submitted++
}

// warmGroup is the first configuration's trials on every GPU of a run
// over several (warmAll): primary is the trial the configuration's
// pending knows, members every trial of the group still in flight.
type warmGroup struct {
	primary int
	members map[int]bool
	taken   bool // a member's outcome was taken for the configuration
	cancel  context.CancelFunc
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
		if !p.inQueue {
			p.inQueue = true
			r.queue = append([]*pending{p}, r.queue...)
		}
		return
	}
	if launches, why := staleBinaries(p.cr, out.Result, out.Err); len(launches) > 0 && r.ctx.Err() == nil {
		// A binary of the compile cache the GPU cannot use is never used
		// as it is: compiled again, and the plan run again.
		ms, err := r.recompile(p.plan, p.cr, launches, why)
		if err == nil {
			p.cr.compileMs += ms
			for i := range p.cr.cacheKeys {
				p.cr.cacheKeys[i] = "" // none is stale twice
			}
			p.submitted--
			if r.ex.Free() == 0 {
				// Over several GPUs the freed slot went to the next
				// configuration already (loop): this one waits at the
				// head of the queue, compiled.
				if !p.inQueue {
					p.inQueue = true
					r.queue = append([]*pending{p}, r.queue...)
				}
				return
			}
			r.submit(p)
			return
		}
		out.Result, out.Err = nil, err
	}
	if r.c.Repeat > 1 {
		p.outs = append(p.outs, out)
		if out.Err != nil || out.Result == nil || out.Result.Status != backend.StatusValid {
			p.failed = true
		}
		n := p.base + len(p.outs) // repeats so far, stored ones counted
		complete := n >= r.c.Repeat || (p.failed || r.ctx.Err() != nil || r.converged(p)) && n == p.submitted
		if !complete {
			if r.c.RepeatUntil > 0 && n == p.submitted && !p.inQueue {
				// One repeat at a time: the next once this one says
				// the interval is still too wide.
				p.inQueue = true
				r.queue = append([]*pending{p}, r.queue...)
			}
			return // its other repeats are queued or in flight
		}
		p.done = true
		out = medianRepeat(p.outs, priorTimes(p.prior))
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

// run is the state of one tuning run, shared by its steps.
type run struct {
	// thermalNoted: the leakage model the GPU fitted is in the run's
	// settings (noteThermal).
	thermalNoted bool
	// anchor is the run's anchor when it calibrates its GPUs: its key
	// once set (setAnchor), its measurements on each slot (noteAnchor).
	anchor anchors
	ctx    context.Context
	c      Config
	sub    Subject
	bins   binaries
	// compiler is the backend's backend.Compiler identity when binaries
	// are cached across runs (Config.CompileCache), else "".
	compiler string
	// anyDone wakes the loop when a compilation is over
	// (Config.CompletionOrder).
	anyDone    chan struct{}
	strat      strategy.Strategy
	problem    *backend.Problem
	request    measure.Request // every configuration's measurement
	store      *store.Run
	sum        *Summary
	workingSet int64
	started    time.Time

	maxEvals  int
	timeLimit time.Duration

	needReference bool
	prepared      bool
	previous      map[string]*store.Evaluation
	// recorded tells the results reused from previous in their recorded
	// order.
	recorded *recorded

	// compiled, compileReused and compileWall count Summary.Compiled,
	// CompileReused and Time.Compile from the compile pool's workers.
	compiled, compileReused, compileWall atomic.Int64
	// pool is the backend's compile processes (nil: it compiles in this
	// process) and poolAtStart their counters when the run started.
	pool        compilePool
	poolAtStart compileproc.Stats

	// work feeds the compile pool's workers in proposal order (a
	// channel is first in, first out): compilations start in the order
	// proposed, whichever worker is free, so that the order they finish
	// in depends on their compile times alone.
	work      chan *pending
	stopPool  sync.Once
	lookahead int
	// recordedPos is Config.RecordedOrder by key; nil without it.
	recordedPos   map[string]int
	queue         []*pending
	considered    int
	stopProposing bool
	best          *Evaluation
	launched      bool // some configuration's argument list matched the kernel's
	// ex measures the run's trials: its GPUs (executor.Pool).
	ex executor.Executor
	// inflight counts the trials submitted to ex and not yet taken;
	// flight holds their configurations by trial ID, and trials is the
	// last trial ID given.
	inflight int
	flight   map[int]*pending
	// warm is the first configuration's trials on every GPU at once
	// (warmAll); nil when the run does not warm so.
	warm   *warmGroup
	trials int
	// reuseLinks are the reused results told and not yet recorded
	// (flushReuse).
	reuseLinks []store.ReuseLink
}

// start checks the run's configuration, makes its strategy and problem
// and records the run in the database.
func start(ctx context.Context, c Config) (*run, error) {
	pool, hasPool := backend.Capability[compilePool](c.Backend)
	sub := c.Subject
	if sub == nil {
		return nil, &ConfigError{errors.New("tuner: no spec or workload to tune")}
	}
	size := c.Space.Len()
	maxEvals, timeLimit := budget(c, sub.budget(), size)
	if maxEvals == 0 {
		return nil, &ConfigError{fmt.Errorf("the budget allows no configuration (max evaluations 0)")}
	}
	if len(c.Objectives) == 0 {
		c.Objectives = []objective.Objective{c.Objective}
	}
	inFlight := c.InFlight
	if inFlight <= 0 {
		inFlight = DefaultInFlight
		if backend.TraitsOf(c.Backend).InstantCompile {
			inFlight = 1 // no compilation to overlap with measuring
		}
	}
	strat, err := strategy.New(c.Strategy, strategy.Options{
		Space: c.Space, Seed: c.Seed, Params: c.StrategyParams, Budget: maxEvals, Batch: (1 + len(c.GPUs)) * inFlight,
		Resources: c.Resources, Target: c.Target, Priors: c.Priors, Objectives: len(c.Objectives), Kernels: c.Kernels,
	})
	if err != nil {
		return nil, &ConfigError{err}
	}
	problem, err := sub.problem()
	if err != nil {
		return nil, err
	}
	req := sub.request()
	for _, o := range c.Objectives {
		if o.Name == objective.Energy || o.Name == objective.Power || o.Name == objective.EDP {
			req.Energy = true
		}
	}
	if c.CompileWorkers <= 0 {
		// One core stays free for the backend's worker when it measures
		// energy: its polling of the energy counter suffers when every
		// core compiles (measure.PeriodEstimate). With compile processes
		// (compileproc) there is one compilation in flight per process.
		c.CompileWorkers = runtime.NumCPU()
		if hasPool {
			c.CompileWorkers = pool.Stats().Processes
		}
		if req.Energy && c.CompileWorkers >= runtime.NumCPU() {
			c.CompileWorkers = max(1, runtime.NumCPU()-1)
		}
	}
	// The power sensor's lag, where the device database knows it, for
	// observers that integrate sampled power (measure.CorrectLag).
	if d, err := Description(c.Backend); err == nil {
		req.SensorLagS = d.SensorCapacitanceS
	}
	dev := c.Backend.Device()
	sr := &store.Run{
		SpecHash: sub.hash(), SpecPath: sub.path(), Kernel: sub.kernel(), Objective: c.Objective.Name,
		Strategy: cmp.Or(c.RunKind, c.Strategy), DeviceName: dev.Name, DeviceUUID: dev.UUID, Driver: dev.Driver,
		Backend: dev.Backend, GtuneVersion: c.GtuneVersion,
		Settings: map[string]any{
			"seed": c.Seed, "max_evals": maxEvals, "time_limit_s": timeLimit.Seconds(), "fresh": c.Fresh,
			"energy": req.Energy, "iterations": req.Iterations,
			"objective_direction": c.Objective.Direction(),
		},
	}
	// The GPU as found when the run began (read-only NVML readings; the
	// report's facts): its clocks (the SM clock idle, as it usually is
	// then) and its enforced power limit.
	for k, v := range map[string]float64{"device_sm_clock_mhz": float64(dev.SMClockMHz), "device_max_sm_clock_mhz": float64(dev.MaxSMClockMHz),
		"device_mem_clock_mhz": float64(dev.MemClockMHz), "device_power_limit_w": dev.PowerLimitW} {
		if v > 0 {
			sr.Settings[k] = v
		}
	}
	if len(c.Objectives) > 1 {
		names := make([]string, len(c.Objectives))
		for i, o := range c.Objectives {
			names[i] = o.Name
		}
		sr.Settings["objectives"] = names
	}
	if set, lay := sub.workloadSet(); set != nil {
		sr.Settings["kernels"] = len(set.Members)
		sr.Settings["orders"] = lay.Order >= 0
	}
	// Binaries are cached across runs only where the backend says what
	// decides them besides the job (its compiler and target).
	compiler := ""
	if c.CompileCache != nil {
		if cc, ok := backend.Capability[backend.Compiler](c.Backend); ok {
			if id, err := cc.CompilerID(); err == nil {
				compiler = id
				sr.Settings["compile_cache"] = c.CompileCache.Dir()
			}
		}
	}
	// The look-ahead: configurations proposed and not yet told. Twice
	// the compilations in flight keeps the pool busy while the GPU
	// measures; a run's told order depends on it (RecordedOrder).
	lookahead := c.Lookahead
	if lookahead <= 0 {
		// With several GPUs, enough for each to have one measuring and
		// one waiting.
		lookahead = max(2*c.CompileWorkers, 2*(1+len(c.GPUs)))
	}
	sr.Settings["lookahead"] = lookahead
	sr.Settings["in_flight"] = inFlight
	if c.Shard != "" {
		sr.Settings["shard"] = c.Shard
	}
	if t := req.Trials; req.Energy && t != nil && t.Thermal != "" && t.Thermal != measure.ThermalNone {
		sr.Settings["thermal"] = t.Thermal
	}
	if c.Confirm > 1 {
		rounds := c.ConfirmRounds
		if rounds <= 0 {
			rounds = DefaultConfirmRounds
		}
		sr.Settings["confirm"] = confirmSetting(c.Confirm, rounds, c.Objective.Name)
	}
	if c.Repeat > 1 {
		sr.Settings["repeat"] = c.Repeat
		if c.RepeatUntil > 0 {
			sr.Settings["repeat_until"] = c.RepeatUntil
		}
		sr.Settings["repeat_aggregate"] = "the median repeat by time; time interval: " + stats.MedianMethod
	}
	ex := c.Executor
	if ex == nil {
		ex = executor.NewPool(append([]backend.Backend{c.Backend}, c.GPUs...)...)
	}
	if n := len(ex.Shares()); n != 1+len(c.GPUs) {
		return nil, &ConfigError{fmt.Errorf("the executor has %d slots; the run has %d GPUs (Backend and GPUs)", n, 1+len(c.GPUs))}
	}
	shares, err := gpuShares(c)
	if err != nil {
		return nil, err
	}
	if shares != nil {
		uuids := make([]string, len(shares))
		for i, g := range shares {
			uuids[i] = g.UUID
		}
		sr.Settings["gpus"] = uuids
	}
	if err := c.DB.BeginRun(sr); err != nil {
		return nil, err
	}
	r := &run{compiler: compiler, anyDone: make(chan struct{}, 1),
		ctx: ctx, c: c, sub: sub, strat: strat, problem: problem, request: req, store: sr,
		sum:        &Summary{RunID: sr.ID, Device: dev, Objective: c.Objective, Objectives: c.Objectives, Strategy: c.Strategy, SpaceSize: size, GPUs: shares},
		workingSet: sub.workingSet(), started: time.Now(),
		maxEvals: maxEvals, timeLimit: timeLimit,
		work: make(chan *pending, lookahead), lookahead: lookahead,
	}
	if hasPool {
		r.pool, r.poolAtStart = pool, pool.Stats()
	}
	if len(c.RecordedOrder) > 0 {
		r.recordedPos = make(map[string]int, len(c.RecordedOrder))
		for i, k := range c.RecordedOrder {
			if _, dup := r.recordedPos[k]; !dup {
				r.recordedPos[k] = i
			}
		}
	}
	_, replay := backend.Capability[backend.Replayer](c.Backend)
	for _, k := range problem.Kernels {
		if v := k.Verification; v != nil && len(v.Expected) < countOutputs(k) && !replay {
			r.needReference = true
		}
	}
	r.ex, r.flight = ex, map[int]*pending{}
	r.startPool()
	return r, nil
}

// gpuShares checks the GPUs of a run over several (Config.GPUs): of
// Backend's model, each once. It returns their shares, Backend first;
// nil on one GPU.
func gpuShares(c Config) ([]GPUShare, error) {
	if len(c.GPUs) == 0 {
		return nil, nil
	}
	first := c.Backend.Device()
	shares := []GPUShare{{UUID: first.UUID, Name: first.Name}}
	seen := map[string]bool{first.UUID: true}
	for _, g := range c.GPUs {
		d := g.Device()
		if d.Name != first.Name {
			return nil, &ConfigError{fmt.Errorf("GPUs of different models in one run: %s (%s) and %s (%s); their results must not be mixed: tune each model in its own run", first.Name, first.UUID, d.Name, d.UUID)}
		}
		if seen[d.UUID] {
			return nil, &ConfigError{fmt.Errorf("GPU %s is given twice", d.UUID)}
		}
		seen[d.UUID] = true
		shares = append(shares, GPUShare{UUID: d.UUID, Name: d.Name})
	}
	return shares, nil
}

// elapsed is the run's time so far: the wall clock, or Config.Clock.
func (r *run) elapsed() time.Duration {
	if r.c.Clock != nil {
		return r.c.Clock()
	}
	return time.Since(r.started)
}

// verify reports whether the run checks outputs.
func (r *run) verify() bool {
	for _, k := range r.problem.Kernels {
		if k.Verification != nil {
			return true
		}
	}
	return false
}

// compilePool is a backend that compiles in worker processes
// (compileproc.Backend).
type compilePool interface{ Stats() compileproc.Stats }

// finish flags outliers of an unverified run, ranks the outcomes and
// closes the run in the database with status.
func (r *run) finish(status string, err error) (*Summary, error) {
	r.stopPool.Do(func() { close(r.work) })
	if r.warm != nil {
		r.warm.cancel()
	}
	if r.recorded != nil {
		if e := r.tell(r.recorded.flush()); e != nil && err == nil {
			err, status = e, "failed"
		}
	}
	if e := r.flushReuse(); e != nil && err == nil {
		err, status = e, "failed"
	}
	sum := r.sum
	if sum.GPUs != nil {
		for i, sh := range r.ex.Shares() {
			g := &sum.GPUs[i]
			g.Evaluated, g.Busy, g.Dropped = sh.Evaluated, sh.Busy, sh.Dropped
		}
	}
	sum.Elapsed = r.elapsed()
	sum.Compiled, sum.CompileReused = int(r.compiled.Load()), int(r.compileReused.Load())
	sum.Time.Compile = time.Duration(r.compileWall.Load())
	if r.pool != nil {
		st := r.pool.Stats().Since(r.poolAtStart)
		sum.CompilePool = &st
	}
	if !r.verify() {
		if e := flagOutliers(r.c, r.sub.outlierFactor(), sum); e != nil && err == nil {
			err = e
		}
	}
	sortBest(sum)
	paretoFront(sum)
	if e := r.c.DB.EndRun(r.store.ID, status); e != nil && err == nil {
		err = e
	}
	if r.c.Progress != nil {
		r.c.Progress.Finish()
	}
	return sum, err
}

func (r *run) interrupted() (*Summary, error) {
	r.sum.Interrupted = true
	return r.finish("interrupted", nil)
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
	if r.needReference {
		ref = func(ctx context.Context, be backend.Backend) error { return r.sub.reference(ctx, be, r.problem) }
	}
	return r.ex.Open(r.ctx, r.problem, ref)
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

// DefaultInFlight is Config.InFlight on a backend that compiles. On an
// H200, 25 evaluations of benchmark_hub's convolution, every
// configuration compiled (driver JIT cache off), took bayes_opt 66.9 and
// 70.3 s one at a time and 35.5 and 15.7 s with 4 in flight, transfer
// 33.6 / 42.3 s and 26.9 / 30.7 s (scripts/device-transfer.sh, seeds 1
// and 2). In the replay bayes_opt with 4 in flight closes 0.346 / 0.607 /
// 0.908 of random search's gap at 25 / 100 / 400 evaluations, against
// 0.399 / 0.647 / 0.919 one at a time; transfer 0.765 / 0.872 at 25 / 100
// against 0.777 / 0.863 (bench-strategies --gpus 4, the 8 hub caches, 100
// seeds; BENCHMARKS.md, "Compiling while measuring").
const DefaultInFlight = 4

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

// compile compiles plan's launches, each kernel instance once per run
// (binaries) and, with Config.CompileCache, once across runs. A single
// launch without the cache is compiled directly: a spec's configurations
// never repeat within a run. compileMs counts only what was compiled for
// this plan.
func (r *run) compile(plan *backend.Plan) compiled {
	var out compiled
	for i, l := range plan.Launches {
		var bin *backend.Binary
		var err error
		fresh, fromCache, cacheKey := true, false, ""
		t0 := time.Now()
		switch {
		case r.compiler != "":
			bin, fresh, fromCache, cacheKey, err = r.bins.cached(r.ctx, r.c.Backend, r.c.CompileCache, r.compiler, r.problem.Kernels[l.Job.Kernel], l.Job)
		case len(plan.Launches) == 1:
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

// budget combines the command line with the spec's T1 Budget b: the
// tighter of each bound wins.
func budget(c Config, b spec.Budget, size int) (int, time.Duration) {
	maxEvals := size
	if b.MaxConfigurations > 0 {
		maxEvals = min(maxEvals, b.MaxConfigurations)
	}
	if b.Fraction > 0 {
		maxEvals = min(maxEvals, max(1, int(math.Ceil(b.Fraction*float64(size)))))
	}
	if c.MaxEvals > 0 {
		maxEvals = min(maxEvals, c.MaxEvals)
	}
	limit := b.Duration
	if c.TimeLimit > 0 && (limit == 0 || c.TimeLimit < limit) {
		limit = c.TimeLimit
	}
	return maxEvals, limit
}

func countOutputs(k backend.Kernel) int {
	n := 0
	for _, a := range k.Args {
		if a.Output {
			n++
		}
	}
	return n
}

// evaluated shapes a trial's outcome (or, with out.Err a compile error
// and no trial, a failed compilation) into the configuration's
// evaluation: observations, metrics, objective; and commits it to the
// database. Errors: the database's, and an outcome's error that is not
// the configuration's (a stale binary compiled afresh and still refused,
// the context's).
func (r *run) evaluated(p *pending, out executor.Outcome) (*Evaluation, error) {
	t0 := time.Now()
	c := r.c
	key := p.plan.Key
	o := &Evaluation{Index: p.index, Key: key, Params: params(c.Space, p.cfg), slot: out.Slot, ended: out.Ended}
	ev := &store.Evaluation{
		RunID: r.store.ID, SpecHash: r.sub.hash(), DeviceUUID: r.sum.Device.UUID, Key: key,
		Params: o.Params, StartedAt: p.started,
	}
	if len(c.GPUs) > 0 {
		ev.GPU, o.GPU = out.GPU, out.GPU
	}
	if ce, ok := errors.AsType[*backend.CompileError](out.Err); ok {
		o.Status, o.Reason = backend.StatusCompileFailed, ce.Log
	} else if out.Err != nil {
		return nil, out.Err
	} else {
		ev.CompileMs = p.cr.compileMs
		r.measured(o, ev, p, out.Result, p.cr.compileMs)
		for i, l := range p.plan.Launches {
			if !c.DiscardPTX && l.Binary != nil && len(l.Binary.PTX) > 0 {
				ev.PTX = append(ev.PTX, store.KernelPTX{Launch: i, Kernel: r.problem.Kernels[l.Job.Kernel].KernelName, PTX: l.Binary.PTX})
			}
		}
	}
	if len(p.outs)+len(p.prior) > 1 {
		recs, m, values := r.repeatRecords(p)
		ev.Repeats = recs
		o.Repeats = values
		if o.Metrics == nil {
			o.Metrics = map[string]float64{}
		}
		for k, v := range m {
			o.Metrics[k] = v
		}
	}
	ev.Status, ev.Reason = string(o.Status), o.Reason
	ev.Observations, ev.Metrics = o.Observations, o.Metrics
	if o.Valid() {
		v := o.Value
		ev.Objective = &v
	}
	ev.FinishedAt = time.Now()
	// Framework time is the tuner's own work on this configuration
	// (metrics, objective, bookkeeping) on the wall clock. BenchmarkMs
	// cannot stand for the backend's part: the simulated GPU and a
	// replay report modelled or recorded benchmark times that are not
	// wall time here.
	framework := ev.FinishedAt.Sub(t0)
	ev.FrameworkMs = float64(framework.Microseconds()) / 1000
	r.sum.Time.Backend += p.runWall
	r.sum.Time.Framework += framework
	if err := c.DB.Add(ev); err != nil {
		return nil, err
	}
	o.evalID = ev.ID
	return o, nil
}

// staleBinaries gives the launches of a plan whose binary came from the
// compile cache's earlier contents and that the backend could not use
// (Result.BadBinaries, or a *backend.BinaryError of Run), and why; none
// when every such binary was used or came from this run's compilations.
func staleBinaries(cr compiled, res *backend.Result, err error) (launches []int, why string) {
	var bad []int
	if be, ok := errors.AsType[*backend.BinaryError](err); ok {
		bad, why = []int{be.Launch}, be.Error()
	} else if err == nil && res != nil {
		bad, why = res.BadBinaries, res.Reason
	}
	for _, i := range bad {
		if i >= 0 && i < len(cr.cacheKeys) && cr.cacheKeys[i] != "" {
			launches = append(launches, i)
		}
	}
	return launches, why
}

// recompile compiles again the launches of plan whose binaries from the
// compile cache the backend could not use (why), discarding the cache's
// entries (binaries.recompile), and puts the new binaries in the plan. It
// returns the compile time, ms. Errors: a compilation's.
func (r *run) recompile(plan *backend.Plan, cr compiled, launches []int, why string) (float64, error) {
	var ms float64
	for _, i := range launches {
		t0 := time.Now()
		bin, err := r.bins.recompile(r.ctx, r.c.Backend, r.c.CompileCache, cr.cacheKeys[i], plan.Launches[i].Job, why)
		r.compileWall.Add(int64(time.Since(t0)))
		if err != nil {
			return ms, err
		}
		r.compiled.Add(1)
		r.compileReused.Add(-1)
		plan.Launches[i].Binary = bin
		if i < len(cr.bins) {
			cr.bins[i] = bin // shared with the pending's: fill puts it in the plan again
		}
		ms += bin.CompileMs
	}
	return ms, nil
}

// measured fills the outcome and the evaluation from a backend's result:
// typed observations, metrics, plausibility and the objective.
func (r *run) measured(o *Evaluation, ev *store.Evaluation, p *pending, res *backend.Result, compileMs float64) {
	c := r.c
	o.Status, o.Reason, o.ArgumentMismatch = res.Status, res.Reason, res.ArgumentMismatch
	ev.TimesMs, ev.MaxError, ev.BenchmarkMs = res.TimesMs, res.MaxError, res.BenchmarkMs
	for i, l := range res.Launches {
		launch := p.plan.Launches[i]
		ev.Launches = append(ev.Launches, store.Launch{
			Kernel: r.problem.Kernels[launch.Job.Kernel].KernelName, Key: launch.Job.Key, Stream: launch.Stream,
			Registers: l.Registers, SharedStaticBytes: l.SharedStaticBytes, LocalBytes: l.LocalBytes,
			MaxThreadsPerBlock: l.MaxThreadsPerBlock, TimesMs: l.TimesMs,
		})
	}
	if len(res.Launches) > 0 {
		l := res.Launches[0]
		ev.Registers, ev.SharedStaticBytes, ev.LocalBytes = l.Registers, l.SharedStaticBytes, l.LocalBytes
	}
	if res.Status != backend.StatusValid {
		return
	}
	typed := objective.Observations(res, compileMs, r.sum.Device.Backend)
	ev.Typed, o.Typed = typed, typed
	o.Observations = typed.Plan()
	o.KernelTimes = kernelTimes(typed, p.plan, r.sub.members())
	m, merr := r.sub.metrics(o.Observations, p.cfg)
	o.Metrics = m
	if merr != nil {
		// Kept as a note: the configuration ran and verified.
		o.Reason = joinReasons(o.Reason, merr.Error())
	}
	if s := r.sub.spec(); s != nil {
		if why := checkPeaks(c, s, p.plan.Launches[0].Job, o, r.workingSet); why != "" {
			flag(o, why)
		}
	}
	abovePowerLimit(r.sum.Device.PowerLimitW, p.plan.Settings, o)
	if v, ok := c.Objective.Value(o.Observations, o.Metrics); ok {
		o.Value = v
	} else {
		o.Status, o.Reason = backend.StatusRuntimeFailed, joinReasons(fmt.Sprintf("objective %q was not observed", c.Objective.Name), o.Reason)
	}
}

// kernelTimes gives each kernel's time (ms) from its launch's typed
// observation "time"; nil for a single kernel.
func kernelTimes(typed measure.Observations, plan *backend.Plan, members int) []float64 {
	if members < 2 {
		return nil
	}
	out := make([]float64, members)
	for i := range out {
		out[i] = math.NaN()
	}
	for l, launch := range plan.Launches {
		if t, ok := typed.GetLaunch("time", l); ok && launch.Job.Kernel < members {
			out[launch.Job.Kernel] = t
		}
	}
	return out
}

// storedKernelTimes gives each kernel's time of a stored evaluation of a
// workload: the mean of its launch's times, the launches stored in issue
// order.
func (r *run) storedKernelTimes(idx int, e *store.Evaluation) []float64 {
	set, lay := r.sub.workloadSet()
	if set == nil || len(e.Launches) != len(set.Members) {
		return nil
	}
	w, err := set.Workload(lay, r.c.Space.Values(idx))
	if err != nil {
		return nil
	}
	out := make([]float64, len(e.Launches))
	for k, l := range e.Launches {
		out[w.Order[k]] = measure.Summarize(l.TimesMs).Mean
	}
	return out
}

// implausibleKey marks an implausible measurement among the observations
// (1), so that the flag is in the database and survives reuse.
const implausibleKey = "implausible"

// flag marks o implausible for why.
func flag(o *Evaluation, why string) {
	o.Implausible = why
	o.Reason = joinReasons(o.Reason, "implausible: "+why)
	if o.Observations == nil {
		o.Observations = map[string]float64{}
	}
	o.Observations[implausibleKey] = 1
}

// abovePowerLimit notes a mean power above the enforced power limit (the
// job's own nvml_pwr_limit, else the GPU's as found, deviceW), with why it can
// happen, and marks it in the observations (above_power_limit = 1): the
// GPU enforces its limit on an average over a longer time than one 100 ms
// counter period, and the counter and the limiter read different sensors,
// so a short measurement of a kernel run at the limit can land a few
// percent above it. The energy stands as measured.
func abovePowerLimit(deviceW float64, set *backend.Settings, o *Evaluation) {
	limit := deviceW
	if set != nil && set.PowerLimitW > 0 {
		limit = set.PowerLimitW
	}
	p, ok := o.Observations["power"]
	if !ok || limit <= 0 || p <= limit {
		return
	}
	o.Observations["above_power_limit"] = 1
	o.Reason = joinReasons(o.Reason, fmt.Sprintf("mean power %.0f W is above the enforced power limit of %.0f W (a limiter averages over longer than these trials and reads another sensor than the energy counter, and below its lowest SM clock it cannot hold the limit); the energy is as measured", p, limit))
}

// checkPeaks compares what a valid measurement implies with the GPU's
// peaks: throughput metrics (by unit, plausibility.RateOf) and the
// Gtune.Simulation FLOP and byte counts over the measured time.
func checkPeaks(c Config, s *spec.Spec, j *backend.Job, o *Evaluation, workingSet int64) string {
	var rates []plausibility.Rate
	for _, m := range s.Metrics {
		if v, ok := o.Metrics[m.Name]; ok {
			if r, ok := plausibility.RateOf(m.Name, m.Unit, v); ok {
				rates = append(rates, r)
			}
		}
	}
	if t := o.Observations["time"]; j.Work != nil && t > 0 {
		if j.Work.Flops > 0 {
			rates = append(rates, plausibility.Rate{Kind: plausibility.FLOPs, PerS: j.Work.Flops / (t / 1e3), From: "Gtune.Simulation.Flops over the time"})
		}
		if j.Work.Bytes > 0 {
			rates = append(rates, plausibility.Rate{Kind: plausibility.Bytes, PerS: j.Work.Bytes / (t / 1e3), From: "Gtune.Simulation.Bytes over the time"})
		}
	}
	return plausibility.CheckPeaks(rates, c.Peaks, workingSet)
}

// flagOutliers marks the valid outcomes of an unverified run that are far
// faster than their nearest measured neighbours (plausibility.Outliers),
// in the summary and in the database.
func flagOutliers(c Config, outlierFactor float64, sum *Summary) error {
	var pts []plausibility.Point
	var valid []*Evaluation
	for _, o := range sum.Evaluations {
		t, ok := o.Observations["time"]
		if !o.Valid() || !ok || o.Implausible != "" {
			continue
		}
		cfg := c.Space.Values(o.Index)
		vals := make([]int32, len(cfg))
		for k, v := range cfg {
			vals[k] = int32(slices.IndexFunc(c.Space.Params()[k].Values, v.Equal))
		}
		pts = append(pts, plausibility.Point{ID: len(valid), Values: vals, TimeMs: t})
		valid = append(valid, o)
	}
	for id, why := range plausibility.Outliers(pts, outlierFactor) {
		o := valid[id]
		flag(o, why)
		if o.evalID != 0 {
			if err := c.DB.Annotate(o.evalID, "implausible: "+why, implausibleKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// referencePrefix starts the names of the temporary directories that hold
// reference outputs; the process id after it lets a later run remove what
// a crashed one left (removeStaleReferenceDirs).
const referencePrefix = "gtune-reference-"

func newReferenceDir() (string, error) {
	removeStaleReferenceDirs(os.TempDir())
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", referencePrefix, os.Getpid()))
}

// removeStaleReferenceDirs deletes the reference directories in tmp whose
// process is gone (killed, crashed): a run removes its own at the end,
// but not after kill -9.
func removeStaleReferenceDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), referencePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || store.ProcessAlive(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}

// reuse turns a stored evaluation into an outcome. A valid evaluation that
// lacks the objective (say, energy was not measured then) is not reusable.
func reuse(c Config, idx int, e *store.Evaluation) (*Evaluation, bool) {
	o := &Evaluation{Index: idx, Key: e.Key, Params: e.Params, Status: backend.Status(e.Status), Reason: e.Reason,
		Observations: e.Observations, Metrics: e.Metrics, Reused: true, storedID: e.ID, GPU: e.GPU}
	if o.Valid() {
		v, ok := c.Objective.Value(e.Observations, e.Metrics)
		if !ok {
			return nil, false
		}
		o.Value = v
	}
	return o, true
}

func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func params(sp *space.Space, cfg []expr.Value) []store.Param {
	ps := sp.Params()
	out := make([]store.Param, len(ps))
	for i, p := range ps {
		out[i] = store.Param{Name: p.Name, Value: cfg[i].GoValue()}
	}
	return out
}

// paretoFront sets Summary.Front: the valid, plausible outcomes no other
// is better than in every objective at once (objective.ParetoFront),
// when the run has several objectives; an outcome missing one of them
// is left out.
func paretoFront(sum *Summary) {
	sum.Front = nil
	if len(sum.Objectives) < 2 {
		return
	}
	var pts []objective.Point
	var cands []*Evaluation
	for _, o := range sum.Evaluations {
		if !o.Valid() || o.Implausible != "" || o.Observations[implausibleKey] == 1 {
			continue
		}
		scores := make([]float64, len(sum.Objectives))
		ok := true
		for k, ob := range sum.Objectives {
			v, has := ob.Value(o.Observations, o.Metrics)
			ok = ok && has && !math.IsNaN(v)
			scores[k] = ob.Score(v)
		}
		if ok {
			pts = append(pts, objective.Point{ID: len(cands), Scores: scores})
			cands = append(cands, o)
		}
	}
	for _, id := range objective.ParetoFront(pts) {
		sum.Front = append(sum.Front, cands[id])
	}
}

// sortBest ranks the valid, plausible outcomes; implausible ones that
// would rank before the best are listed apart (Summary.Implausible).
func sortBest(sum *Summary) {
	var valid, flagged []*Evaluation
	for _, o := range sum.Evaluations {
		switch {
		case !o.Valid():
		case o.Implausible != "" || o.Observations[implausibleKey] == 1:
			flagged = append(flagged, o)
		default:
			valid = append(valid, o)
		}
	}
	better := func(a, b *Evaluation) bool { return sum.Objective.Score(a.Value) < sum.Objective.Score(b.Value) }
	sort.SliceStable(valid, func(i, j int) bool { return better(valid[i], valid[j]) })
	sort.SliceStable(flagged, func(i, j int) bool { return better(flagged[i], flagged[j]) })
	sum.Best = valid[:min(5, len(valid))]
	sum.Implausible = nil
	for _, o := range flagged {
		if len(valid) == 0 || better(o, valid[0]) {
			if o.Implausible == "" {
				o.Implausible = o.Reason
			}
			sum.Implausible = append(sum.Implausible, o)
		}
	}
}
