// Package store is gtune's results database: one SQLite file (through the
// pure-Go driver modernc.org/sqlite, so it builds with CGO_ENABLED=0) holding
// the tuning runs and every evaluated configuration, so that a re-run can
// reuse earlier measurements and reports can be made after the fact.
//
// # Durability
//
// The database runs in WAL journal mode with synchronous=FULL, and every
// evaluation is its own transaction, committed before Add returns (unless
// SetBatch groups them, as a replay does: see there; on the 2-core
// development machine BenchmarkAddBatched measured 0.10-0.18 ms per Add in
// batches of 256 against 0.78-1.05 ms for BenchmarkAdd).
//
//   - Against a crash of the process (panic, kill -9, OOM killer) WAL with
//     synchronous=NORMAL would already be enough: a commit is a write into
//     the -wal file, and data written by write(2) lives in the kernel's page
//     cache whatever happens to the process. An interrupted transaction has
//     no commit frame, so it is ignored on recovery; the database is never
//     corrupted and loses at most the evaluation that was being written.
//   - synchronous=FULL additionally fsyncs the WAL on every commit, which
//     extends the same guarantee to an operating-system crash or a power
//     loss (with NORMAL those may roll back the last few committed
//     evaluations, though still without corruption). The price is one fsync
//     per evaluation: BenchmarkAdd measured about 0.5-1 ms per Add with
//     FULL against 0.15-0.25 ms with NORMAL on an ext4 virtual disk, far
//     below the hundreds of milliseconds that compiling and benchmarking
//     one configuration take. A crash of the whole machine is a real
//     failure mode of a tuner that drives a GPU at its limits, so FULL is
//     chosen.
//
// Several processes may open the same file at once (WAL allows readers
// concurrently with one writer; writers wait up to busyTimeout for each
// other). The file must be on a local file system, as WAL requires.
//
// # Non-finite numbers
//
// JSON has no NaN or Inf. In the JSON columns (observations, metrics,
// times_ms, settings, params) a non-finite number is stored as null. It reads
// back as absent: the key is left out of Observations and Metrics, the element
// is left out of TimesMs; in Settings and Params the name is kept with a nil
// value. In the REAL columns SQLite stores NaN as NULL: a NaN Objective reads
// back as nil, a NaN MaxError, CompileMs, BenchmarkMs or FrameworkMs reads
// back as NaN. ±Inf is kept as such in REAL columns.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteHeader starts every SQLite 3 database file.
const sqliteHeader = "SQLite format 3\x00"

// busyTimeout is how long a connection waits for another writer (another
// gtune process on the same file) before a write fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// ErrNotFound is wrapped by the errors of Run and EndRun for an unknown run.
var ErrNotFound = errors.New("not found")

// DB is an open results database. It is safe for concurrent use by several
// goroutines; writes of one DB are serialised.
type DB struct {
	sql      *sql.DB
	path     string
	readOnly bool // opened by OpenReadOnly
	// copyDir holds the migrated copy OpenReadOnly reads of a database
	// of an older schema; Close removes it. "" otherwise.
	copyDir string
	wmu     sync.Mutex // serialises this process's writers: one SQLite writer at a time anyway

	// Batched commits (SetBatch), guarded by wmu.
	batchN     int           // evaluations per transaction; 0 or 1: each Add commits
	batchDelay time.Duration // the longest an evaluation waits in an open batch; 0: no timer
	batch      *openBatch    // the open transaction, nil when none
	batchErr   error         // a failed commit of the timer, for the next caller
}

// openBatch is a transaction holding Add calls not yet committed.
type openBatch struct {
	tx    *sql.Tx
	n     int
	timer *time.Timer
}

// migration upgrades the schema by one version inside the transaction tx.
type migration func(ctx context.Context, tx *sql.Tx) error

// migrations is the migration hook: migrations[i] upgrades a database from
// schema version i to version i+1, and the version of a database is kept in
// PRAGMA user_version (0 for a new file). To change the schema, append a
// function; never edit one that has shipped. Open runs the missing steps in
// one transaction, so an upgrade either completes or leaves the file as it
// was.
var migrations = []migration{
	migrateV1,
	migrateV2,
	migrateV3,
	migrateV4,
	migrateV5,
	migrateV6,
	migrateV7,
}

// SchemaVersion is the schema version this package writes (PRAGMA
// user_version of a database Open has upgraded); it equals len(migrations).
const SchemaVersion = 7

func init() {
	if len(migrations) != SchemaVersion {
		panic("store: SchemaVersion does not match the number of migrations")
	}
}

func migrateV1(ctx context.Context, tx *sql.Tx) error {
	const schema = `
CREATE TABLE runs (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	spec_hash     TEXT NOT NULL,
	spec_path     TEXT NOT NULL,
	kernel        TEXT NOT NULL,
	objective     TEXT NOT NULL,
	strategy      TEXT NOT NULL,
	device_name   TEXT NOT NULL,
	device_uuid   TEXT NOT NULL,
	driver        TEXT NOT NULL,
	backend       TEXT NOT NULL CHECK (backend IN ('cuda', 'sim')),
	gtune_version TEXT NOT NULL,
	settings      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
	started_at    TEXT NOT NULL,
	ended_at      TEXT,
	status        TEXT NOT NULL CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
	host          TEXT NOT NULL DEFAULT '',
	pid           INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE evaluations (
	id                  INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id              INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	spec_hash           TEXT NOT NULL,
	device_uuid         TEXT NOT NULL,
	config_key          TEXT NOT NULL,
	params              TEXT NOT NULL CHECK (json_valid(params)),
	status              TEXT NOT NULL CHECK (status IN ('valid', 'compile_failed', 'launch_failed',
	                        'runtime_failed', 'timeout', 'verification_failed')),
	reason              TEXT NOT NULL DEFAULT '',
	objective           REAL,
	observations        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(observations)),
	metrics             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metrics)),
	times_ms            TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(times_ms)),
	registers           INTEGER NOT NULL DEFAULT 0,
	shared_static_bytes INTEGER NOT NULL DEFAULT 0,
	local_bytes         INTEGER NOT NULL DEFAULT 0,
	max_error           REAL,
	compile_ms          REAL,
	benchmark_ms        REAL,
	framework_ms        REAL,
	started_at          TEXT,
	finished_at         TEXT
);
CREATE INDEX evaluations_reuse ON evaluations (spec_hash, device_uuid, config_key);
CREATE INDEX evaluations_run ON evaluations (run_id);
`
	_, err := tx.ExecContext(ctx, schema)
	return err
}

// migrateV3 adds typed observations (one row per quantity, with its unit
// and how it was measured, for the whole plan or one of its launches) and
// each evaluation's launches (resources and event times per kernel
// launch, JSON). Evaluations written before keep their observations map;
// Observations reads those back with the built-in units and the method
// MethodBeforeV3.
func migrateV3(ctx context.Context, tx *sql.Tx) error {
	const schema = `
CREATE TABLE observations (
	evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
	launch        INTEGER NOT NULL, -- -1: the whole plan
	name          TEXT NOT NULL,
	unit          TEXT NOT NULL,
	value         REAL,
	method        TEXT NOT NULL,
	PRIMARY KEY (evaluation_id, launch, name)
) WITHOUT ROWID;
ALTER TABLE evaluations ADD COLUMN launches TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(launches));
`
	_, err := tx.ExecContext(ctx, schema)
	return err
}

// migrateV2 lets runs.backend be "replay" (runs replayed from a recorded
// cache, package cache). SQLite cannot alter a CHECK constraint, and
// rebuilding the table would cascade-delete the evaluations (foreign keys
// cannot be switched off inside Open's transaction), so the constraint is
// loosened in the stored schema text, the procedure SQLite documents for
// such changes ("ALTER TABLE", section "Making Other Kinds Of Table Schema
// Changes"); every existing row satisfies the looser constraint.
func migrateV2(ctx context.Context, tx *sql.Tx) error {
	return replaceRunsCheck(ctx, tx, "CHECK (backend IN ('cuda', 'sim'))", "CHECK (backend IN ('cuda', 'sim', 'replay'))")
}

// replaceRunsCheck replaces the CHECK constraint old of table runs by
// loose in the stored schema text (see migrateV2 for why, and SQLite's
// procedure), and proves the change.
func replaceRunsCheck(ctx context.Context, tx *sql.Tx, old, loose string) error {
	var schemaVersion int
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&schemaVersion); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA writable_schema = ON"); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'runs'`, old, loose)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return fmt.Errorf("table runs not found")
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", schemaVersion+1)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA writable_schema = OFF"); err != nil {
		return err
	}
	var sqlText string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'runs'`).Scan(&sqlText); err != nil {
		return err
	}
	if !strings.Contains(sqlText, loose) {
		return fmt.Errorf("the backend constraint of table runs was not updated")
	}
	return nil
}

// Open opens the results database at path, creating the file and the
// schema when missing and upgrading an older schema. The directory must
// exist. An existing file that is neither empty nor an SQLite database is
// refused and left untouched. Open proves the file writable before it returns (it creates the
// file, then takes the write lock and writes the schema version), so that
// an unusable path fails here, before any GPU work, with an error naming
// the path. A database written by a newer gtune (higher schema version) is
// refused.
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: the results database path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: cannot open results database %q: %v", path, err)
	}
	fail := func(err error) error {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in our message already
		}
		return fmt.Errorf("store: cannot open results database %q for writing: %v", abs, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fail(errors.New("it is a directory"))
	}
	// Creating the file ourselves gives the operating system's reason
	// (permission denied, not a directory, read-only file system) instead
	// of SQLite's generic "unable to open database file".
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fail(err)
	}
	// SQLite takes a short non-database file for an empty database and
	// overwrites it; refuse anything that is neither empty nor SQLite, so
	// that a mistyped path cannot destroy, say, the spec file.
	header := make([]byte, len(sqliteHeader))
	n, _ := io.ReadFull(f, header)
	f.Close()
	if n > 0 && string(header[:n]) != sqliteHeader {
		return nil, fail(errors.New("the file exists and is not an SQLite database"))
	}

	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate") // take the write lock at BEGIN: no lock upgrade can fail half-way
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fail(err)
	}
	db := &DB{sql: sdb, path: abs}
	if err := db.init(context.Background()); err != nil {
		sdb.Close()
		return nil, fail(err)
	}
	return db, nil
}

// OpenReadOnly opens an existing results database for reading only
// (gtune runs, show, export): nothing is created or written, so a database
// on a read-only file system can be listed. Writes through the returned DB
// fail. Errors (naming the path): the file does not exist, is a directory
// or is not an SQLite database; its schema is newer than this gtune's. A
// database of an older schema is read through a migrated copy
// (migratedCopy), never upgraded in place: the file's bytes stay as
// they were.
func OpenReadOnly(path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil || path == "" {
		return nil, fmt.Errorf("store: cannot open results database %q: %v", path, err)
	}
	fail := func(err error) error {
		return fmt.Errorf("store: cannot read results database %q: %v", abs, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fail(errors.New("no such file"))
	case err != nil:
		return nil, fail(err)
	case fi.IsDir():
		return nil, fail(errors.New("it is a directory"))
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fail(err)
	}
	header := make([]byte, len(sqliteHeader))
	n, _ := io.ReadFull(f, header)
	f.Close()
	if n == 0 {
		return nil, fail(errors.New("the file is empty"))
	}
	if string(header[:n]) != sqliteHeader {
		return nil, fail(errors.New("the file is not an SQLite database"))
	}
	// mode=ro reads a WAL database along with its -wal and -shm files,
	// which a writer keeps while it has the file open; where there is no
	// -wal file, no writer has it open and mode=ro would create the pair
	// beside the file and leave it there, so the file is read as
	// immutable (as it is where the pair cannot be made: a read-only
	// mount).
	modes := []string{"mode=ro", "mode=ro&immutable=1"}
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		modes = modes[1:]
	}
	var lastErr error
	for _, extra := range modes {
		q := url.Values{}
		q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
		dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + extra + "&" + q.Encode()
		sdb, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fail(err)
		}
		var version int
		if err := sdb.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
			sdb.Close()
			lastErr = err
			continue
		}
		switch target := len(migrations); {
		case version > target:
			sdb.Close()
			return nil, fail(fmt.Errorf("its schema version %d is newer than this gtune's %d", version, target))
		case version < target:
			db, err := migratedCopy(sdb, abs)
			sdb.Close()
			if err != nil {
				return nil, fail(fmt.Errorf("its schema version %d is older than this gtune's %d, and a migrated copy could not be made: %v", version, target, err))
			}
			return db, nil
		}
		return &DB{sql: sdb, path: abs, readOnly: true}, nil
	}
	return nil, fail(lastErr)
}

// migratedCopy reads the database of an older schema open on src
// (read-only) into a copy in a temporary folder (VACUUM INTO: a
// consistent snapshot, its write-ahead log included, without a write to
// the original), upgrades the copy's schema and opens it read-only. The
// copy is removed when the returned DB closes. Reading an old database
// so costs a copy of it on the temporary file system (os.TempDir).
func migratedCopy(src *sql.DB, abs string) (*DB, error) {
	dir, err := os.MkdirTemp("", "gtune-read-")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, "copy.db")
	if _, err := src.Exec("VACUUM INTO ?", tmp); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	w, err := Open(tmp)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := w.Close(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	sdb, err := sql.Open("sqlite", "file:"+(&url.URL{Path: tmp}).EscapedPath()+"?mode=ro&"+q.Encode())
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &DB{sql: sdb, path: abs, readOnly: true, copyDir: dir}, nil
}

// init checks the journal mode and brings the schema to len(migrations) in
// one write transaction; the final user_version write is the proof that
// the file is writable even when there is nothing to migrate.
func (db *DB) init(ctx context.Context) error {
	var mode string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not WAL (is the file on a network file system?)", mode)
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	tx, err := db.sql.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see _txlock)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	target := len(migrations)
	if version > target {
		return fmt.Errorf("its schema version %d is newer than this gtune's %d", version, target)
	}
	for v := version; v < target; v++ {
		if err := migrations[v](ctx, tx); err != nil {
			return fmt.Errorf("migrating the schema from version %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", target)); err != nil {
		return err
	}
	return tx.Commit()
}

// Close commits the open batch (SetBatch) and closes the database. The
// last connection to close checkpoints the WAL into the main file. Its
// error is the batch's commit error (or an earlier commit of the timer's)
// when there is one: those evaluations are lost.
func (db *DB) Close() error {
	db.wmu.Lock()
	err := db.commitBatchLocked()
	db.batchN, db.batchDelay = 0, 0
	db.wmu.Unlock()
	if cerr := db.sql.Close(); err == nil {
		err = cerr
	}
	if db.copyDir != "" {
		os.RemoveAll(db.copyDir)
	}
	return err
}

// SetBatch groups the evaluations Add stores into transactions of up to n
// evaluations: a batch is committed (one fsync) when its n-th evaluation is
// added, when maxDelay has passed since its first (a timer; 0: no timer),
// and before every other method of db reads or writes (BeginRun, EndRun,
// Previous, Evaluations, Runs, Run, MarkInterrupted, AddMany, Flush,
// Close), so that db itself never shows a partial state. n ≤ 1 turns
// batching off (each Add is its own committed transaction again), after
// committing the open batch.
//
// The price is durability: Add returns before its evaluation is committed,
// so a crash of the process or the machine loses the open batch (at most
// n evaluations, at most maxDelay old; the database stays consistent and
// keeps every committed batch), and while a batch is open this process
// holds SQLite's write lock, so another process writing the same file
// waits for it (up to busyTimeout, 10 s: keep maxDelay well below). That
// suits a replay of a recorded cache, which can be run again; a live tuning
// run keeps the default, one committed transaction per evaluation. A
// commit that fails loses its whole batch: the error is returned by the
// call that committed it (Add, Flush, Close, ...), or, for the timer's
// commit, by the next call of one of those. Errors: maxDelay < 0, or the
// commit of the open batch failing.
func (db *DB) SetBatch(n int, maxDelay time.Duration) error {
	if maxDelay < 0 {
		return fmt.Errorf("store: SetBatch: negative delay %s", maxDelay)
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	err := db.commitBatchLocked()
	if n <= 1 {
		n, maxDelay = 0, 0
	}
	db.batchN, db.batchDelay = n, maxDelay
	return err
}

// Flush commits the open batch of SetBatch, if any. Its error is that
// commit's (the batch is lost) or that of an earlier commit of the timer.
func (db *DB) Flush() error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	return db.commitBatchLocked()
}

// commitBatchLocked commits the open batch and returns its error, or the
// pending error of a commit the timer made; wmu must be held.
func (db *DB) commitBatchLocked() error {
	err := db.batchErr
	db.batchErr = nil
	b := db.batch
	if b == nil {
		return err
	}
	db.batch = nil
	if b.timer != nil {
		b.timer.Stop()
	}
	if cerr := b.tx.Commit(); cerr != nil && err == nil {
		err = fmt.Errorf("store: committing a batch of %d evaluations to %s (they are lost): %v", b.n, db.path, cerr)
	}
	return err
}

// batchTx gives the open batch's transaction, beginning one (and its
// timer) when none is open; wmu must be held.
func (db *DB) batchTx(ctx context.Context) (*openBatch, error) {
	if db.batch != nil {
		return db.batch, nil
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	b := &openBatch{tx: tx}
	if db.batchDelay > 0 {
		b.timer = time.AfterFunc(db.batchDelay, func() {
			db.wmu.Lock()
			defer db.wmu.Unlock()
			if db.batch != b {
				return // committed already
			}
			if err := db.commitBatchLocked(); err != nil {
				db.batchErr = err
			}
		})
	}
	db.batch = b
	return b, nil
}

// Path is the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// timeLayout is fixed-width UTC, so that text order is time order in SQL.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// fmtTime formats t for a TEXT column; the zero time is NULL.
func fmtTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

// parseTime reads a TEXT time column; NULL is the zero time.
func parseTime(s sql.NullString, column string) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: column %s: bad time %q: %v", column, s.String, err)
	}
	return t, nil
}
