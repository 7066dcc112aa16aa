package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gtune/gtune/measure"
)

// Param is one tunable parameter's value in a configuration. A slice of
// Params keeps the spec's parameter order.
type Param struct {
	Name string
	// Value is nil, a Go integer of any width, float64, float32, string or
	// bool; Add refuses other types (an expr.Value must be converted). It
	// reads back with its kind: integers as int, floats as float64
	// (integral floats are stored as "2.0", so they stay float64), a
	// non-finite float as nil.
	Value any
}

// Evaluation is one configuration compiled and measured (or failed) in a
// run. Status uses the names of backend.Status.
type Evaluation struct {
	ID    int64
	RunID int64
	// SpecHash and DeviceUUID are the reuse key with Key; Add copies them
	// from the run when left empty.
	SpecHash   string
	DeviceUUID string
	Key        string  // canonical configuration key, values joined by "," (Kernel Tuner style, e.g. "16,1,4")
	Params     []Param // in spec order
	Status     string  // valid | compile_failed | launch_failed | runtime_failed | timeout | verification_failed
	Reason     string  // why it is not valid (compiler log, error), empty when valid
	Objective  *float64
	// Observations are the measured quantities by name, in their own units:
	// time, time_min, time_max, time_std (ms), energy (J), power (W),
	// sm_clock (MHz), ...
	Observations map[string]float64
	// Typed are the observations with unit and method, of the whole plan
	// and of each launch (measure.Observations); stored one row each.
	// Add writes them; reading an evaluation leaves them nil (Observations
	// reads them for one evaluation).
	Typed measure.Observations
	// Launches are the plan's kernel launches: resources and event times.
	Launches          []Launch
	Metrics           map[string]float64 // derived quantities by name (objective package)
	TimesMs           []float64          // one per timed launch, ms
	Registers         int                // per thread
	SharedStaticBytes int                // per thread block
	LocalBytes        int                // per thread
	MaxError          float64            // largest error found by verification
	CompileMs         float64            // ms
	BenchmarkMs       float64            // ms
	FrameworkMs       float64            // gtune's own time for this configuration, ms
	StartedAt         time.Time
	FinishedAt        time.Time
	// PTX is the PTX of the plan's launches where the backend kept it
	// (backend.Binary.PTX); Add stores it with the evaluation (PTXOf
	// reads it), reading an evaluation leaves it nil.
	PTX []KernelPTX
	// Repeats are the configuration's measurements where it was measured
	// more than once (tune --repeat); the evaluation's own observations
	// are their aggregate. Add stores them, Repeats reads them.
	Repeats []Repeat
	// GPU is the UUID of the GPU that measured the configuration in a
	// run over several GPUs of one model (gtune tune --devices); "" in a
	// run on one GPU: the run's. DeviceUUID stays the run's, the reuse
	// key, so that any of its GPUs' results are reused.
	GPU string
}

// Launch is one kernel launch of an evaluated plan.
type Launch struct {
	Kernel             string    `json:"kernel"`
	Key                string    `json:"key"`    // the kernel's configuration key
	Stream             int       `json:"stream"` // CUDA stream it was issued on
	Registers          int       `json:"registers"`
	SharedStaticBytes  int       `json:"shared_static_bytes"`
	LocalBytes         int       `json:"local_bytes"`
	MaxThreadsPerBlock int       `json:"max_threads_per_block"`
	TimesMs            []float64 `json:"times_ms"`
}

var evalStatuses = map[string]bool{
	"valid": true, "compile_failed": true, "launch_failed": true,
	"runtime_failed": true, "timeout": true, "verification_failed": true,
}

// nullFloat maps NaN to NULL (which SQLite would do anyway) so the
// mapping is visible here.
func nullFloat(v float64) any {
	if math.IsNaN(v) {
		return nil
	}
	return v
}

// Add stores e as one transaction, committed (and, with synchronous=FULL,
// fsynced) before it returns, and sets e.ID; with SetBatch, e joins the
// open batch and is committed with it (see there). Empty SpecHash and
// DeviceUUID are filled in from the run. It returns an error, and stores
// nothing, for an unknown run, an empty Key, an unknown Status, an
// Objective on an evaluation that is not valid, or Params with empty or
// repeated names; with SetBatch also when the commit of a batch (this one
// or an earlier one of the timer) fails, and then that batch is lost.
func (db *DB) Add(e *Evaluation) error {
	if e.Key == "" {
		return fmt.Errorf("store: evaluation of run %d has an empty configuration key", e.RunID)
	}
	if !evalStatuses[e.Status] {
		return fmt.Errorf("store: evaluation %q has unknown status %q", e.Key, e.Status)
	}
	if e.Objective != nil && e.Status != "valid" {
		return fmt.Errorf("store: evaluation %q has status %s but an objective value; only valid configurations have one", e.Key, e.Status)
	}
	params, err := encodeParams(e.Params)
	if err != nil {
		return fmt.Errorf("store: evaluation %q: %v", e.Key, err)
	}
	obs, err := encodeNumbers(e.Observations)
	if err != nil {
		return fmt.Errorf("store: evaluation %q observations: %v", e.Key, err)
	}
	metrics, err := encodeNumbers(e.Metrics)
	if err != nil {
		return fmt.Errorf("store: evaluation %q metrics: %v", e.Key, err)
	}
	times, err := encodeTimes(e.TimesMs)
	if err != nil {
		return fmt.Errorf("store: evaluation %q times: %v", e.Key, err)
	}
	if err := e.Typed.Validate(); err != nil {
		return fmt.Errorf("store: evaluation %q: %v", e.Key, err)
	}
	launches, err := json.Marshal(e.Launches)
	if err != nil {
		return fmt.Errorf("store: evaluation %q launches: %v", e.Key, err)
	}
	if e.Launches == nil {
		launches = []byte("[]")
	}
	var objective any
	if e.Objective != nil {
		objective = nullFloat(*e.Objective)
	}

	ctx := context.Background()
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if db.batchErr != nil {
		return db.commitBatchLocked()
	}
	var tx *sql.Tx
	var b *openBatch
	if db.batchN > 1 {
		if b, err = db.batchTx(ctx); err != nil {
			return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
		}
		tx = b.tx
	} else {
		if tx, err = db.sql.BeginTx(ctx, nil); err != nil {
			return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
		}
		defer tx.Rollback()
	}
	specHash, deviceUUID := e.SpecHash, e.DeviceUUID
	var runHash, runUUID string
	err = tx.QueryRowContext(ctx, `SELECT spec_hash, device_uuid FROM runs WHERE id = ?`, e.RunID).Scan(&runHash, &runUUID)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: adding evaluation %q to %s: run %d %w", e.Key, db.path, e.RunID, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
	}
	if specHash == "" {
		specHash = runHash
	}
	if deviceUUID == "" {
		deviceUUID = runUUID
	}
	// A failed statement is undone alone (SQLite's statement journal), so a
	// refused evaluation leaves the rest of an open batch intact.
	res, err := tx.ExecContext(ctx, `INSERT INTO evaluations
		(run_id, spec_hash, device_uuid, config_key, params, status, reason, objective,
		 observations, metrics, times_ms, registers, shared_static_bytes, local_bytes,
		 max_error, compile_ms, benchmark_ms, framework_ms, started_at, finished_at, launches, gpu)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.RunID, specHash, deviceUUID, e.Key, params, e.Status, e.Reason, objective,
		obs, metrics, times, e.Registers, e.SharedStaticBytes, e.LocalBytes,
		nullFloat(e.MaxError), nullFloat(e.CompileMs), nullFloat(e.BenchmarkMs), nullFloat(e.FrameworkMs),
		fmtTime(e.StartedAt), fmtTime(e.FinishedAt), string(launches), e.GPU)
	if err != nil {
		return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
	}
	for _, o := range e.Typed {
		if _, err := tx.ExecContext(ctx, `INSERT INTO observations (evaluation_id, launch, name, unit, value, method) VALUES (?, ?, ?, ?, ?, ?)`,
			id, o.Launch, o.Name, o.Unit, nullFloat(o.Value), o.Method); err != nil {
			if b != nil {
				// The evaluation row is in the open batch: take it out again.
				tx.ExecContext(ctx, `DELETE FROM evaluations WHERE id = ?`, id)
			}
			return fmt.Errorf("store: adding evaluation %q to %s: observation %s: %v", e.Key, db.path, o.Name, err)
		}
	}
	err = addPTX(ctx, tx, id, e.PTX)
	what := "its PTX"
	if err == nil {
		err, what = addRepeats(ctx, tx, id, e.Repeats, fmtTime(e.StartedAt)), "its repeats"
	}
	if err != nil {
		if b != nil {
			tx.ExecContext(ctx, `DELETE FROM repeats WHERE evaluation_id = ?`, id)
			tx.ExecContext(ctx, `DELETE FROM evaluation_ptx WHERE evaluation_id = ?`, id)
			tx.ExecContext(ctx, `DELETE FROM observations WHERE evaluation_id = ?`, id)
			tx.ExecContext(ctx, `DELETE FROM evaluations WHERE id = ?`, id)
		}
		return fmt.Errorf("store: adding evaluation %q to %s: %s: %v", e.Key, db.path, what, err)
	}
	if b != nil {
		e.ID, e.SpecHash, e.DeviceUUID = id, specHash, deviceUUID
		b.n++
		if b.n >= db.batchN {
			return db.commitBatchLocked()
		}
		return nil
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: adding evaluation %q to %s: %v", e.Key, db.path, err)
	}
	e.ID, e.SpecHash, e.DeviceUUID = id, specHash, deviceUUID
	return nil
}

const evalColumns = `id, run_id, spec_hash, device_uuid, config_key, params, status, reason, objective,
	observations, metrics, times_ms, registers, shared_static_bytes, local_bytes,
	max_error, compile_ms, benchmark_ms, framework_ms, started_at, finished_at, launches, gpu`

// nanFloat reads a REAL column that holds NULL only where NaN was written.
func nanFloat(f sql.NullFloat64) float64 {
	if !f.Valid {
		return math.NaN()
	}
	return f.Float64
}

func scanEvaluation(rows *sql.Rows) (*Evaluation, error) {
	var (
		e                                      Evaluation
		params, obs, metrics, times, launches  string
		objective, maxErr, compile, bench, fwk sql.NullFloat64
		started, finished                      sql.NullString
	)
	if err := rows.Scan(&e.ID, &e.RunID, &e.SpecHash, &e.DeviceUUID, &e.Key, &params, &e.Status, &e.Reason,
		&objective, &obs, &metrics, &times, &e.Registers, &e.SharedStaticBytes, &e.LocalBytes,
		&maxErr, &compile, &bench, &fwk, &started, &finished, &launches, &e.GPU); err != nil {
		return nil, err
	}
	var err error
	if err = json.Unmarshal([]byte(launches), &e.Launches); err != nil {
		return nil, fmt.Errorf("store: evaluation %d launches: %v", e.ID, err)
	}
	if len(e.Launches) == 0 {
		e.Launches = nil
	}
	if e.Params, err = decodeParams(params); err != nil {
		return nil, fmt.Errorf("store: evaluation %d params: %v", e.ID, err)
	}
	if e.Observations, err = decodeNumbers(obs); err != nil {
		return nil, fmt.Errorf("store: evaluation %d observations: %v", e.ID, err)
	}
	if e.Metrics, err = decodeNumbers(metrics); err != nil {
		return nil, fmt.Errorf("store: evaluation %d metrics: %v", e.ID, err)
	}
	if e.TimesMs, err = decodeTimes(times); err != nil {
		return nil, fmt.Errorf("store: evaluation %d times_ms: %v", e.ID, err)
	}
	if objective.Valid {
		v := objective.Float64
		e.Objective = &v
	}
	e.MaxError, e.CompileMs, e.BenchmarkMs, e.FrameworkMs = nanFloat(maxErr), nanFloat(compile), nanFloat(bench), nanFloat(fwk)
	if e.StartedAt, err = parseTime(started, "evaluations.started_at"); err != nil {
		return nil, err
	}
	if e.FinishedAt, err = parseTime(finished, "evaluations.finished_at"); err != nil {
		return nil, err
	}
	return &e, nil
}

func (db *DB) queryEvaluations(what, query string, args ...any) ([]*Evaluation, error) {
	if err := db.Flush(); err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(context.Background(), query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: reading %s from %s: %v", what, db.path, err)
	}
	defer rows.Close()
	var es []*Evaluation
	for rows.Next() {
		e, err := scanEvaluation(rows)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading %s from %s: %v", what, db.path, err)
	}
	return es, nil
}

// Evaluations returns the evaluations of run runID in the order they were
// added (none for an unknown run).
func (db *DB) Evaluations(runID int64) ([]*Evaluation, error) {
	return db.queryEvaluations(fmt.Sprintf("evaluations of run %d", runID),
		`SELECT `+evalColumns+` FROM evaluations WHERE run_id = ? ORDER BY id`, runID)
}

// Previous returns, for every configuration key ever evaluated with this
// spec hash on this device (in any run), the most recently added
// evaluation, whatever its status, so a re-run can skip configurations
// already measured or already known to fail. The map is keyed by
// configuration key and empty (not nil) when there are none.
func (db *DB) Previous(specHash, deviceUUID string) (map[string]*Evaluation, error) {
	// AUTOINCREMENT ids only grow, so the largest id per key is the newest.
	es, err := db.queryEvaluations("previous evaluations",
		`SELECT `+evalColumns+` FROM evaluations WHERE id IN (
			SELECT max(id) FROM evaluations WHERE spec_hash = ? AND device_uuid = ? GROUP BY config_key)`,
		specHash, deviceUUID)
	if err != nil {
		return nil, err
	}
	m := make(map[string]*Evaluation, len(es))
	for _, e := range es {
		m[e.Key] = e
	}
	return m, nil
}

// MethodBeforeV3 is the method of the observations of evaluations stored
// before typed observations existed (schema version 2 and older).
const MethodBeforeV3 = "recorded-before-schema-3"

// Observations returns the typed observations of one stored evaluation,
// plan first then by launch and name. For an evaluation stored before
// schema version 3 they come from its observations map, with the units
// of the built-in quantities (measure.UnitOf; "" for others) and method
// MethodBeforeV3. Errors: ErrNotFound for an unknown id; a database
// error.
func (db *DB) Observations(evalID int64) (measure.Observations, error) {
	if err := db.Flush(); err != nil {
		return nil, err
	}
	rows, err := db.sql.Query(`SELECT launch, name, unit, value, method FROM observations WHERE evaluation_id = ? ORDER BY launch, name`, evalID)
	if err != nil {
		return nil, fmt.Errorf("store: observations of evaluation %d: %v", evalID, err)
	}
	defer rows.Close()
	var out measure.Observations
	for rows.Next() {
		var o measure.Observation
		var v sql.NullFloat64
		if err := rows.Scan(&o.Launch, &o.Name, &o.Unit, &v, &o.Method); err != nil {
			return nil, fmt.Errorf("store: observations of evaluation %d: %v", evalID, err)
		}
		o.Value = nanFloat(v)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: observations of evaluation %d: %v", evalID, err)
	}
	if len(out) > 0 {
		return out, nil
	}
	es, err := db.queryEvaluations(fmt.Sprintf("evaluation %d", evalID), `SELECT `+evalColumns+` FROM evaluations WHERE id = ?`, evalID)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("store: evaluation %d: %w", evalID, ErrNotFound)
	}
	e := es[0]
	for name, v := range e.Observations {
		out = append(out, measure.Observation{Name: name, Unit: measure.UnitOf(name), Value: v, Method: MethodBeforeV3, Launch: measure.PlanScope})
	}
	return out.Sorted(), nil
}
