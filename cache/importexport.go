package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// StoreImport stores run (ImportRun's) in db with the evaluations of r
// over s's search space (ToEvaluations), in one go, and gives them with
// their count by status ("missing": configurations of the space the file
// lacks). Errors: none of the space in the file (bad input, badinput),
// the database's (the run is then marked failed).
func StoreImport(db *store.DB, r *Replay, s *spec.Spec, run *store.Run) ([]*store.Evaluation, map[string]int, error) {
	evals, counts := ToEvaluations(r, s)
	if len(evals) == 0 {
		return nil, nil, badinput.New("import: no configuration of %s's search space is in %s", s.Path, r.c.Path)
	}
	if err := db.BeginRun(run); err != nil {
		return nil, nil, err
	}
	for _, ev := range evals {
		ev.RunID = run.ID
	}
	if err := db.AddMany(evals); err != nil {
		_ = db.EndRun(run.ID, store.RunFailed)
		return nil, nil, err
	}
	if err := db.EndRun(run.ID, store.RunDone); err != nil {
		return nil, nil, err
	}
	return evals, counts, nil
}

// Export is run runID of the database at dbPath (opened read-only) as a
// Kernel Tuner cache file (format "kerneltuner") or a T4 results file
// ("t4"). Errors (bad input, badinput): an unknown format, no such run,
// a run without evaluations, a database that cannot be opened.
func Export(dbPath string, runID int64, format string) ([]byte, error) {
	if format != "kerneltuner" && format != "t4" {
		return nil, badinput.New("export: unknown format %q (valid: kerneltuner, t4)", format)
	}
	if runID <= 0 {
		return nil, badinput.New("export: which run? give RUN, a run number (gtune runs lists them)")
	}
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	defer db.Close()
	run, err := db.Run(runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, badinput.New("export: %s has no run %d", db.Path(), runID)
	} else if err != nil {
		return nil, err
	}
	evals, err := db.RunEvaluations(runID)
	if err != nil {
		return nil, err
	}
	if len(evals) == 0 {
		return nil, badinput.New("export: run %d of %s has no evaluations", runID, db.Path())
	}
	c, err := FromRun(run, evals)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	var buf bytes.Buffer
	if format == "t4" {
		err = c.WriteT4(&buf)
	} else {
		err = c.Write(&buf)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LoadWarn reads a Kernel Tuner cache or T4 file (Load), saying on
// log when the file ends early and only its complete entries were read
// (Kernel Tuner writes its cache entry by entry: a cache of a run still
// going, or one cut short). Errors are bad input (badinput).
func LoadWarn(log io.Writer, path string) (*Cache, error) {
	c, err := Load(path)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	if c.Truncated {
		fmt.Fprintf(log, "gtune: warning: %s ends early (a cache still being written, or cut short): read its %d complete entries\n", path, len(c.Entries))
	}
	return c, nil
}
