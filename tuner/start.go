package tuner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/stats"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

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
	req := requestOf(c, sub)
	problem.Energy = req.Energy
	pool, hasPool := backend.Capability[compilePool](c.Backend)
	c.CompileWorkers = compileWorkers(c, pool, hasPool, req.Energy)
	if s, ok := backend.Capability[processStarter](c.Backend); ok {
		// The compile processes start while the GPUs open and warm up;
		// no more than the run can keep busy (the reference included).
		s.Start(min(c.CompileWorkers, (maxEvals+1)*max(1, len(problem.Kernels))))
	}
	// The look-ahead: configurations proposed and not yet told. Twice
	// the compilations in flight keeps the pool busy while the GPU
	// measures; a run's told order depends on it (RecordedOrder). With
	// several GPUs, enough for each to have one measuring and one
	// waiting.
	lookahead := c.Lookahead
	if lookahead <= 0 {
		lookahead = max(2*c.CompileWorkers, 2*(1+len(c.GPUs)))
	}
	sr := runRecord(c, sub, req, maxEvals, timeLimit)
	runSettings(sr, c, req, lookahead, inFlight)
	compiler := compilerOf(c, sr)
	ex, shares, err := executorOf(c, sr)
	if err != nil {
		return nil, err
	}
	if err := c.DB.BeginRun(sr); err != nil {
		return nil, err
	}
	dev := c.Backend.Device()
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
	r.recordedPos = recordedPositions(c.RecordedOrder)
	r.needReference = needsReference(c.Backend, problem)
	r.ex, r.flight = ex, map[int]*pending{}
	r.startPool()
	return r, nil
}

// requestOf is the measurement every configuration of the run gets: the
// subject's, with energy where an objective needs it and the power
// sensor's lag where the device database knows it (observers that
// integrate sampled power: measure.CorrectLag).
func requestOf(c Config, sub Subject) measure.Request {
	req := sub.request()
	for _, o := range c.Objectives {
		if o.Name == objective.Energy || o.Name == objective.Power || o.Name == objective.EDP {
			req.Energy = true
		}
	}
	if d, err := Description(c.Backend); err == nil {
		req.SensorLagS = d.SensorCapacitanceS
	}
	return req
}

// compileWorkers is Config.CompileWorkers, or where unset one per CPU
// (with compile processes, compileproc, one compilation in flight per
// process), one core left free for the backend's worker when it
// measures energy: its polling of the energy counter suffers when every
// core compiles (measure.PeriodEstimate).
func compileWorkers(c Config, pool compilePool, hasPool, energy bool) int {
	if c.CompileWorkers > 0 {
		return c.CompileWorkers
	}
	n := runtime.NumCPU()
	if hasPool {
		n = pool.Stats().Processes
	}
	if energy && n >= runtime.NumCPU() {
		n = max(1, runtime.NumCPU()-1)
	}
	return n
}

// runRecord is the run's record for the store: what is tuned, on what,
// its budget and the GPU as found when the run began (read-only NVML
// readings, the report's facts: its clocks, the SM clock idle as it
// usually is then, and its enforced power limit).
func runRecord(c Config, sub Subject, req measure.Request, maxEvals int, timeLimit time.Duration) *store.Run {
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
	if x, ok := sub.(specSubject); ok && x.s.Routine() != nil {
		sr.Settings[store.SettingLibrary] = x.s.Routine().Name
	}
	if set, lay := sub.workloadSet(); set != nil {
		sr.Settings["kernels"] = len(set.Members)
		sr.Settings["orders"] = lay.Order >= 0
	}
	return sr
}

// runSettings records in sr how the run measures: its look-ahead and
// configurations in flight, shard, thermal policy, confirmation and
// repeats.
func runSettings(sr *store.Run, c Config, req measure.Request, lookahead, inFlight int) {
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
}

// compilerOf is the identity of the backend's compiler and target where
// the run has a compile cache and the backend says what decides its
// binaries besides the job (backend.Compiler): binaries are cached
// across runs only then. "" otherwise.
func compilerOf(c Config, sr *store.Run) string {
	if c.CompileCache == nil {
		return ""
	}
	cc, ok := backend.Capability[backend.Compiler](c.Backend)
	if !ok {
		return ""
	}
	id, err := cc.CompilerID()
	if err != nil {
		return ""
	}
	sr.Settings["compile_cache"] = c.CompileCache.Dir()
	return id
}

// executorOf is Config.Executor, else a Pool over the run's GPUs, with
// the GPUs' shares (nil on one GPU), recorded in sr. Errors: an executor
// whose slots are not the run's GPUs; GPUs of different models, or one
// named twice (gpuShares).
func executorOf(c Config, sr *store.Run) (executor.Executor, []GPUShare, error) {
	ex := c.Executor
	if ex == nil {
		ex = executor.NewPool(append([]backend.Backend{c.Backend}, c.GPUs...)...)
	}
	if n := len(ex.Shares()); n != 1+len(c.GPUs) {
		return nil, nil, &ConfigError{fmt.Errorf("the executor has %d slots; the run has %d GPUs (Backend and GPUs)", n, 1+len(c.GPUs))}
	}
	shares, err := gpuShares(c)
	if err != nil {
		return nil, nil, err
	}
	if shares != nil {
		uuids := make([]string, len(shares))
		for i, g := range shares {
			uuids[i] = g.UUID
		}
		sr.Settings["gpus"] = uuids
	}
	return ex, shares, nil
}

// recordedPositions maps each key of a recorded order to its first
// place in it; nil without one.
func recordedPositions(order []string) map[string]int {
	if len(order) == 0 {
		return nil
	}
	pos := make(map[string]int, len(order))
	for i, k := range order {
		if _, dup := pos[k]; !dup {
			pos[k] = i
		}
	}
	return pos
}

// needsReference says whether the run computes reference outputs: a
// kernel verified against fewer expected outputs than it writes, on a
// backend that runs kernels (a replay has none to run).
func needsReference(be backend.Backend, problem *backend.Problem) bool {
	if _, replay := backend.Capability[backend.Replayer](be); replay {
		return false
	}
	for _, k := range problem.Kernels {
		if v := k.Verification; v != nil && len(v.Expected) < countOutputs(k) {
			return true
		}
	}
	return false
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

// compilePool is a backend that compiles in worker processes
// (compileproc.Backend).
type compilePool interface{ Stats() compileproc.Stats }

// processStarter is a compile pool whose processes can start before the
// first compilation (compileproc.Backend.Start).
type processStarter interface{ Start(n int) <-chan struct{} }

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
