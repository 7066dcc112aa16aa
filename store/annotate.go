package store

import (
	"context"
	"fmt"
)

// ProcessAlive reports whether a process with this pid exists on this
// host (always true where the system cannot tell), so that files a
// crashed gtune left behind can be told from those of a running one.
func ProcessAlive(pid int) bool { return processAlive(pid) }

// Annotate adds a note to a stored evaluation's reason ("; "-separated)
// and, when flag is not empty, sets the observation flag to 1: for what is
// learned about a measurement after it was stored (a plausibility check
// over the whole run). Errors: an unknown evaluation id, a write failure.
func (db *DB) Annotate(id int64, note, flag string) error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	// The evaluation may still be in the open batch (SetBatch).
	if err := db.commitBatchLocked(); err != nil {
		return err
	}
	ctx := context.Background()
	q := `UPDATE evaluations SET reason = CASE WHEN reason = '' THEN ?1 ELSE reason || '; ' || ?1 END`
	args := []any{note}
	if flag != "" {
		q += `, observations = json_set(CASE WHEN observations = '' THEN '{}' ELSE observations END, ?2, 1)`
		args = append(args, "$."+fmt.Sprintf("%q", flag))
	}
	res, err := db.sql.ExecContext(ctx, q+` WHERE id = ?`+fmt.Sprint(len(args)+1), append(args, id)...)
	if err != nil {
		return fmt.Errorf("store: annotating evaluation %d: %v", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: annotating evaluation %d: %v", id, err)
	} else if n != 1 {
		return fmt.Errorf("store: annotating evaluation %d: %w", id, ErrNotFound)
	}
	return nil
}
