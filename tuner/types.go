package tuner

import (
	"errors"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/plausibility"
	"github.com/gtune/gtune/space"
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
	// slot is the executor's slot that measured it (calibration across
	// GPUs).
	slot int
}

// Valid reports whether the configuration ran and verified.
func (o *Evaluation) Valid() bool { return o.Status == backend.StatusValid }

// PowerLimit is the power limit o ran under, W: its nvml_pwr_limit, else
// deviceW, the GPU's as found (0: unknown).
func (o *Evaluation) PowerLimit(deviceW float64) float64 {
	for _, q := range o.Params {
		if w, ok := gpuctl.PowerLimitOf(q.Name, q.Value); ok {
			return w
		}
	}
	return deviceW
}

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
	// Prepare is the time the executor took to put the kernels'
	// arguments on every GPU (at once: the slowest GPU's), Reference the
	// reference run's after it (compiling and running the reference
	// configuration, keeping its outputs): the measurements start after
	// both. Zero on a modelled GPU (backend.Traits.Modelled) and in a
	// run that measured nothing.
	Prepare, Reference time.Duration
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
