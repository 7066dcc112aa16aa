package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/benchmark"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/internal/progress"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newBenchStrategiesCmd) }

// benchFlags are bench-strategies' flags.
type benchFlags struct {
	caches, strategies, specDirs, params, priorPool []string
	specPath, budgets                               string
	seeds, workers, gpus                            int
	asJSON, quick, noScore                          bool
}

func newBenchStrategiesCmd() *cobra.Command {
	var f benchFlags
	c := &cobra.Command{
		Use:   "bench-strategies",
		Short: "Compare search strategies on replayed Kernel Tuner caches (no GPU, no database)",
		Long: `bench-strategies runs each strategy many times against recorded Kernel Tuner caches and
reports, per budget of evaluations, the mean fraction of the optimum (optimum time / best time
found, 0 while nothing valid was found), the success rate (runs that found the optimum), and the
AutoTuningAssociation methodology score (best-so-far standardised against calculated random
search, averaged over the budgets where random search goes from halfway between the median and the
optimum to 96% of the way).

Every budget is a separate run in which the strategy is told that budget (as Kernel Tuner's
simulation mode is told max_fevals), so strategies that plan over their budget are judged as they
would run; the score comes from one more run per seed, told the end of the score window. Run k
(k = 0..N-1) of a strategy on a cache has the seed benchmark.Seed(cache name, strategy, k), a hash,
the same at every budget: reproducible, and different on every cache and for every strategy.

Each cache's search space is built from the T1 spec NAME.T1.json whose NAME prefixes the cache's
file name (convolution_milo_A100.json.gz -> convolution_milo.T1.json), looked up in --spec-dir.
Configurations of the spec's space that a cache lacks are left out of the space searched on that
cache (no strategy can propose one, none costs an evaluation: their outcome is unknown, and Kernel
Tuner's simulation mode refuses them); the output says how many each cache lacks. --spec names the
spec instead, or a workload file: the cache of a workload run (gtune export) is then replayed over
the workload's combined space.

The transfer strategy (never run unless named) learns from tuning results of the same kernel on
other GPUs: on each cache, its priors are the other caches of the same spec among --prior-cache
(default: the caches in ` + benchmark.DefaultHub + ` and the --cache files), never the evaluated cache itself.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return badInput("takes no arguments (%q): give recorded caches with --cache FILE, and the spec or workload they were recorded with by --spec FILE", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runBenchStrategies(cmd, f) },
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.caches, "cache", nil, "Kernel Tuner cache file (.json or .json.gz; repeatable; default: the caches in "+benchmark.DefaultHub+")")
	fl.StringArrayVar(&f.strategies, "strategy", nil, "strategy to run (repeatable; default: all but brute_force, nsga2 and the occupancy-guided ones)")
	fl.StringArrayVar(&f.specDirs, "spec-dir", nil, "directory of T1 specs NAME.T1.json (repeatable; default: "+benchmark.DefaultSpecDir+" and specs/ beside each cache)")
	fl.StringVar(&f.specPath, "spec", "", "the T1 spec or workload file every --cache was recorded with (default: looked up in --spec-dir by the cache's name); a workload run's cache comes from gtune export")
	fl.BoolVar(&f.noScore, "no-score", false, "leave out the methodology score and its run per seed told the end of the score window (thousands of evaluations on some caches): budgets only, much faster")
	fl.StringArrayVar(&f.params, "strategy-param", nil, "a hyperparameter STRATEGY.NAME=VALUE (repeatable)")
	fl.StringArrayVar(&f.priorPool, "prior-cache", nil, "cache the transfer strategy may take priors from (repeatable; default: the caches in "+benchmark.DefaultHub+" and the --cache files)")
	flagrange.Int(fl, &f.seeds, "seeds", 50, 1, 1_000_000, "runs per strategy, cache and budget (run k's seed: a hash of the cache name, the strategy and k)")
	flagrange.Int(fl, &f.workers, "workers", 0, 1, 4096, "parallel runs (default: the number of CPUs)")
	flagrange.Int(fl, &f.gpus, "gpus", 1, 1, 1024, "replay each run as a tuning run over this many GPUs (tune --devices): the strategy is told the batch and that many configurations are outstanding, each told first in, first out")
	fl.StringVar(&f.budgets, "budgets", "25,100,400,1600", "budgets in evaluations, comma-separated")
	fl.BoolVar(&f.asJSON, "json", false, "write JSON instead of a table")
	fl.BoolVar(&f.quick, "quick", false, "a quick comparison: 10 seeds at 25 and 100 evaluations (under a minute on two cores for the default caches and strategies); --seeds and --budgets still apply")
	return c
}

// runBenchStrategies replays the strategies on the caches and writes the
// table (or JSON).
func runBenchStrategies(cmd *cobra.Command, f benchFlags) error {
	bs, hp, err := checkBenchFlags(cmd, &f)
	if err != nil {
		return err
	}
	problems, priors, err := benchmark.LoadProblems(f.caches, f.specPath, f.specDirs, f.strategies, f.priorPool)
	if err != nil {
		return err
	}
	t0 := time.Now()
	total, evals := benchmark.Work(problems, len(f.strategies), f.seeds, bs, f.noScore)
	if !progress.Quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "gtune: bench-strategies: %d runs, %d evaluations to replay (%d caches × %d strategies × %d seeds × %d budgets%s); the progress line gives the time left at the rate so far\n",
			total, evals, len(problems), len(f.strategies), f.seeds, len(bs), map[bool]string{false: " and the score run", true: ""}[f.noScore])
	}
	st := progress.StartStep(cmd.ErrOrStderr(), "replaying the strategies")
	progress := func(runs, totalRuns int, done, all int64) {
		el := time.Since(t0)
		left := time.Duration(float64(el) * float64(all-done) / float64(max(done, 1)))
		st.Say(fmt.Sprintf("%d of %d runs, %d of %d evaluations, about %s left", runs, totalRuns, done, all, left.Round(time.Second)))
	}
	rs, err := benchmark.Evaluate(benchmark.Config{Problems: problems, Strategies: f.strategies, Params: hp, Seeds: f.seeds, Budgets: bs, Workers: f.workers, Priors: priors, GPUs: f.gpus, Progress: progress, NoScore: f.noScore})
	st.Finish()
	if err != nil {
		return inputError{err}
	}
	elapsed := time.Since(t0)
	means := append(benchmark.Mean(rs), benchmark.FamilyMeans(rs)...)
	workers := f.workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return report.BenchJSON(out, problems, rs, means, f.seeds, total, workers, elapsed, priors, f.noScore)
	}
	report.BenchTable(out, problems, rs, means, f.seeds, total, workers, elapsed, priors, f.noScore)
	return nil
}

// checkBenchFlags fills bench-strategies' defaults (--quick, the hub's
// caches, the spec directories, the strategies) and checks the flags:
// the budgets, seeds, strategies, their parameters (each of a strategy
// the run replays) and cache files. It returns the budgets and the
// parameters. Errors are bad input.
func checkBenchFlags(cmd *cobra.Command, f *benchFlags) ([]int, map[string]map[string]any, error) {
	if len(f.caches) == 0 && f.specPath != "" && workload.IsFile(f.specPath) {
		return nil, nil, badInput("--spec %s is a workload: give the cache of its run with --cache (gtune export RUN of a workload run writes one)", f.specPath)
	}
	if f.quick {
		// A minute on two cores: 10 seeds at 25 and 100 evaluations
		// (and the score runs), unless given.
		if !cmd.Flags().Changed("seeds") {
			f.seeds = 10
		}
		if !cmd.Flags().Changed("budgets") {
			f.budgets = "25,100"
		}
	}
	bs, err := benchmark.ParseBudgets(f.budgets)
	if err != nil {
		return nil, nil, err
	}
	if f.seeds <= 0 {
		return nil, nil, badInput("--seeds %d: want a positive number", f.seeds)
	}
	if len(f.caches) == 0 {
		if f.caches = benchmark.DefaultCaches(); len(f.caches) == 0 {
			return nil, nil, badInput("no --cache given and no caches in %s", benchmark.DefaultHub)
		}
	}
	if len(f.specDirs) == 0 {
		f.specDirs = []string{benchmark.DefaultSpecDir}
		for _, c := range f.caches {
			if d := filepath.Join(filepath.Dir(c), "specs"); !slices.Contains(f.specDirs, d) {
				f.specDirs = append(f.specDirs, d)
			}
		}
	}
	names, hp, err := benchmark.Strategies(f.strategies, f.params)
	if err != nil {
		return nil, nil, err
	}
	f.strategies = names
	for _, c := range f.caches {
		// Before the spec is looked up by the cache's name: a missing
		// file is the problem to report, not a missing spec.
		if st, err := os.Stat(c); err != nil {
			return nil, nil, badInput("--cache %s: %v", c, errors.Unwrap(err))
		} else if st.IsDir() {
			return nil, nil, badInput("--cache %s is a directory: give the cache files in it (--cache FILE.json.gz, repeatable)", c)
		}
	}
	return bs, hp, nil
}
