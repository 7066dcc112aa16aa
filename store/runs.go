package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gtune/gtune/internal/badinput"
)

// Statuses of a run.
const (
	RunRunning     = "running"     // the run is in progress (or its process died; see MarkInterrupted)
	RunDone        = "done"        // the run finished
	RunInterrupted = "interrupted" // stopped by the user, or found abandoned by MarkInterrupted
	RunFailed      = "failed"      // stopped by an error of the run (not of one configuration)
)

// Run is one invocation of the tuner on one kernel and one GPU.
type Run struct {
	ID           int64
	SpecHash     string // hash of the tuning spec; with DeviceUUID the key for reuse
	SpecPath     string
	Kernel       string
	Objective    string
	Strategy     string
	DeviceName   string
	DeviceUUID   string
	Driver       string // driver version
	Backend      string // "cuda" | "sim" | "replay"
	GtuneVersion string
	// Settings is free-form, stored as JSON. It reads back as
	// encoding/json decodes into any: numbers as float64, objects as
	// map[string]any, arrays as []any; an empty map reads back as nil.
	Settings  map[string]any
	StartedAt time.Time // set by BeginRun, UTC
	EndedAt   time.Time // zero while running
	Status    string    // RunRunning, RunDone, RunInterrupted or RunFailed
	// Host is the name of the host whose process ran it (set by BeginRun
	// from os.Hostname; read back, not written from here).
	Host string
}

// SettingLibrary is the run setting (Run.Settings) that names the
// library routine a run measured ("cublasDgemm": a spec whose Language is
// cuBLAS, package backend/library); absent for a kernel.
const SettingLibrary = "library"

// BeginRun records a new run with status "running", started now, owned by
// this process (MarkInterrupted uses the owner to tell a live run from an
// abandoned one). It sets r.ID, r.StartedAt, r.Status and r.Host and clears r.EndedAt.
// It returns an error for an empty Backend (its name is free-form:
// "cuda", "sim", "replay", or another executor's), or for Settings that
// cannot be encoded as JSON.
func (db *DB) BeginRun(r *Run) error {
	if strings.TrimSpace(r.Backend) == "" {
		return fmt.Errorf("store: run of %s has no backend name", r.Kernel)
	}
	settings, err := encodeSettings(r.Settings)
	if err != nil {
		return fmt.Errorf("store: run settings: %v", err)
	}
	host, _ := os.Hostname()
	started := time.Now().UTC()
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if err := db.commitBatchLocked(); err != nil {
		return err
	}
	res, err := db.sql.ExecContext(context.Background(), `INSERT INTO runs
		(spec_hash, spec_path, kernel, objective, strategy, device_name, device_uuid, driver,
		 backend, gtune_version, settings, started_at, ended_at, status, host, pid)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
		r.SpecHash, r.SpecPath, r.Kernel, r.Objective, r.Strategy, r.DeviceName, r.DeviceUUID, r.Driver,
		r.Backend, r.GtuneVersion, settings, fmtTime(started), RunRunning, host, os.Getpid())
	if err != nil {
		return fmt.Errorf("store: recording run in %s: %v", db.path, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("store: recording run in %s: %v", db.path, err)
	}
	r.ID, r.StartedAt, r.EndedAt, r.Status, r.Host = id, started, time.Time{}, RunRunning, host
	return nil
}

// EndRun sets the status of run id to "done", "interrupted" or "failed" and
// its end time to now. It returns an error wrapping ErrNotFound for an
// unknown run.
func (db *DB) EndRun(id int64, status string) error {
	if status != RunDone && status != RunInterrupted && status != RunFailed {
		return fmt.Errorf("store: EndRun status %q is not one of done, interrupted, failed", status)
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	// The run's evaluations are committed before it is marked ended.
	if err := db.commitBatchLocked(); err != nil {
		return err
	}
	res, err := db.sql.ExecContext(context.Background(),
		`UPDATE runs SET status = ?, ended_at = ? WHERE id = ?`, status, fmtTime(time.Now()), id)
	if err != nil {
		return fmt.Errorf("store: ending run %d in %s: %v", id, db.path, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: ending run %d in %s: %v", id, db.path, err)
	} else if n == 0 {
		return fmt.Errorf("store: ending run %d in %s: run %w", id, db.path, ErrNotFound)
	}
	return nil
}

// SetRunSettings adds settings (JSON-encodable values) to run id's
// Settings, replacing those of the same names: for what is learned about
// a run after it ended (a profiling pass over its configurations and its
// cost). Errors: a value JSON cannot encode, an unknown run, a write
// failure. Nothing is written on error.
func (db *DB) SetRunSettings(id int64, settings map[string]any) error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	ctx := context.Background()
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: settings of run %d: %v", id, err)
	}
	defer tx.Rollback()
	var old string
	if err := tx.QueryRowContext(ctx, `SELECT settings FROM runs WHERE id = ?`, id).Scan(&old); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: settings of run %d: run %w", id, ErrNotFound)
		}
		return fmt.Errorf("store: settings of run %d: %v", id, err)
	}
	merged, err := decodeSettings(old)
	if err != nil {
		return fmt.Errorf("store: settings of run %d: %v", id, err)
	}
	if merged == nil {
		merged = map[string]any{}
	}
	for k, v := range settings {
		merged[k] = v
	}
	enc, err := encodeSettings(merged)
	if err != nil {
		return fmt.Errorf("store: settings of run %d: %v", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET settings = ? WHERE id = ?`, enc, id); err != nil {
		return fmt.Errorf("store: settings of run %d: %v", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: settings of run %d: %v", id, err)
	}
	return nil
}

const runColumns = `id, spec_hash, spec_path, kernel, objective, strategy, device_name, device_uuid,
	driver, backend, gtune_version, settings, started_at, ended_at, status, host`

func scanRun(s interface{ Scan(...any) error }) (*Run, error) {
	var (
		r                 Run
		settings          string
		started, finished sql.NullString
	)
	if err := s.Scan(&r.ID, &r.SpecHash, &r.SpecPath, &r.Kernel, &r.Objective, &r.Strategy,
		&r.DeviceName, &r.DeviceUUID, &r.Driver, &r.Backend, &r.GtuneVersion, &settings,
		&started, &finished, &r.Status, &r.Host); err != nil {
		return nil, err
	}
	var err error
	if r.Settings, err = decodeSettings(settings); err != nil {
		return nil, fmt.Errorf("store: run %d settings: %v", r.ID, err)
	}
	if r.StartedAt, err = parseTime(started, "runs.started_at"); err != nil {
		return nil, err
	}
	if r.EndedAt, err = parseTime(finished, "runs.ended_at"); err != nil {
		return nil, err
	}
	return &r, nil
}

// Runs returns every run, oldest first.
func (db *DB) Runs() ([]*Run, error) {
	if err := db.Flush(); err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(context.Background(), `SELECT `+runColumns+` FROM runs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: reading runs from %s: %v", db.path, err)
	}
	defer rows.Close()
	var runs []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading runs from %s: %v", db.path, err)
	}
	return runs, nil
}

// RunArg returns the run a command line names (arg, its number).
// Errors (bad input): arg is not a number, db holds no such run; a read
// error.
func (db *DB) RunArg(arg string) (*Run, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return nil, badinput.New("RUN %q: want a run number (gtune runs lists them)", arg)
	}
	run, err := db.Run(id)
	if errors.Is(err, ErrNotFound) {
		return nil, badinput.New("%s holds no run %d (gtune runs --db %s lists them)", db.path, id, db.path)
	}
	return run, err
}

// Run returns run id, or an error wrapping ErrNotFound.
func (db *DB) Run(id int64) (*Run, error) {
	if err := db.Flush(); err != nil {
		return nil, err
	}
	r, err := scanRun(db.sql.QueryRowContext(context.Background(),
		`SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: run %d in %s: %w", id, db.path, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading run %d from %s: %v", id, db.path, err)
	}
	return r, nil
}

// MarkInterrupted sets the status of abandoned runs to "interrupted", with
// now as their end time, and returns how many it changed. A run is
// abandoned when its status is still "running", it was recorded on this
// host and no process with its pid exists here. Runs of live processes,
// including this one, are left alone, so MarkInterrupted is safe while
// other gtune processes tune into the same file; so are runs recorded on
// other hosts, whose processes this host cannot see (a database merged
// from a cluster's shards, or one copied here while a run went on): only
// their own host can tell. A reused pid makes a dead run look alive; it
// is then left "running", which errs on the safe side.
func (db *DB) MarkInterrupted() (int, error) {
	ctx := context.Background()
	host, _ := os.Hostname()
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if err := db.commitBatchLocked(); err != nil {
		return 0, err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: marking interrupted runs in %s: %v", db.path, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, host, pid FROM runs WHERE status = ?`, RunRunning)
	if err != nil {
		return 0, fmt.Errorf("store: marking interrupted runs in %s: %v", db.path, err)
	}
	var dead []int64
	for rows.Next() {
		var (
			id      int64
			runHost string
			pid     int
		)
		if err := rows.Scan(&id, &runHost, &pid); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store: marking interrupted runs in %s: %v", db.path, err)
		}
		if runHost == host && !processAlive(pid) {
			dead = append(dead, id)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: marking interrupted runs in %s: %v", db.path, err)
	}
	rows.Close()
	now := fmtTime(time.Now())
	for _, id := range dead {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, ended_at = ? WHERE id = ?`,
			RunInterrupted, now, id); err != nil {
			return 0, fmt.Errorf("store: marking run %d interrupted in %s: %v", id, db.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: marking interrupted runs in %s: %v", db.path, err)
	}
	return len(dead), nil
}
