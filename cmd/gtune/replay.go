package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
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
	listFlagVar(fl, &f.objective, "objective", "objective: time, energy, power, edp or a metric of the spec (default: the spec's, else time)")
	intFlag(fl, &f.maxEvals, "max-evals", 0, 0, math.MaxInt, "evaluate at most this many configurations per repeat (0: no limit beyond the spec's Budget)")
	durationFlag(fl, &f.timeLimit, "time-limit", 0, 0, "stop when the recorded compile+verification+benchmark time reaches this, e.g. 1h (0: no limit)")
	intFlag(fl, &f.repeats, "repeats", 1, 1, 1_000_000, "run the strategy this many times, with seeds seed, seed+1, ...")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the first repeat")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document instead of the table")
	fl.StringVar(&f.db, "db", "", "keep the replayed runs in this results database (default: none)")
	fl.BoolVar(&f.recordedOrder, "recorded-order", false, "tell the strategy the results in the order the cache's timestamps record (the recorded run's order, e.g. completion order), as far as the configurations outstanding allow; with the recorded run's strategy, seed and --lookahead the run is replayed exactly")
	intFlag(fl, &f.lookahead, "lookahead", 0, 1, 1_000_000, "configurations proposed and not yet told at most (default 2; a gtune run records its own: gtune show RUN --json, settings.lookahead)")
	return c
}

// report.ReplayRepeat is one run of the strategy.

func loadReplaySpec(c *cache.Cache, path string) (*spec.Spec, func(), error) {
	if path != "" {
		s, err := spec.LoadWith(path, spec.LoadOptions{NoSource: true})
		return s, func() {}, err
	}
	for _, n := range c.ParamNames {
		if kernel, _, ok := strings.Cut(n, "."); ok {
			return nil, nil, badInput("%s is the cache of a workload run (parameter %s of kernel %s): give the workload file with --spec", c.Path, n, kernel)
		}
	}
	b, err := c.T1()
	if err != nil {
		return nil, nil, inputError{err}
	}
	dir, err := os.MkdirTemp("", "gtune-replay-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(c.Path), ".gz"), ".json") + ".T1.json"
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		cleanup()
		return nil, nil, err
	}
	s, err := spec.LoadWith(p, spec.LoadOptions{NoSource: true})
	if err != nil {
		cleanup()
		// The spec is a temporary file the user never saw: name the
		// cache instead.
		if se, ok := errors.AsType[*spec.Error](err); ok {
			se.File = c.Path + " (its tune_params read as a T1 spec)"
			return nil, nil, inputError{se}
		}
		return nil, nil, fmt.Errorf("the spec made from %s: %w", c.Path, err)
	}
	return s, cleanup, nil
}

// replayBatch and replayBatchDelay are the batches a replay commits its
// evaluations in (store.DB.SetBatch): at most 256 evaluations or 1 s
// old.
const (
	replayBatch      = 256
	replayBatchDelay = time.Second
)

func runReplay(ctx context.Context, cmd *cobra.Command, cachePath string, f replayFlags) (err error) {
	c, err := loadCache(cmd.ErrOrStderr(), cachePath)
	if err != nil {
		return err
	}
	rs, cleanup, err := replaySubject(ctx, c, f.spec)
	if err != nil {
		return err
	}
	defer cleanup()
	s, sp := rs.spec, rs.sp
	obj, err := resolveObjective(s, f.objective)
	if err != nil {
		return err
	}
	stratName, err := resolveStrategy(s, f.strategy)
	if err != nil {
		return err
	}
	params, err := strategyParams(s, f.strategyParams)
	if err != nil {
		return err
	}
	// Checked once here so that a mismatch is an input error before any run.
	probe, err := cache.NewReplay(c, sp)
	if err != nil {
		return inputError{err}
	}
	optKey, optVal := replayOptimum(probe, sp, obj.Name)
	if f.recordedOrder && len(c.RecordedOrder()) == 0 {
		return badInput("--recorded-order: %s has no timestamps to order its entries by", c.Path)
	}
	db, dbPath, closeDB, err := openReplayDB(f.db)
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
	inputs := tuner.Config{Subject: rs.subject, Space: sp, Backend: first, DB: db, Strategy: stratName, StrategyParams: params}
	if err := inputs.Provide(ctx, cmd.ErrOrStderr()); err != nil {
		return inputError{err}
	}
	inputs.Objective = obj
	reps, err := replayRepeats(ctx, cmd, c, inputs, f)
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

// replayed is what a replay tunes: the spec its objective and strategy
// resolve against, the tuner's subject and the search space.
type replayed struct {
	spec    *spec.Spec
	subject tuner.Subject
	sp      *space.Space
}

// replaySubject is what cache c replays over: a workload's combined
// space where specPath is a workload file (a workload's run, exported
// with gtune export; its objective and strategy resolve against its
// first kernel's spec, without that spec's metrics: a plan has none, and
// a recording has no outputs to check), else the spec's (loadReplaySpec:
// the configurations the cache records where none is given). cleanup
// removes what loadReplaySpec made. Errors: an empty space, bad input.
func replaySubject(ctx context.Context, c *cache.Cache, specPath string) (replayed, func(), error) {
	var r replayed
	cleanup := func() {}
	var err error
	if specPath != "" && workload.IsFile(specPath) {
		set, err := loadWorkload(specPath)
		if err != nil {
			return r, cleanup, err
		}
		no := false
		set.Measurement = &workload.FileMeasurement{Verify: &no}
		first := *set.Members[0].Spec
		first.Path, first.Metrics, first.Objective, first.ObjectiveMaximize = set.Path, nil, "time", false
		sp, lay, err := workloadSpace(ctx, set, false, space.DefaultMaxConfigurations)
		if err != nil {
			return r, cleanup, err
		}
		r = replayed{spec: &first, subject: tuner.FromWorkload(set, lay), sp: sp}
	} else {
		if r.spec, cleanup, err = loadReplaySpec(c, specPath); err != nil {
			return r, cleanup, err
		}
		r.subject = tuner.FromSpec(r.spec)
		if r.sp, err = r.spec.BuildSpace(); err != nil {
			return r, cleanup, err
		}
	}
	if r.sp.Len() == 0 {
		return r, cleanup, badInput("%s: the search space has no valid configuration", r.spec.Path)
	}
	return r, cleanup, nil
}

// openReplayDB opens the replay's database: path, else a temporary one
// removed at close. A replay can be run again at no cost, so it trades
// the live tuner's one committed transaction per evaluation (about 1 ms
// of fsync each, more than the replay's own work) for batches; a crash
// loses at most the open batch, and EndRun commits each repeat's last
// batch. close closes it (its error loses evaluations) and removes a
// temporary one.
func openReplayDB(path string) (*store.DB, string, func() error, error) {
	remove := func() {}
	if path == "" {
		dir, err := os.MkdirTemp("", "gtune-replay-db-")
		if err != nil {
			return nil, "", nil, err
		}
		remove = func() { os.RemoveAll(dir) }
		path = filepath.Join(dir, "replay.db")
	}
	db, err := store.Open(path)
	if err != nil {
		remove()
		return nil, "", nil, inputError{err}
	}
	closeDB := func() error {
		err := db.Close()
		remove()
		return err
	}
	if err := db.SetBatch(replayBatch, replayBatchDelay); err != nil {
		closeDB()
		return nil, "", nil, err
	}
	return db, path, closeDB, nil
}

// replayRepeats runs the replay f.repeats times over fresh replays of c,
// repeat i with seed f.seed+i, and gives each one's account. Every
// repeat starts from nothing, and one compile worker keeps the
// strategy's view of outstanding results the same on every machine, so
// that a seed replays identically. Errors: a run's (other than finding
// nothing valid), an interruption.
func replayRepeats(ctx context.Context, cmd *cobra.Command, c *cache.Cache, inputs tuner.Config, f replayFlags) ([]report.ReplayRepeat, error) {
	var reps []report.ReplayRepeat
	bar := activity(cmd.ErrOrStderr(), "replaying", f.repeats)
	defer bar.Finish()
	for i := 0; i < f.repeats; i++ {
		_ = bar.Set(i)
		r, err := cache.NewReplay(c, inputs.Space)
		if err != nil {
			return nil, inputError{err}
		}
		seed := f.seed + uint64(i)
		rc := inputs
		rc.Backend, rc.Seed, rc.MaxEvals, rc.TimeLimit, rc.Clock = r, seed, f.maxEvals, f.timeLimit, r.Charged
		rc.Fresh, rc.CompileWorkers, rc.GtuneVersion = true, 1, version
		rc.Lookahead = f.lookahead
		if f.recordedOrder {
			rc.RecordedOrder = c.RecordedOrder()
		}
		sum, err := tuner.Run(ctx, rc)
		if sum == nil {
			return nil, err
		}
		if err != nil && !errors.Is(err, tuner.ErrNoValid) {
			return nil, fmt.Errorf("repeat %d (seed %d): %w", i+1, seed, err)
		}
		if sum.Interrupted {
			return nil, errors.New("interrupted")
		}
		rep := report.ReplayRepeat{Seed: seed, RunID: sum.RunID, Evaluated: sum.Evaluated, Invalid: sum.Invalid, ChargedS: r.ChargedMs() / 1000}
		if len(sum.Best) > 0 {
			b := sum.Best[0]
			v := b.Value
			rep.BestKey, rep.Best = b.Key, &v
			rep.Params = map[string]any{}
			for _, p := range b.Params {
				rep.Params[p.Name] = p.Value
			}
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// replayOptimum is the best recorded value of a built-in objective over
// the space's configurations, as the replay reports it: time (ms), energy
// (J), power (W), edp (J·s); "" when the cache does not record it or the
// objective is a metric.
func replayOptimum(r *cache.Replay, sp *space.Space, objective string) (string, float64) {
	best, bestKey := math.Inf(1), ""
	for i := 0; i < sp.Len(); i++ {
		e, ok := r.Entry(sp.Key(i))
		if !ok || !e.Valid() {
			continue
		}
		if objective != "time" && objective != "energy" && objective != "power" && objective != "edp" {
			return "", math.NaN()
		}
		v, ok := e.Objective(objective)
		if !ok {
			continue
		}
		if !math.IsNaN(v) && v < best {
			best, bestKey = v, sp.Key(i)
		}
	}
	if bestKey == "" {
		return "", math.NaN()
	}
	return bestKey, best
}
