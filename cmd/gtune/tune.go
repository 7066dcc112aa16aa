package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/backend/remote"
	"github.com/gtune/gtune/check"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/internal/progress"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/ncupass"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/shard"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

type tuneFlags struct {
	backend, db, strategy, objective, simDevice string
	strategyParams, compilerOptions             []string
	device, maxEvals, inFlight                  int
	limits                                      spaceLimits
	timeLimit                                   time.Duration
	asJSON, fresh, noProgress, energy, orders   bool
	compileCache                                string // folder of the compile cache; "off": none
	// compileProcs is the number of compile processes: -1 decides (a
	// pool on a real GPU, none on the simulated one), 0 compiles in
	// this process.
	compileProcs   int
	compileTimeout time.Duration
	keepPTX        bool
	repeat         int
	repeatUntil    float64
	confirm        int
	confirmRounds  int
	thermal        string
	shard          string
	simRunWall     time.Duration
	// --slurm: the GPUs of the Slurm allocation, one srun worker each.
	slurm                        bool
	slurmNodes, slurmGPUsPerNode int
	srun                         string
	inOrder                      bool
	seed                         uint64
	gpu                          gpuctl.Options
	// observe is --observe (ncu[:METRIC,...]: a profiling pass after the
	// run), ncu the Nsight Compute command.
	observe, ncu string
	// devices is --devices: "all" or GPU indexes, "0,2,3"; "": --device.
	devices string
	// simIndex is the simulated GPU's ordinal (registry.Options.Index; --devices).
	simIndex int
	// interrupt, with --slurm, interrupts the run (a worker lost with
	// the allocation: scancel, the time limit).
	interrupt func()
	// workerSilence is --worker-silence: with --slurm, how long a GPU
	// worker may send nothing before it is given up.
	workerSilence time.Duration
	// validateOnly stops tune after every check of its input, before it
	// opens the database or a GPU (slurm submit checks a job's tuning
	// so, before the queue wait).
	validateOnly bool
}

func newTuneCmd() *cobra.Command { return newTuneCmdOpts(false) }

// newTuneCmdOpts is gtune tune; validateOnly makes it check its input
// and stop before the database and the GPU (tuneFlags.validateOnly).
func newTuneCmdOpts(validateOnly bool) *cobra.Command {
	f := tuneFlags{validateOnly: validateOnly}
	c := &cobra.Command{
		Use:   "tune SPEC | tune WORKLOAD",
		Short: "Tune a kernel: evaluate configurations on the GPU (or the simulated GPU) and report the best",
		Long: `Tune a kernel described by a T1 specification (JSON or YAML, with an optional Gtune section).
Every evaluation is committed to the results database as it completes; re-running the same spec on the
same device reuses what is stored unless --fresh is given.

A workload file (YAML or JSON with a "kernels" list, see docs/WORKLOADS.md) tunes several kernels run
together on one GPU: the combined space of their configurations (and GPU settings, one for the chip; with
--orders the launch orders too), each configuration measured as one plan of concurrent launches.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkGPUFlags(cmd.Flags(), f.gpu); err != nil {
				return err
			}
			if err := deviceOrDevices(cmd); err != nil {
				return err
			}
			if !f.slurm {
				for _, name := range []string{"nodes", "gpus-per-node", "srun", "worker-silence"} {
					if cmd.Flags().Changed(name) {
						return badInput("--%s takes effect only with --slurm", name)
					}
				}
			}
			if workload.IsFile(args[0]) {
				if f.observe != "" {
					return badInput("--observe profiles the configurations of a spec; the kernels of a workload: gtune schedule WORKLOAD --profile ncu")
				}
				return runTuneWorkload(cmd.Context(), cmd, args[0], f)
			}
			if f.orders {
				return badInput("--orders takes a workload file, not a spec")
			}
			return runTune(cmd.Context(), cmd, args[0], f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.observe, "observe", "", "ncu or ncu:METRIC,...: after the run, profile each valid configuration with Nsight Compute (read-only, --clock-control none) in a separate pass and store the metrics as observations (default: DRAM, L2 and L1 throughput, achieved occupancy, IPC, warp stall reasons)")
	fl.StringVar(&f.ncu, "ncu", "ncu", "the Nsight Compute command (--observe ncu)")
	fl.StringVar(&f.backend, "backend", "auto", "GPU backend: auto (CUDA when a driver is present, else the simulator), cuda, sim, or model (the projection of --sim-device from its device profile: gtune probe's in --db, else its specifications')")
	flagrange.Int(fl, &f.device, "device", 0, 0, 1023, "GPU index (CUDA device ordinal)")
	fl.StringVar(&f.devices, "devices", "", "tune on several GPUs of one model as one run: all, or GPU indexes such as 0,2,3 (one GPU worker each, one compile pool; on the simulated GPU, that many simulated GPUs of one model)")
	fl.BoolVar(&f.slurm, "slurm", false, "tune on every GPU of the Slurm allocation this runs in (salloc or a batch script): one GPU worker per GPU, each a job step started by srun, speaking to this process over srun's standard input and output; the strategy and the database stay here")
	flagrange.Int(fl, &f.slurmNodes, "nodes", 0, 0, 100000, "with --slurm: nodes of the allocation to use (0: SLURM_JOB_NUM_NODES)")
	flagrange.Int(fl, &f.slurmGPUsPerNode, "gpus-per-node", 0, 0, 1024, "with --slurm: GPU workers per node (0: SLURM_GPUS_ON_NODE or SLURM_GPUS_PER_NODE)")
	fl.StringVar(&f.srun, "srun", "srun", "with --slurm: the srun command")
	flagrange.BoundedDuration(fl, &f.workerSilence, "worker-silence", remote.DefaultSilence, 3*remote.HeartbeatInterval, 24*time.Hour, "with --slurm: give up a GPU worker that sends nothing, not even a keep-alive (sent every 10 s while it measures), for this long: its node died or its connection hangs; its configuration goes to another worker")
	flagrange.BoundedDuration(fl, &f.simRunWall, "sim-run-wall", 0, 0, time.Minute, "on the simulated GPU: hold each evaluation this long (e.g. 200ms), standing for a real kernel's evaluation time (scaling and fault tests over several GPUs and nodes)")
	fl.StringVar(&f.simDevice, "sim-device", "", "device-database id of the simulated GPU (default: the spec's Gtune.Simulation.Device, else h100_sxm)")
	fl.StringVar(&f.db, "db", "gtune.db", "results database (SQLite)")
	fl.StringVar(&f.strategy, "strategy", "", "search strategy: "+strings.Join(strategy.Names(), ", ")+fmt.Sprintf(" (default: the spec's Search.Name, else brute_force up to %d configurations and %s above, with %d evaluations unless a budget is given; %s where the results database holds this kernel's results on another GPU)", strategy.BruteForceMax, strategy.DefaultSearch, strategy.DefaultSearchBudget, strategy.DefaultTransfer))
	fl.StringArrayVar(&f.strategyParams, "strategy-param", nil, "a strategy hyperparameter NAME=VALUE (repeatable; overrides the spec's Search.Attributes)")
	fl.StringArrayVar(&f.compilerOptions, "compiler-option", nil, "an NVRTC option added after the spec's CompilerOptions, e.g. --compiler-option=-ftz=true (repeatable; results are kept apart from those compiled without it)")
	flagrange.Int(fl, &f.repeat, "repeat", 1, 1, 1000, "measure each configuration this many times (on any GPU of the run) and keep every repeat; the evaluation is the median repeat by time, with the time's 95 % interval of the median (order statistics) in its metrics time_ci_low and time_ci_high")
	fl.Float64Var(&f.repeatUntil, "repeat-until", 0, "with it --repeat N is a cap (default 30): measure each configuration again, one repeat at a time, until the 95 % interval of its median time is within ±this many percent (6 repeats at least)")
	flagrange.Int(fl, &f.confirm, "confirm", 0, 0, 1000, "at the end, re-measure the best K configurations by the objective (time, energy, EDP, a metric), interleaved (ABAB), until each differs significantly from the next (Mann-Whitney U, p < 0.05) or --confirm-rounds rounds are done; the summary says which differences are significant (0: no confirmation)")
	flagrange.Int(fl, &f.confirmRounds, "confirm-rounds", 10, 1, 10000, "with --confirm: the most re-measurements of each configuration")
	fl.StringVar(&f.shard, "shard", "", "tune shard I/K of the search space: every K-th configuration from the I-th (0-based), for K jobs that cannot talk to each other (brute_force, random_sample); gtune merge joins their databases into one run (gtune slurm submit --shards K writes such a job)")
	flagrange.Int(fl, &f.maxEvals, "max-evals", 0, 0, math.MaxInt, "evaluate at most this many configurations (0: no limit beyond the spec's Budget)")
	flagrange.Int(fl, &f.inFlight, "in-flight", 0, 0, 1024, fmt.Sprintf("per GPU, the configurations bayes_opt and transfer keep in progress, compiling while one is measured: more is faster where compiling takes longer than measuring, and needs a few more evaluations to find as good a configuration (0: %d on a GPU, 1 on the simulated GPU)", tuner.DefaultInFlight))
	addSpaceFlags(fl, &f.limits)
	flagrange.Duration(fl, &f.timeLimit, "time-limit", 0, 0, "stop proposing configurations after this wall time, e.g. 10m (0: no limit)")
	flagrange.List(fl, &f.objective, "objective", "objective: time, energy, power, edp or a metric of the spec's Gtune.Metrics (default: the spec's Gtune.Objective, else time); a comma-separated list, e.g. time,energy, gives the Pareto front (and is what nsga2 searches)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document instead of the table")
	fl.BoolVar(&f.fresh, "fresh", false, "re-measure configurations already in the database")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the strategy and the simulator")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no progress bar or progress lines (as the global --quiet)")
	addGPUFlags(fl, &f.gpu)
	addCompileFlags(fl, &f)
	fl.BoolVar(&f.inOrder, "in-order", false, "evaluate the configurations in the order proposed, not in the order their compilations finish (the default on a real GPU; the simulated GPU's compilations take no time, so it always evaluates in order)")
	fl.BoolVar(&f.orders, "orders", false, "a workload: search the kernels' launch orders too (every permutation, the written order first)")
	fl.StringVar(&f.thermal, "thermal", "", "energy from a GPU at another temperature: none, steady (warm the GPU up to a thermal steady state before the first energy measurement), model (fit the leakage slope, W/°C, on the warm-up and correct each energy to Gtune.Measurement.ReferenceTemperature, default 60 °C), steady+model, settle (measure from the start after a short warm-up; once the GPU is at a thermal steady state, re-measure the configurations measured while it warmed that could still be the best) (default: the spec's Gtune.Measurement.Thermal, else steady)")
	fl.BoolVar(&f.energy, "energy", false, "measure energy and power for every configuration (an energy window of Gtune.Measurement.EnergyWindowSeconds each); --energy=false never measures them (default: when the objective or a metric needs them)")
	return c
}

func runTune(ctx context.Context, cmd *cobra.Command, path string, f tuneFlags) error {
	s, err := spec.Load(path)
	if err != nil {
		return err
	}
	if err := applyKernelFlags(cmd, f, s); err != nil {
		return err
	}
	pre, err := checkTune(ctx, cmd, s, &f)
	if err != nil || f.validateOnly {
		return err
	}
	g, err := openRunGPUs(ctx, cmd, &f, s, s, pre.objs)
	if err != nil {
		return err
	}
	defer g.close()
	ctx = g.ctx
	// The configurations' geometry against this GPU's launch limits, as
	// check does against the simulated one.
	if d, err := tuner.Description(g.be); err == nil {
		if s.DeclaredSpace() != "" { // this GPU's space: its limits, not the spec's Constants
			if s, err = spec.LoadWith(path, spec.LoadOptions{Device: d}); err != nil {
				return err
			}
			if err := applyKernelFlags(cmd, f, s); err != nil {
				return err
			}
			if pre.sp, err = checkedSpace(ctx, s, f); err != nil {
				return err
			}
		}
		w, err := check.GeometryFit(ctx, s, pre.sp, d, "")
		if err != nil {
			return err
		}
		if w != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "gtune: warning:", w)
		}
	}
	// GPU settings (gpuctl.Setup): parameters added, checked, applied
	// from this process before each Run and restored by the deferred Close.
	gr, err := gpuctl.Setup(ctx, cmd.ErrOrStderr(), s, pre.sp, g.be, f.gpu, g.db.Path())
	if err != nil {
		return err
	}
	defer gr.Close()
	if err := gr.AddGPUs(g.more); err != nil {
		return err
	}
	sp := pre.sp
	if gr != nil {
		if p := gr.Plan(); p != nil {
			report.SettingsPlan(cmd.OutOrStdout(), p)
			return nil
		}
		sp = gr.Space()
	}
	if sp, err = pre.shardOf(cmd.ErrOrStderr(), sp); err != nil {
		return err
	}
	cfg, err := specConfig(ctx, cmd, f, s, sp, g, pre)
	if err != nil {
		return err
	}
	if err := completeConfig(ctx, cmd, f, &cfg, gr); err != nil {
		return err
	}
	sum, err := runAndReport(ctx, cmd, cfg, f, g.db.Path(), func(out io.Writer, sum *tuner.Summary) {
		report.TuneTable(out, s.Metrics, sum, g.db.Path())
	})
	if err != nil || len(pre.observe) == 0 {
		return err
	}
	o := ncupass.Options{Ncu: f.ncu, Device: f.device, Version: version, CompileCache: cfg.CompileCache}
	if f.devices != "" { // the pass over every GPU of the run
		if o.Devices, err = gpuIndexes(f); err != nil {
			return err
		}
	}
	return ncupass.Observe(ctx, cmd.ErrOrStderr(), s, sp, g.db, sum.RunID, pre.observe, o)
}

// tuneChecks is what checkTune found before any GPU work: the
// objectives, the strategy named (or the spec's), the Nsight Compute
// observers asked for, the shard to take and the search space.
type tuneChecks struct {
	objs     []objective.Objective
	strategy string
	observe  []string
	shardOf  func(io.Writer, *space.Space) (*space.Space, error)
	sp       *space.Space
}

// checkTune checks everything a tuning run of s asks before any GPU
// work: objectives and energy, the strategy and its parameters (under
// --validate-only: nothing more), --observe, GPU settings, the shard,
// repeats, the search space and every configuration's expressions, and
// on a modelled GPU its memory. Errors are bad input.
func checkTune(ctx context.Context, cmd *cobra.Command, s *spec.Spec, f *tuneFlags) (*tuneChecks, error) {
	c := &tuneChecks{}
	var err error
	if c.objs, err = objective.ResolveList(s, f.objective); err != nil {
		return nil, err
	}
	for _, o := range c.objs {
		if e := s.Measurement.Energy; e != nil && !*e && s.ObjectiveNeedsEnergy(o.Name) {
			what := "Gtune.Measurement.Energy is false"
			if cmd.Flags().Changed("energy") {
				what = "--energy=false"
			}
			return nil, badInput("%s, but the objective %s needs energy measurements", what, o.Name)
		}
	}
	if c.strategy, err = strategy.Resolve(f.strategy, s.Strategy); err != nil {
		return nil, err
	}
	if c.observe, err = checkObserve(s, *f); err != nil {
		return nil, err
	}
	if err := gpuctl.Preflight(s, f.gpu, modelled(f.backend)); err != nil {
		return nil, err
	}
	if c.shardOf, err = shard.Restrictor(f.shard, c.strategy); err != nil {
		return nil, err
	}
	if err := repeatFlags(cmd, f); err != nil {
		return nil, err
	}
	if c.sp, err = checkedSpace(ctx, s, *f); err != nil {
		return nil, err
	}
	for _, w := range s.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "gtune: warning:", w)
	}
	if f.validateOnly {
		params, err := strategy.MergeParams(s.Strategy, s.StrategyOptions, f.strategyParams)
		if err != nil {
			return nil, err
		}
		return c, strategy.CheckParams(c.strategy, c.sp, params, f.seed, len(c.objs))
	}
	return c, nil
}

// checkObserve reads --observe: Nsight Compute profiles a real GPU at
// its clocks as found, so not a modelled one, nor GPU settings tuned.
func checkObserve(s *spec.Spec, f tuneFlags) ([]string, error) {
	observe, err := ncupass.ParseObserve(f.observe)
	if err != nil || len(observe) == 0 {
		return observe, err
	}
	if modelled(f.backend) {
		return nil, badInput("--observe ncu profiles a real GPU with Nsight Compute; the simulated GPU has no counters (--backend cuda on a machine with a GPU and ncu)")
	}
	if f.gpu.Strategy != "" || slices.ContainsFunc(s.Params, func(p space.Param) bool { return strings.HasPrefix(p.Name, "nvml_") }) {
		return nil, badInput("--observe ncu profiles at the GPU's clocks as found; it does not combine with GPU settings as tunable parameters")
	}
	return observe, nil
}

// checkedSpace builds s's search space and checks every configuration's
// expressions, and on a modelled GPU its memory (as check sees it; a real
// GPU's is the driver's business at the first allocation). Errors: an
// empty space, the checks', as bad input.
func checkedSpace(ctx context.Context, s *spec.Spec, f tuneFlags) (*space.Space, error) {
	sp, err := buildSpace(ctx, s, f.limits)
	if err != nil {
		return nil, err
	}
	if sp.Len() == 0 {
		return nil, badInput("%s: the search space has no valid configuration (%.0f raw, every one excluded by the restrictions)", s.Path, sp.RawCount())
	}
	if err := s.CheckJobs(ctx, sp); err != nil {
		return nil, err
	}
	if modelled(f.backend) {
		d, err := registry.SimulatedGPU(f.simDevice, s)
		if err != nil {
			return nil, err
		}
		if err := check.ArgumentsFit(s, d); err != nil {
			return nil, err
		}
	}
	return sp, nil
}

// specConfig is the run's configuration for spec s over sp: its
// strategy (the default where none is named: brute force up to
// strategy.BruteForceMax configurations, else the best measured search,
// transfer from the kernel's results on the database's other GPUs where
// it has some), its parameters and the GPU's peaks for plausibility.
func specConfig(ctx context.Context, cmd *cobra.Command, f tuneFlags, s *spec.Spec, sp *space.Space, g *runGPUs, pre *tuneChecks) (tuner.Config, error) {
	strat := pre.strategy
	// defaultPrior: transfer was chosen for dbPriors, the kernel's
	// results on the database's other GPUs, which the run then takes as
	// they are (Provide would read them again).
	defaultPrior := false
	var dbPriors []strategy.PriorTimes
	if f.strategy == "" && s.Strategy == "" && f.shard == "" {
		budget := f.maxEvals
		if m := s.Budget.MaxConfigurations; m > 0 && (budget == 0 || m < budget) {
			budget = m
		}
		if sp.Len() > strategy.BruteForceMax {
			var err error
			if dbPriors, err = tuner.DatabasePriors(g.db, s.Hash, g.be.Device().UUID, sp, pre.objs[0]); err != nil {
				return tuner.Config{}, err
			}
		}
		name, evals, why := strategy.Default(sp.Len(), budget, f.timeLimit > 0 || s.Budget.Duration > 0, len(dbPriors))
		strat, defaultPrior = name, name == strategy.DefaultTransfer
		if evals > 0 {
			f.maxEvals = evals
		}
		if name != "brute_force" {
			// Brute force was the only default before: say so when it
			// is not the one.
			fmt.Fprintln(cmd.ErrOrStderr(), "gtune:", why)
		}
	}
	params, err := strategy.MergeParams(s.Strategy, s.StrategyOptions, f.strategyParams)
	if err != nil {
		return tuner.Config{}, err
	}
	if _, ok := params["prior"]; defaultPrior && !ok {
		params["prior"] = tuner.PriorDatabase
	}
	cfg := runConfig(f, g, pre.objs, strat, params)
	cfg.Subject, cfg.Space = tuner.FromSpec(s), sp
	if defaultPrior {
		cfg.Priors = dbPriors
		for _, p := range dbPriors {
			fmt.Fprintf(cmd.ErrOrStderr(), "transfer: prior %s\n", p.Source)
		}
	}
	d, err := tuner.Description(g.be)
	if err != nil {
		d = nil
	}
	cfg.Peaks = tuner.Peaks(d, s)
	return cfg, nil
}

// thermalFlag checks --thermal: a policy measure knows, and one that
// acts on energy only where energy is measured (--energy=false with a
// policy other than none would be ignored without a word).
func thermalFlag(cmd *cobra.Command, f tuneFlags) error {
	if err := measure.CheckThermal(f.thermal); err != nil {
		return badInput("--thermal: %v", err)
	}
	if cmd.Flags().Changed("energy") && !f.energy && f.thermal != "none" {
		return badInput("--thermal %s acts on energy measurements, and --energy=false measures none: drop one of them", f.thermal)
	}
	return nil
}

// addCompileFlags adds --compile-cache, --no-compile-cache,
// --compile-processes and --compile-timeout.
func addCompileFlags(fl *pflag.FlagSet, f *tuneFlags) {
	flagrange.AutoInt(fl, &f.compileProcs, "compile-processes", -1, 0, 4096, "compile in this many worker processes (0: in this process; auto: one per CPU, at most one per GiB of available memory, on a real GPU, and none on the simulated GPU; a run that measures energy leaves one CPU to the GPU worker)")
	flagrange.BoundedDuration(fl, &f.compileTimeout, "compile-timeout", 5*time.Minute, time.Second, 24*time.Hour, "a compilation in a worker process taking longer fails its configuration (the process is killed)")
	fl.StringVar(&f.compileCache, "compile-cache", "", "folder of the compile cache, binaries kept between runs and reused (default: $GTUNE_COMPILE_CACHE, else the user's cache folder, e.g. ~/.cache/gtune/kernels; bounded to 2 GiB)")
	fl.Bool("no-compile-cache", false, "compile every kernel the run needs, without reading or writing the compile cache")
	fl.BoolVar(&f.keepPTX, "keep-ptx", true, "keep each compiled configuration's PTX in the results database, for gtune project --emulate (where the backend makes PTX: the CUDA backend)")
}

// openCompileCache opens the compile cache the flags ask for; nil with
// --no-compile-cache or GTUNE_COMPILE_CACHE=off. A cache that cannot be
// opened is reported on log and the run compiles without it.
func openCompileCache(cmd *cobra.Command, f tuneFlags) *compilecache.Cache {
	if off, _ := cmd.Flags().GetBool("no-compile-cache"); off {
		return nil
	}
	dir := cmp.Or(f.compileCache, os.Getenv("GTUNE_COMPILE_CACHE"))
	if dir == "off" {
		return nil
	}
	if dir == "" {
		var err error
		if dir, err = compilecache.DefaultDir(); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "gtune: no compile cache (%v); every kernel is compiled\n", err)
			return nil
		}
	}
	c, err := compilecache.Open(dir, 0)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "gtune: no compile cache (%v); every kernel is compiled\n", err)
		return nil
	}
	stderr := cmd.ErrOrStderr()
	var mu sync.Mutex // the compile pool's workers warn concurrently
	c.SetWarn(func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "gtune: warning: %s\n", msg)
	})
	return c
}

// completionOrder says whether a run evaluates in the order compilations
// finish (tuner.Config.CompletionOrder): on a real GPU unless --in-order.
// A simulated GPU's compilations take no real time, so the order they end
// in would be the goroutines' scheduling, not compile time: it evaluates
// in proposal order, which keeps its runs reproducible.
func completionOrder(be backend.Backend, f tuneFlags) bool {
	return !backend.TraitsOf(be).InstantCompile && !f.inOrder
}

// openRunDB opens the results database of a tuning run and marks the
// runs a crash left open as interrupted. A bad path is bad input.
func openRunDB(path string) (*store.DB, error) {
	db, err := store.Open(path)
	if err != nil {
		return nil, inputError{err}
	}
	if _, err := db.MarkInterrupted(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// runAndReport runs the tuner with cfg (a progress bar on stderr unless
// --no-progress) and prints its summary: JSON with --json, else table.
// The error is the run's; an interrupted run says that what was done is
// in the database.
func runAndReport(ctx context.Context, cmd *cobra.Command, cfg tuner.Config, f tuneFlags, dbPath string, table func(io.Writer, *tuner.Summary)) (*tuner.Summary, error) {
	if !f.noProgress && !progress.Quiet {
		cfg.Progress = progress.New(cmd.ErrOrStderr(), cfg.Objective, 1+len(cfg.GPUs))
	}
	// The run's executor: one slot per GPU (the GPU-settings wrappers
	// included), opened by the tuner when it first needs a GPU.
	cfg.Executor = executor.NewPool(append([]backend.Backend{cfg.Backend}, cfg.GPUs...)...)
	sum, err := tuner.Run(ctx, cfg)
	if sum == nil {
		return nil, err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		if e := report.TuneJSON(out, sum, dbPath); e != nil {
			return sum, e
		}
	} else {
		table(out, sum)
	}
	if sum.Interrupted {
		return sum, errors.New("interrupted; the evaluations done so far are in the database")
	}
	return sum, err
}

// spaceLimits bound a search space's construction: its valid
// configurations (space.BuildOptions.MaxConfigurations) and the partial
// configurations examined to find them (MaxExamined).
type spaceLimits struct {
	maxConfigs, maxExamined int
}

// addSpaceFlags adds --max-configurations and --max-examined.
func addSpaceFlags(fl *pflag.FlagSet, v *spaceLimits) {
	flagrange.Int(fl, &v.maxConfigs, "max-configurations", space.DefaultMaxConfigurations, 1, math.MaxInt,
		"refuse a search space with more valid configurations than this (memory grows with them: about 121 bytes each, space package)")
	flagrange.Int(fl, &v.maxExamined, "max-examined", defaultMaxExamined, 1, math.MaxInt,
		"stop building a search space after examining this many partial configurations: restrictions that prune late can make a huge raw space take hours")
}

// buildSpace builds the search space, stopping within a second when ctx
// ends (SIGINT, SIGTERM). A space over the limit is bad input.
func buildSpace(ctx context.Context, s *spec.Spec, lim spaceLimits) (*space.Space, error) {
	return buildSpaceExamined(ctx, s, lim.maxConfigs, uint64(lim.maxExamined))
}

// defaultMaxExamined bounds a search space's construction
// (--max-examined). It was 10^10, sized for 10^7 partial configurations
// a second; with restrictions that are slow to evaluate and prune late, a
// raw space of 9.6·10^13 then built for hours before the bound stopped
// it. A space that needs more asks for it.
const defaultMaxExamined = 1_000_000_000

// buildSpaceExamined is buildSpace with a bound on the partial
// configurations examined; progress goes to stderr (a spinner with the
// count and the time left on a terminal, a line every 10 s otherwise).
func buildSpaceExamined(ctx context.Context, s *spec.Spec, limit int, maxExamined uint64) (*space.Space, error) {
	var sp *space.Space
	st := progress.StartStep(os.Stderr, "building the search space")
	sp, err := s.BuildSpaceContext(ctx, space.BuildOptions{MaxConfigurations: limit, LimitName: "--max-configurations",
		MaxExamined: maxExamined, ExaminedName: "--max-examined",
		Progress: func(n uint64, f float64) { st.Say(progress.SpaceDetail(n, f, st.Elapsed())) }})
	st.Finish()
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted while building the search space of %s", s.Path)
	}
	return sp, err
}

// openBackend opens the backend the flags ask for, compiling in worker
// processes as --compile-processes says (compileproc).
func openBackend(ctx context.Context, log io.Writer, s *spec.Spec, f tuneFlags) (backend.Backend, error) {
	k, err := registry.Resolve(f.backend)
	if err != nil {
		return nil, err
	}
	be, err := registry.Open(ctx, k, backendOptions(s, f))
	if err != nil {
		return nil, err
	}
	if k.Fallback {
		fmt.Fprintf(log, "gtune: no CUDA driver here; tuning on the simulated GPU %s (--backend cuda says why)\n", be.Device().Name)
	}
	// The flags' ranges are checked where they are parsed: -1 (the
	// default) lets gtune decide, 0 compiles in this process; a library
	// routine is not compiled, so it starts no compile process.
	procs := f.compileProcs
	if procs == -1 && s != nil && s.Routine() != nil {
		procs = 0
	}
	return registry.WithCompileProcesses(be, procs, f.compileTimeout)
}

// allowSettings says whether the run may change GPU settings: the
// permission every GPU of the run is opened with, real or simulated (the
// others of --devices too: they were once opened without it, so that a
// run tuning GPU settings over several GPUs failed every plan on GPUs
// 1..n).
func allowSettings(f tuneFlags) bool { return f.gpu.Allow && !f.gpu.DryRun }

// backendOptions are what the flags give every GPU of a run: the GPU
// (--device; a simulated GPU's index among several), the simulated GPU's
// model, seed and wall time, the settings permission, and the database
// a projection reads profiles from.
func backendOptions(s *spec.Spec, f tuneFlags) registry.Options {
	return registry.Options{Device: f.device, Index: f.simIndex, SimDevice: f.simDevice, Seed: int64(f.seed), RunWall: f.simRunWall,
		AllowSettings: allowSettings(f), ProfileDB: f.db, Spec: s}
}

// modelled says whether --backend name resolves to a GPU whose results
// come from a model (registry.Kind.Modelled: the simulated GPU, auto
// without a CUDA driver, a projection): it needs a spec's
// Gtune.Simulation work, and touches no GPU.
func modelled(name string) bool {
	k, err := registry.Resolve(name)
	return err == nil && k.Modelled
}

// repeatFlags checks --repeat and --repeat-until: a percentage above 0,
// and a cap that lets the interval reach 95 % (6 repeats); without
// --repeat, --repeat-until caps at 30.
func repeatFlags(cmd *cobra.Command, f *tuneFlags) error {
	if cmd.Flags().Changed("confirm-rounds") && f.confirm == 0 {
		return badInput("--confirm-rounds bounds the re-measurements of --confirm K; give --confirm 2 or more with it")
	}
	if f.confirm == 1 {
		return badInput("--confirm 1: confirm compares the best configurations with each other; give 2 or more")
	}
	if f.repeatUntil == 0 {
		return nil
	}
	if !(f.repeatUntil > 0 && f.repeatUntil < 100) {
		return badInput("--repeat-until %v: want a half-width in percent, above 0 and below 100 (e.g. 1 for ±1 %%)", f.repeatUntil)
	}
	if !cmd.Flags().Changed("repeat") {
		f.repeat = 30
	}
	if f.repeat < 6 {
		return badInput("--repeat %d with --repeat-until: the 95 %% interval of a median needs 6 repeats at least; give --repeat 6 or more (the cap)", f.repeat)
	}
	return nil
}
