package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gtune/gtune/measure"
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

// AddObservations adds observations made after an evaluation was stored
// (a profiler pass over a run's configurations: Nsight Compute metrics)
// to evaluation id: one typed row each, replacing one of the same name
// and scope, and the whole-plan ones in the evaluation's observation map
// too, which reports and metrics read. Errors: an observation that is
// NaN or lacks a name or method (measure.Observations.Validate); an unknown
// evaluation id; a write failure. Nothing is written on error.
func (db *DB) AddObservations(id int64, obs measure.Observations) error {
	return db.replace([]Remeasurement{{ID: id, Observations: obs}}, false)
}

// Remeasurement is a later measurement of stored evaluation ID's
// configuration, or a correction of it (calibration across GPUs): the
// observations it replaces, and the evaluation's metrics and objective
// value (Objective nil leaves it).
type Remeasurement struct {
	ID           int64
	Observations measure.Observations
	Metrics      map[string]float64
	Objective    *float64
	// GPU, when set, is the UUID of the GPU that re-measured it (in a
	// run over several, another than the first measurement's, maybe):
	// the evaluation's GPU becomes it, since its observations are that
	// GPU's now.
	GPU string
}

// Remeasured replaces each evaluation's measurement in rs by its
// remeasurement, in one transaction (a re-measurement once the GPU was
// at a thermal steady state, tuner's settle; a calibration of a run's
// energies): the observations as AddObservations does, the metrics and
// the objective value. The earlier measurement stays as the caller keeps
// it (a repeat, energy_uncorrected). Errors: AddObservations', metrics
// that do not encode. Nothing is written on error.
func (db *DB) Remeasured(rs ...Remeasurement) error {
	return db.replace(rs, true)
}

// replace writes rs in one transaction: AddObservations, and with
// metrics set Remeasured.
func (db *DB) replace(rs []Remeasurement, metrics bool) error {
	enc := make([]string, len(rs))
	for i, r := range rs {
		if err := r.Observations.Validate(); err != nil {
			return fmt.Errorf("store: observations of evaluation %d: %v", r.ID, err)
		}
		if !metrics {
			continue
		}
		m := r.Metrics
		if m == nil {
			m = map[string]float64{}
		}
		var err error
		if enc[i], err = encodeNumbers(m); err != nil {
			return fmt.Errorf("store: metrics of evaluation %d: %v", r.ID, err)
		}
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if err := db.commitBatchLocked(); err != nil {
		return err
	}
	ctx := context.Background()
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: observations: %v", err)
	}
	defer tx.Rollback()
	for i, r := range rs {
		var m *string
		if metrics {
			m = &enc[i]
		}
		if err := replaceTx(ctx, tx, r.ID, r.Observations, m, r.Objective); err != nil {
			return err
		}
		if r.GPU != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE evaluations SET gpu = ? WHERE id = ?`, r.GPU, r.ID); err != nil {
				return fmt.Errorf("store: GPU of evaluation %d: %v", r.ID, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: observations: %v", err)
	}
	return nil
}

// replaceTx writes one evaluation's replacement in tx: its observations,
// its encoded metrics (nil: left) and objective (nil: left).
func replaceTx(ctx context.Context, tx *sql.Tx, id int64, obs measure.Observations, metrics *string, objective *float64) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM evaluations WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("store: observations of evaluation %d: %v", id, err)
	} else if n != 1 {
		return fmt.Errorf("store: observations of evaluation %d: %w", id, ErrNotFound)
	}
	for _, o := range obs {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO observations (evaluation_id, launch, name, unit, value, method) VALUES (?, ?, ?, ?, ?, ?)`,
			id, o.Launch, o.Name, o.Unit, o.Value, o.Method); err != nil {
			return fmt.Errorf("store: observations of evaluation %d: %s: %v", id, o.Name, err)
		}
		if o.Launch != measure.PlanScope {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE evaluations SET observations = json_set(CASE WHEN observations = '' THEN '{}' ELSE observations END, ?, ?) WHERE id = ?`,
			"$."+fmt.Sprintf("%q", o.Name), o.Value, id); err != nil {
			return fmt.Errorf("store: observations of evaluation %d: %s: %v", id, o.Name, err)
		}
	}
	if metrics != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE evaluations SET metrics = ? WHERE id = ?`, *metrics, id); err != nil {
			return fmt.Errorf("store: metrics of evaluation %d: %v", id, err)
		}
	}
	if objective != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE evaluations SET objective = ? WHERE id = ?`, nullFloat(*objective), id); err != nil {
			return fmt.Errorf("store: objective of evaluation %d: %v", id, err)
		}
	}
	return nil
}
