package main

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/internal/progress"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/replay"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/tuner"
)

func init() { subcommands = append(subcommands, newReplayCmd) }

type replayFlags struct {
	spec, strategy, objective, db string
	strategyParams                []string
	maxEvals, repeats, lookahead  int
	timeLimit                     time.Duration
	seed                          uint64
	asJSON, recordedOrder         bool
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	c := &cobra.Command{
		Use:   "replay CACHE",
		Short: "Run a search strategy against a recorded Kernel Tuner cache or T4 file instead of a GPU",
		Long: `Run a search strategy against the measurements recorded in a Kernel Tuner cache file (.json or
.json.gz, also one still being written) or a T4 results file, as Kernel Tuner's simulation mode does:
every configuration the strategy chooses is answered with its recorded times and status.

The search space comes from --spec (its tunable parameters and restrictions; the cache must hold every
configuration they allow). Without --spec it is the cache's tune_params restricted to the configurations
the cache records. --time-limit is charged with the recorded compile, verification and benchmark times,
not wall time. --repeats R runs the strategy R times with seeds seed .. seed+R-1.

Nothing is kept unless --db is given (a temporary database is used and removed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runReplay(cmd.Context(), cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.spec, "spec", "", "T1 spec whose tunable parameters and restrictions give the search space (default: the cache's recorded configurations)")
	fl.StringVar(&f.strategy, "strategy", "", "search strategy: "+strings.Join(strategy.Names(), ", ")+" (default: the spec's Search.Name, else brute_force)")
	fl.StringArrayVar(&f.strategyParams, "strategy-param", nil, "a strategy hyperparameter NAME=VALUE (repeatable)")
	flagrange.List(fl, &f.objective, "objective", "objective: time, energy, power, edp or a metric of the spec (default: the spec's, else time)")
	flagrange.Int(fl, &f.maxEvals, "max-evals", 0, 0, math.MaxInt, "evaluate at most this many configurations per repeat (0: no limit beyond the spec's Budget)")
	flagrange.Duration(fl, &f.timeLimit, "time-limit", 0, 0, "stop when the recorded compile+verification+benchmark time reaches this, e.g. 1h (0: no limit)")
	flagrange.Int(fl, &f.repeats, "repeats", 1, 1, 1_000_000, "run the strategy this many times, with seeds seed, seed+1, ...")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the first repeat")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document instead of the table")
	fl.StringVar(&f.db, "db", "", "keep the replayed runs in this results database (default: none)")
	fl.BoolVar(&f.recordedOrder, "recorded-order", false, "tell the strategy the results in the order the cache's timestamps record (the recorded run's order, e.g. completion order), as far as the configurations outstanding allow; with the recorded run's strategy, seed and --lookahead the run is replayed exactly")
	flagrange.Int(fl, &f.lookahead, "lookahead", 0, 1, 1_000_000, "configurations proposed and not yet told at most (default 2; a gtune run records its own: gtune show RUN --json, settings.lookahead)")
	return c
}

func runReplay(ctx context.Context, cmd *cobra.Command, cachePath string, f replayFlags) (err error) {
	c, err := cache.LoadWarn(cmd.ErrOrStderr(), cachePath)
	if err != nil {
		return err
	}
	rs, cleanup, err := replay.Load(ctx, c, f.spec)
	if err != nil {
		return err
	}
	defer cleanup()
	s, sp := rs.Spec, rs.Space
	obj, err := objective.Resolve(s, f.objective)
	if err != nil {
		return err
	}
	stratName, err := strategy.Resolve(f.strategy, s.Strategy)
	if err != nil {
		return err
	}
	params, err := strategy.MergeParams(s.Strategy, s.StrategyOptions, f.strategyParams)
	if err != nil {
		return err
	}
	// Checked once here so that a mismatch is an input error before any run.
	probe, err := cache.NewReplay(c, sp)
	if err != nil {
		return inputError{err}
	}
	optKey, optVal := replay.Optimum(probe, sp, obj.Name)
	if f.recordedOrder && len(c.RecordedOrder()) == 0 {
		return badInput("--recorded-order: %s has no timestamps to order its entries by", c.Path)
	}
	db, dbPath, closeDB, err := replay.OpenDB(f.db)
	if err != nil {
		return err
	}
	defer func() {
		// Close commits the last batch: its failure loses evaluations.
		if cerr := closeDB(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// The strategy's declared inputs (priors, ...) are the same for every
	// repeat: provided once.
	first, err := cache.NewReplay(c, sp)
	if err != nil {
		return inputError{err}
	}
	inputs := tuner.Config{Subject: rs.Subject, Space: sp, Backend: first, DB: db, Strategy: stratName, StrategyParams: params}
	if err := inputs.Provide(ctx, cmd.ErrOrStderr()); err != nil {
		return inputError{err}
	}
	inputs.Objective = obj
	bar := progress.Activity(cmd.ErrOrStderr(), "replaying", f.repeats)
	reps, err := replay.Run(ctx, c, inputs, replay.Repeats{N: f.repeats, Seed: f.seed, MaxEvals: f.maxEvals, TimeLimit: f.timeLimit,
		Lookahead: f.lookahead, RecordedOrder: f.recordedOrder, Version: version, Step: func(i, _ int) { _ = bar.Set(i) }})
	bar.Finish()
	if err != nil {
		return err
	}
	if f.db == "" {
		dbPath = ""
	}
	specLabel := s.Path
	if f.spec == "" {
		specLabel = "(the configurations the cache records)"
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return report.ReplayJSON(out, c, specLabel, sp, probe, stratName, obj.Name, obj.Direction(), optKey, optVal, reps, dbPath)
	}
	report.ReplayTable(out, c, specLabel, sp, probe, stratName, obj.Name, optKey, optVal, reps, dbPath)
	return nil
}
