// Package replay runs the tuner's driver over a recorded Kernel Tuner
// cache or T4 file (cache.Replay) instead of a GPU, as Kernel Tuner's
// simulation mode does: what `gtune replay` and, through the same
// driver, a strategy benchmark measure. It resolves what a cache replays
// over (a spec, a workload's combined space, or the configurations the
// cache records), opens the replay's database and runs repeats with
// consecutive seeds.
package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

// Batch and BatchDelay are the batches a replay commits its evaluations
// in (store.DB.SetBatch): at most 256 evaluations or 1 s old.
const (
	Batch      = 256
	BatchDelay = time.Second
)

// Subject is what a replay tunes: the spec its objective and strategy
// resolve against, the tuner's subject and the search space.
type Subject struct {
	Spec    *spec.Spec
	Subject tuner.Subject
	Space   *space.Space
}

// Load is what cache c replays over: a workload's combined space where
// specPath is a workload file (a workload's run, exported with gtune
// export; its objective and strategy resolve against its first kernel's
// spec, without that spec's metrics: a plan has none, and a recording
// has no outputs to check), else the spec's (the configurations the
// cache records where specPath is empty: its tune_params read as a T1
// spec). cleanup removes what Load made. Errors: an empty space, bad
// input (badinput), an interruption while building a workload's space.
func Load(ctx context.Context, c *cache.Cache, specPath string) (Subject, func(), error) {
	var r Subject
	cleanup := func() {}
	var err error
	if specPath != "" && workload.IsFile(specPath) {
		set, err := workload.Load(specPath)
		if err != nil {
			return r, cleanup, badinput.Wrap(err)
		}
		no := false
		set.Measurement = &workload.FileMeasurement{Verify: &no}
		first := *set.Members[0].Spec
		first.Path, first.Metrics, first.Objective, first.ObjectiveMaximize = set.Path, nil, "time", false
		sp, lay, err := set.NonEmptySpace(ctx, false, space.DefaultMaxConfigurations)
		if err != nil {
			return r, cleanup, err
		}
		r = Subject{Spec: &first, Subject: tuner.FromWorkload(set, lay), Space: sp}
	} else {
		if r.Spec, cleanup, err = loadSpec(c, specPath); err != nil {
			return r, cleanup, err
		}
		r.Subject = tuner.FromSpec(r.Spec)
		if r.Space, err = r.Spec.BuildSpace(); err != nil {
			return r, cleanup, err
		}
	}
	if r.Space.Len() == 0 {
		return r, cleanup, badinput.New("%s: the search space has no valid configuration", r.Spec.Path)
	}
	return r, cleanup, nil
}

// loadSpec is the spec at path, else c's tune_params written to a
// temporary T1 file (removed by cleanup) and loaded.
func loadSpec(c *cache.Cache, path string) (*spec.Spec, func(), error) {
	if path != "" {
		// With its kernel source where the file is there, so that the
		// spec's hash is a tuning run's: what a run kept by it (the PTX
		// transfer's prior=projection emulates) is found. A replay needs
		// no source: without the file the spec is loaded without it.
		if s, err := spec.Load(path); err == nil {
			return s, func() {}, nil
		}
		s, err := spec.LoadWith(path, spec.LoadOptions{NoSource: true})
		return s, func() {}, err
	}
	for _, n := range c.ParamNames {
		if kernel, _, ok := strings.Cut(n, "."); ok {
			return nil, nil, badinput.New("%s is the cache of a workload run (parameter %s of kernel %s): give the workload file with --spec", c.Path, n, kernel)
		}
	}
	b, err := c.T1()
	if err != nil {
		return nil, nil, badinput.Wrap(err)
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
			return nil, nil, badinput.Wrap(se)
		}
		return nil, nil, fmt.Errorf("the spec made from %s: %w", c.Path, err)
	}
	return s, cleanup, nil
}

// OpenDB opens the replay's database: path, else a temporary one removed
// at close. A replay can be run again at no cost, so it trades the live
// tuner's one committed transaction per evaluation (about 1 ms of fsync
// each, more than the replay's own work) for batches (Batch,
// BatchDelay); a crash loses at most the open batch, and EndRun commits
// each repeat's last batch. close closes it (its error loses
// evaluations) and removes a temporary one. Errors: a database that
// cannot be opened (bad input).
func OpenDB(path string) (*store.DB, string, func() error, error) {
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
		return nil, "", nil, badinput.Wrap(err)
	}
	closeDB := func() error {
		err := db.Close()
		remove()
		return err
	}
	if err := db.SetBatch(Batch, BatchDelay); err != nil {
		closeDB()
		return nil, "", nil, err
	}
	return db, path, closeDB, nil
}

// Repeats says how Run repeats a replay.
type Repeats struct {
	N         int           // repeats (at least 1)
	Seed      uint64        // seed of the first; repeat i has Seed+i
	MaxEvals  int           // configurations per repeat at most (0: no limit)
	TimeLimit time.Duration // of recorded compile, verification and benchmark time (0: none)
	Lookahead int           // configurations proposed and not yet told (0: the tuner's default)
	// RecordedOrder tells results in the order the cache's timestamps
	// record (cache.RecordedOrder).
	RecordedOrder bool
	Version       string                // gtune's, recorded with each run
	Step          func(done, total int) // called before each repeat; nil: none
}

// Run runs the replay r.N times over fresh replays of c, repeat i with
// seed r.Seed+i, and gives each one's account. inputs holds the subject,
// space, database, strategy and the strategy's declared inputs (provided
// once: they are the same for every repeat). Every repeat starts from
// nothing, and one compile worker keeps the strategy's view of
// outstanding results the same on every machine, so that a seed replays
// identically. Errors: a run's (other than finding nothing valid), an
// interruption, a cache that does not cover the space (bad input).
func Run(ctx context.Context, c *cache.Cache, inputs tuner.Config, r Repeats) ([]report.ReplayRepeat, error) {
	var reps []report.ReplayRepeat
	for i := 0; i < r.N; i++ {
		if r.Step != nil {
			r.Step(i, r.N)
		}
		rp, err := cache.NewReplay(c, inputs.Space)
		if err != nil {
			return nil, badinput.Wrap(err)
		}
		seed := r.Seed + uint64(i)
		rc := inputs
		rc.Backend, rc.Seed, rc.MaxEvals, rc.TimeLimit, rc.Clock = rp, seed, r.MaxEvals, r.TimeLimit, rp.Charged
		rc.Fresh, rc.CompileWorkers, rc.GtuneVersion = true, 1, r.Version
		rc.Lookahead = r.Lookahead
		if r.RecordedOrder {
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
		reps = append(reps, account(sum, seed, rp))
	}
	return reps, nil
}

// account is one repeat's line of the replay's report.
func account(sum *tuner.Summary, seed uint64, rp *cache.Replay) report.ReplayRepeat {
	rep := report.ReplayRepeat{Seed: seed, RunID: sum.RunID, Evaluated: sum.Evaluated, Invalid: sum.Invalid, ChargedS: rp.ChargedMs() / 1000}
	if len(sum.Best) > 0 {
		b := sum.Best[0]
		v := b.Value
		rep.BestKey, rep.Best = b.Key, &v
		rep.Params = map[string]any{}
		for _, p := range b.Params {
			rep.Params[p.Name] = p.Value
		}
	}
	return rep
}

// Optimum is the best recorded value of a built-in objective over the
// space's configurations, as the replay reports it: time (ms), energy
// (J), power (W), edp (J·s); "" and NaN when the cache does not record
// it or the objective is a metric.
func Optimum(r *cache.Replay, sp *space.Space, objective string) (string, float64) {
	if objective != "time" && objective != "energy" && objective != "power" && objective != "edp" {
		return "", math.NaN()
	}
	best, bestKey := math.Inf(1), ""
	for i := 0; i < sp.Len(); i++ {
		e, ok := r.Entry(sp.Key(i))
		if !ok || !e.Valid() {
			continue
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
