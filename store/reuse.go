package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
)

// migrateV4 adds the reuse links: which stored evaluations a run took
// from earlier runs instead of measuring them again (a re-run, a resume).
// Without them a run's report held only what its own process measured,
// so the report of a resumed run disagreed with what tune printed.
// position is a reused evaluation's place in the order the run was told
// its results (0 first), which places it among the run's own ones;
// objective is its value under the reusing run's objective, which may
// differ from the one it was measured under. evaluations.gpu records the
// GPU of each evaluation of a run over several (Evaluation.GPU). The
// runs' backend names become free-form (not empty).
func migrateV4(ctx context.Context, tx *sql.Tx) error {
	const schema = `
ALTER TABLE evaluations ADD COLUMN gpu TEXT NOT NULL DEFAULT '';
CREATE TABLE run_reuse (
	run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
	position      INTEGER NOT NULL,
	objective     REAL,
	PRIMARY KEY (run_id, evaluation_id)
) WITHOUT ROWID;
`
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	// Backend names are free-form from version 4 on: an executor of
	// another kind (a Slurm task, a projection model) records its own.
	return replaceRunsCheck(ctx, tx, "CHECK (backend IN ('cuda', 'sim', 'replay'))", "CHECK (backend <> '')")
}

// ReuseLink is one stored evaluation a run took from an earlier run
// instead of measuring it: Position is its place in the order the run
// was told its results (0 first, own and reused alike), Objective its
// value under the run's objective (nil for a configuration that is not
// valid).
type ReuseLink struct {
	Evaluation int64
	Position   int
	Objective  *float64
}

// Reuse records links of run runID, in one transaction: a re-run that
// reuses thousands of evaluations pays one commit for a batch of them,
// not one each. An open batch of Add (SetBatch) is committed first (the
// evaluations reused may be in it). A configuration reused twice by one
// run is recorded once. Errors: an unknown run or evaluation (wrapping
// ErrNotFound; then none of links is recorded), a database error.
func (db *DB) Reuse(runID int64, links []ReuseLink) error {
	if len(links) == 0 {
		return nil
	}
	ctx := context.Background()
	db.wmu.Lock()
	defer db.wmu.Unlock()
	// The reused evaluations may be in an open batch of this process.
	if err := db.commitBatchLocked(); err != nil {
		return err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: recording %d reused evaluations of run %d in %s: %v", len(links), runID, db.path, err)
	}
	defer tx.Rollback()
	const q = `INSERT INTO run_reuse (run_id, evaluation_id, position, objective)
		SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM runs WHERE id = ?1) AND EXISTS (SELECT 1 FROM evaluations WHERE id = ?2)
		ON CONFLICT DO NOTHING`
	for _, l := range links {
		var obj any
		if l.Objective != nil {
			obj = nullFloat(*l.Objective)
		}
		res, err := tx.ExecContext(ctx, q, runID, l.Evaluation, l.Position, obj)
		if err != nil {
			return fmt.Errorf("store: recording that run %d reused evaluation %d in %s: %w", runID, l.Evaluation, db.path, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var dup int
			tx.QueryRowContext(ctx, `SELECT count(*) FROM run_reuse WHERE run_id = ? AND evaluation_id = ?`, runID, l.Evaluation).Scan(&dup)
			if dup == 0 {
				return fmt.Errorf("store: recording that run %d reused evaluation %d in %s: no such run or evaluation: %w", runID, l.Evaluation, db.path, ErrNotFound)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: recording %d reused evaluations of run %d in %s: %v", len(links), runID, db.path, err)
	}
	return nil
}

// RunEvaluations returns what run runID evaluated as a tuning, not as a
// process: its own evaluations and those it reused from earlier runs
// (Reuse), in the order the run was told them. A reused evaluation keeps
// its own RunID (the run that measured it: its provenance), and its
// Objective is the reusing run's value. None for an unknown run.
func (db *DB) RunEvaluations(runID int64) ([]*Evaluation, error) {
	own, err := db.Evaluations(runID)
	if err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(context.Background(),
		`SELECT evaluation_id, position, objective FROM run_reuse WHERE run_id = ?`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: reading the evaluations run %d reused from %s: %v", runID, db.path, err)
	}
	type link struct {
		position  int
		objective sql.NullFloat64
	}
	links := map[int64]link{}
	for rows.Next() {
		var id int64
		var l link
		if err := rows.Scan(&id, &l.position, &l.objective); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: reading the evaluations run %d reused from %s: %v", runID, db.path, err)
		}
		links[id] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading the evaluations run %d reused from %s: %v", runID, db.path, err)
	}
	if len(links) == 0 {
		return own, nil
	}
	reused, err := db.queryEvaluations(fmt.Sprintf("evaluations run %d reused", runID),
		`SELECT `+evalColumns+` FROM evaluations WHERE id IN (SELECT evaluation_id FROM run_reuse WHERE run_id = ?)`, runID)
	if err != nil {
		return nil, err
	}
	for _, e := range reused {
		e.Objective = nil
		if o := links[e.ID].objective; o.Valid {
			v := o.Float64
			e.Objective = &v
		}
	}
	sort.SliceStable(reused, func(i, j int) bool { return links[reused[i].ID].position < links[reused[j].ID].position })
	// The run's own evaluations fill the places the reused ones leave, in
	// the order they were stored.
	out := make([]*Evaluation, 0, len(own)+len(reused))
	for len(own) > 0 || len(reused) > 0 {
		if len(reused) > 0 && (len(own) == 0 || links[reused[0].ID].position <= len(out)) {
			out, reused = append(out, reused[0]), reused[1:]
		} else {
			out, own = append(out, own[0]), own[1:]
		}
	}
	return out, nil
}
