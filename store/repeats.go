package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrateV7 keeps every repeated measurement of a configuration (tune
// --repeat N): the evaluation holds the aggregate that strategies, show,
// report and exports read, each repeat its own observations and the GPU
// that measured it. Databases without repeats are unchanged.
func migrateV7(ctx context.Context, tx *sql.Tx) error {
	const schema = `
CREATE TABLE repeats (
	evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
	repeat        INTEGER NOT NULL,
	gpu           TEXT NOT NULL DEFAULT '',
	status        TEXT NOT NULL,
	observations  TEXT NOT NULL CHECK (json_valid(observations)),
	started_at    TEXT,
	PRIMARY KEY (evaluation_id, repeat)
);
`
	_, err := tx.ExecContext(ctx, schema)
	return err
}

// Repeat is one measurement of an evaluation's configuration: its number
// (0 the first), the GPU that measured it, its status and its plan-level
// observations by name (time in ms, energy in J, ...).
type Repeat struct {
	Repeat       int
	GPU          string
	Status       string
	Observations map[string]float64
}

// addRepeats stores an evaluation's repeats inside its transaction.
func addRepeats(ctx context.Context, tx *sql.Tx, evalID int64, rs []Repeat, started any) error {
	for _, r := range rs {
		obs, err := encodeNumbers(r.Observations)
		if err != nil {
			return fmt.Errorf("repeat %d: %v", r.Repeat, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO repeats (evaluation_id, repeat, gpu, status, observations, started_at) VALUES (?, ?, ?, ?, ?, ?)`,
			evalID, r.Repeat, r.GPU, r.Status, obs, started); err != nil {
			return fmt.Errorf("repeat %d: %v", r.Repeat, err)
		}
	}
	return nil
}

// Repeats returns the repeats of evaluation evalID in order (none: nil).
func (db *DB) Repeats(evalID int64) ([]Repeat, error) {
	rows, err := db.sql.Query(`SELECT repeat, gpu, status, observations FROM repeats WHERE evaluation_id = ? ORDER BY repeat`, evalID)
	if err != nil {
		return nil, fmt.Errorf("store: repeats of evaluation %d in %s: %v", evalID, db.path, err)
	}
	defer rows.Close()
	var out []Repeat
	for rows.Next() {
		var r Repeat
		var obs string
		if err := rows.Scan(&r.Repeat, &r.GPU, &r.Status, &obs); err != nil {
			return nil, fmt.Errorf("store: repeats of evaluation %d in %s: %v", evalID, db.path, err)
		}
		if r.Observations, err = decodeNumbers(obs); err != nil {
			return nil, fmt.Errorf("store: repeat %d of evaluation %d in %s: %v", r.Repeat, evalID, db.path, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// AddRepeats stores further repeats of evaluation evalID (a confirmation
// at the end of a run), in one transaction. Errors: a repeat number the
// evaluation has already, an unknown evaluation, the database's.
func (db *DB) AddRepeats(evalID int64, rs []Repeat) error {
	if err := db.Flush(); err != nil {
		return err
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	ctx := context.Background()
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: adding repeats to %s: %v", db.path, err)
	}
	defer tx.Rollback()
	if err := addRepeats(ctx, tx, evalID, rs, nil); err != nil {
		return fmt.Errorf("store: adding repeats of evaluation %d to %s: %v", evalID, db.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: adding repeats to %s: %v", db.path, err)
	}
	return nil
}
