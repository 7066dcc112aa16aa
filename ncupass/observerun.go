package ncupass

import (
	"context"
	"io"

	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// ObserveRun profiles the valid configurations of a stored run (arg, its
// number in db) that lack metrics, with Nsight Compute on o's GPUs
// (Observe), later and on another host if need be: a sweep measured
// without --observe, or merged from shards, gets its counters in one
// pass over every GPU at hand. Counters are a GPU model's, so each worker
// must run on the run's model (o.Model is set to it). Errors (bad input):
// arg not a run of db, a run tuned from another spec than s (its hash),
// a run on the simulated GPU; Observe's.
func ObserveRun(ctx context.Context, stderr io.Writer, s *spec.Spec, db *store.DB, arg string, metrics []string, o Options) error {
	run, err := db.RunArg(arg)
	if err != nil {
		return err
	}
	id := run.ID
	if run.SpecHash != s.Hash {
		return badinput.New("run %d of %s tuned %s (spec hash %.12s), not %s as it is now (%.12s): profile a run with the spec it was tuned from",
			id, db.Path(), run.SpecPath, run.SpecHash, s.Path, s.Hash)
	}
	if run.Backend != "cuda" {
		return badinput.New("run %d of %s measured on the %s backend; ncu profiles configurations measured on a real GPU (--backend cuda)", id, db.Path(), run.Backend)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		return err
	}
	o.Model = run.DeviceName
	return Observe(ctx, stderr, s, sp, db, id, metrics, o)
}
