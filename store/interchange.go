package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// AddMany stores the evaluations es of one run in a single transaction:
// all of them or, on any error, none. It is Add for bulk imports (package
// cache: a Kernel Tuner cache holds thousands of configurations, and one
// fsync each would cost seconds) and merges (package shard), with
// everything Add stores: launches, GPU, typed observations and PTX. Empty
// SpecHash and DeviceUUID are filled in from the run and every e.ID is
// set. Errors are those of Add, naming the evaluation at fault; all of es
// must belong to the same run.
func (db *DB) AddMany(es []*Evaluation) error {
	if len(es) == 0 {
		return nil
	}
	runID := es[0].RunID
	type encoded struct {
		params, obs, metrics, times, launches string
		objective                             any
	}
	enc := make([]encoded, len(es))
	for i, e := range es {
		if e.RunID != runID {
			return fmt.Errorf("store: AddMany: evaluation %q belongs to run %d, the first to run %d", e.Key, e.RunID, runID)
		}
		if e.Key == "" {
			return fmt.Errorf("store: evaluation of run %d has an empty configuration key", e.RunID)
		}
		if !evalStatuses[e.Status] {
			return fmt.Errorf("store: evaluation %q has unknown status %q", e.Key, e.Status)
		}
		if e.Objective != nil && e.Status != "valid" {
			return fmt.Errorf("store: evaluation %q has status %s but an objective value; only valid configurations have one", e.Key, e.Status)
		}
		var err error
		if enc[i].params, err = encodeParams(e.Params); err != nil {
			return fmt.Errorf("store: evaluation %q: %v", e.Key, err)
		}
		if enc[i].obs, err = encodeNumbers(e.Observations); err != nil {
			return fmt.Errorf("store: evaluation %q observations: %v", e.Key, err)
		}
		if enc[i].metrics, err = encodeNumbers(e.Metrics); err != nil {
			return fmt.Errorf("store: evaluation %q metrics: %v", e.Key, err)
		}
		if enc[i].times, err = encodeTimes(e.TimesMs); err != nil {
			return fmt.Errorf("store: evaluation %q times: %v", e.Key, err)
		}
		if e.Objective != nil {
			enc[i].objective = nullFloat(*e.Objective)
		}
		if err := e.Typed.Validate(); err != nil {
			return fmt.Errorf("store: evaluation %q: %v", e.Key, err)
		}
		enc[i].launches = "[]"
		if e.Launches != nil {
			b, err := json.Marshal(e.Launches)
			if err != nil {
				return fmt.Errorf("store: evaluation %q launches: %v", e.Key, err)
			}
			enc[i].launches = string(b)
		}
	}

	ctx := context.Background()
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if err := db.commitBatchLocked(); err != nil {
		return err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: adding evaluations to %s: %v", db.path, err)
	}
	defer tx.Rollback()
	var runHash, runUUID string
	err = tx.QueryRowContext(ctx, `SELECT spec_hash, device_uuid FROM runs WHERE id = ?`, runID).Scan(&runHash, &runUUID)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: adding evaluations to %s: run %d %w", db.path, runID, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("store: adding evaluations to %s: %v", db.path, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO evaluations
		(run_id, spec_hash, device_uuid, config_key, params, status, reason, objective,
		 observations, metrics, times_ms, registers, shared_static_bytes, local_bytes,
		 max_error, compile_ms, benchmark_ms, framework_ms, started_at, finished_at, launches, gpu)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: adding evaluations to %s: %v", db.path, err)
	}
	defer stmt.Close()
	ids := make([]int64, len(es))
	hashes := make([]string, len(es))
	uuids := make([]string, len(es))
	for i, e := range es {
		hashes[i], uuids[i] = e.SpecHash, e.DeviceUUID
		if hashes[i] == "" {
			hashes[i] = runHash
		}
		if uuids[i] == "" {
			uuids[i] = runUUID
		}
		res, err := stmt.ExecContext(ctx, runID, hashes[i], uuids[i], e.Key, enc[i].params, e.Status, e.Reason,
			enc[i].objective, enc[i].obs, enc[i].metrics, enc[i].times, e.Registers, e.SharedStaticBytes, e.LocalBytes,
			nullFloat(e.MaxError), nullFloat(e.CompileMs), nullFloat(e.BenchmarkMs), nullFloat(e.FrameworkMs),
			fmtTime(e.StartedAt), fmtTime(e.FinishedAt), enc[i].launches, e.GPU)
		if err != nil {
			return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
		}
		for _, o := range e.Typed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO observations (evaluation_id, launch, name, unit, value, method) VALUES (?, ?, ?, ?, ?, ?)`,
				ids[i], o.Launch, o.Name, o.Unit, nullFloat(o.Value), o.Method); err != nil {
				return fmt.Errorf("store: adding evaluation %q to %s: observation %s: %v", e.Key, db.path, o.Name, err)
			}
		}
		if err := addPTX(ctx, tx, ids[i], e.PTX); err != nil {
			return fmt.Errorf("store: adding evaluation %q to %s: its PTX: %v", e.Key, db.path, err)
		}
		if err := addRepeats(ctx, tx, ids[i], e.Repeats, fmtTime(e.StartedAt)); err != nil {
			return fmt.Errorf("store: adding evaluation %q to %s: its repeats: %v", e.Key, db.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: adding evaluations to %s: %v", db.path, err)
	}
	for i, e := range es {
		e.ID, e.SpecHash, e.DeviceUUID = ids[i], hashes[i], uuids[i]
	}
	return nil
}
