package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func openTemp(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ptr(v float64) *float64 { return &v }

func newRun(t testing.TB, db *DB, specHash, uuid string) *Run {
	t.Helper()
	r := &Run{SpecHash: specHash, SpecPath: "specs/" + specHash + ".json", Kernel: "matmul",
		Objective: "time", Strategy: "brute_force", DeviceName: "NVIDIA H100", DeviceUUID: uuid,
		Driver: "570.86", Backend: "sim", GtuneVersion: "0.1.0"}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPragmas(t *testing.T) {
	db := openTemp(t)
	for _, c := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"foreign_keys", "1"},
		{"busy_timeout", "10000"},
		{"user_version", fmt.Sprint(SchemaVersion)},
	} {
		var got string
		if err := db.sql.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %q, want %q", c.pragma, got, c.want)
		}
	}
}

func TestRunAndEvaluationRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	r := &Run{SpecHash: "abc123", SpecPath: "/specs/matmul.json", Kernel: "matmul_kernel",
		Objective: "energy", Strategy: "genetic_algorithm", DeviceName: "NVIDIA H100 80GB HBM3",
		DeviceUUID: "GPU-1234", Driver: "570.86.15", Backend: "cuda", GtuneVersion: "0.1.0",
		Settings: map[string]any{"budget": 100.0, "seed": 7.0, "tags": []any{"a", "b"},
			"nested": map[string]any{"x": 1.5}, "bad": math.NaN()}}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	if r.ID != 1 || r.Status != RunRunning || r.StartedAt.Before(before.Add(-time.Second)) || !r.EndedAt.IsZero() {
		t.Fatalf("after BeginRun: ID %d, status %q, started %v, ended %v", r.ID, r.Status, r.StartedAt, r.EndedAt)
	}
	start := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	valid := &Evaluation{RunID: r.ID, Key: "16,1,4,2.5,true,x",
		Params: []Param{{"block_size_x", 16}, {"block_size_y", 1}, {"tile", 4},
			{"alpha", 2.5}, {"unroll", true}, {"variant", "x"}},
		Status: "valid", Objective: ptr(0.125),
		Observations: map[string]float64{"time": 1.5, "time_min": 1.25, "time_max": 1.75,
			"time_std": 0.1, "energy": 0.125, "power": 250, "sm_clock": 1980},
		Metrics:   map[string]float64{"GFLOP/s": 1234.5, "edp": 0.0001875},
		TimesMs:   []float64{1.25, 1.5, 1.75},
		Registers: 64, SharedStaticBytes: 4096, LocalBytes: 8,
		MaxError: 1e-6, CompileMs: 210.5, BenchmarkMs: 55.25, FrameworkMs: 3.5,
		StartedAt: start, FinishedAt: start.Add(300 * time.Millisecond)}
	// Params out of alphabetical order, and a float with an integral value.
	invalid := &Evaluation{RunID: r.ID, Key: "32,8,1,2.0,false,y",
		Params: []Param{{"block_size_x", 32}, {"block_size_y", 8}, {"tile", 1},
			{"alpha", 2.0}, {"unroll", false}, {"variant", "y"}},
		Status: "compile_failed", Reason: "error: too many resources requested",
		CompileMs: 99, StartedAt: start.Add(time.Second), FinishedAt: start.Add(2 * time.Second)}
	for _, e := range []*Evaluation{valid, invalid} {
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if valid.ID != 1 || invalid.ID != 2 {
		t.Fatalf("ids %d, %d; want 1, 2", valid.ID, invalid.ID)
	}
	if valid.SpecHash != "abc123" || valid.DeviceUUID != "GPU-1234" {
		t.Fatalf("Add did not fill the reuse key from the run: %q %q", valid.SpecHash, valid.DeviceUUID)
	}
	if err := db.EndRun(r.ID, RunDone); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Everything must come back from the file, not from memory.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Run(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != RunDone || got.EndedAt.Before(got.StartedAt) || !got.StartedAt.Equal(r.StartedAt) {
		t.Fatalf("run status %q, started %v (want %v), ended %v", got.Status, got.StartedAt, r.StartedAt, got.EndedAt)
	}
	wantRun := *r
	wantRun.Status, wantRun.EndedAt, wantRun.StartedAt = RunDone, got.EndedAt, got.StartedAt
	wantRun.Settings = map[string]any{"budget": 100.0, "seed": 7.0, "tags": []any{"a", "b"},
		"nested": map[string]any{"x": 1.5}, "bad": nil}
	if !reflect.DeepEqual(got, &wantRun) {
		t.Fatalf("run round trip:\n got %+v\nwant %+v", got, &wantRun)
	}
	runs, err := db.Runs()
	if err != nil || len(runs) != 1 || !reflect.DeepEqual(runs[0], got) {
		t.Fatalf("Runs() = %v, %v", runs, err)
	}

	es, err := db.Evaluations(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 {
		t.Fatalf("%d evaluations, want 2", len(es))
	}
	// Times come back in UTC; the originals are UTC already.
	if !reflect.DeepEqual(es[0], valid) {
		t.Errorf("valid evaluation round trip:\n got %+v\nwant %+v", es[0], valid)
	}
	if es[1].Objective != nil {
		t.Errorf("invalid evaluation objective = %v, want nil", *es[1].Objective)
	}
	wantInvalid := *invalid
	if !reflect.DeepEqual(es[1], &wantInvalid) {
		t.Errorf("invalid evaluation round trip:\n got %+v\nwant %+v", es[1], &wantInvalid)
	}
	// Kinds survive: 16 is an int, 2.0 a float64, even though JSON has one number type.
	if _, ok := es[1].Params[3].Value.(float64); !ok {
		t.Errorf("alpha read back as %T, want float64", es[1].Params[3].Value)
	}
	var params string
	if err := db.sql.QueryRow(`SELECT params FROM evaluations WHERE id = 2`).Scan(&params); err != nil {
		t.Fatal(err)
	}
	if want := `{"block_size_x":32,"block_size_y":8,"tile":1,"alpha":2.0,"unroll":false,"variant":"y"}`; params != want {
		t.Errorf("params column = %s, want %s", params, want)
	}
	if es, err := db.Evaluations(99); err != nil || len(es) != 0 {
		t.Errorf("Evaluations(99) = %v, %v; want none", es, err)
	}
	if _, err := db.Run(99); !errors.Is(err, ErrNotFound) {
		t.Errorf("Run(99) error = %v, want ErrNotFound", err)
	}
	if err := db.EndRun(99, RunDone); !errors.Is(err, ErrNotFound) {
		t.Errorf("EndRun(99) error = %v, want ErrNotFound", err)
	}
}

func TestNonFinite(t *testing.T) {
	db := openTemp(t)
	r := newRun(t, db, "h", "GPU-0")
	e := &Evaluation{RunID: r.ID, Key: "1", Params: []Param{{"p", 1}, {"q", math.Inf(1)}},
		Status: "valid", Objective: ptr(math.NaN()),
		Observations: map[string]float64{"time": 2, "energy": math.NaN(), "power": math.Inf(1)},
		Metrics:      map[string]float64{"edp": math.Inf(-1)},
		TimesMs:      []float64{1, math.NaN(), 3},
		MaxError:     math.NaN(), CompileMs: math.Inf(1), BenchmarkMs: 4, FrameworkMs: math.NaN()}
	if err := db.Add(e); err != nil {
		t.Fatal(err)
	}
	var obs, metrics, times, params string
	if err := db.sql.QueryRow(`SELECT observations, metrics, times_ms, params FROM evaluations`).
		Scan(&obs, &metrics, &times, &params); err != nil {
		t.Fatal(err)
	}
	if obs != `{"energy":null,"power":null,"time":2}` || metrics != `{"edp":null}` ||
		times != `[1,null,3]` || params != `{"p":1,"q":null}` {
		t.Errorf("stored JSON: %s %s %s %s", obs, metrics, times, params)
	}
	es, err := db.Evaluations(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	g := es[0]
	if g.Objective != nil {
		t.Errorf("NaN objective read back as %v, want nil", *g.Objective)
	}
	if !reflect.DeepEqual(g.Observations, map[string]float64{"time": 2}) || g.Metrics != nil ||
		!reflect.DeepEqual(g.TimesMs, []float64{1, 3}) ||
		!reflect.DeepEqual(g.Params, []Param{{"p", 1}, {"q", nil}}) {
		t.Errorf("read back %v %v %v %v", g.Observations, g.Metrics, g.TimesMs, g.Params)
	}
	if !math.IsNaN(g.MaxError) || !math.IsInf(g.CompileMs, 1) || g.BenchmarkMs != 4 || !math.IsNaN(g.FrameworkMs) {
		t.Errorf("scalars read back %v %v %v %v", g.MaxError, g.CompileMs, g.BenchmarkMs, g.FrameworkMs)
	}
	inf := &Evaluation{RunID: r.ID, Key: "2", Status: "valid", Objective: ptr(math.Inf(1))}
	if err := db.Add(inf); err != nil {
		t.Fatal(err)
	}
	es, _ = db.Evaluations(r.ID)
	if es[1].Objective == nil || !math.IsInf(*es[1].Objective, 1) {
		t.Errorf("+Inf objective read back as %v", es[1].Objective)
	}
}

func TestAddRejectsBadInput(t *testing.T) {
	db := openTemp(t)
	r := newRun(t, db, "h", "GPU-0")
	for _, c := range []struct {
		e    Evaluation
		want string
	}{
		{Evaluation{RunID: r.ID, Key: "", Status: "valid"}, "empty configuration key"},
		{Evaluation{RunID: r.ID, Key: "1", Status: "ok"}, `unknown status "ok"`},
		{Evaluation{RunID: r.ID, Key: "1", Status: "timeout", Objective: ptr(1)}, "only valid configurations"},
		{Evaluation{RunID: r.ID, Key: "1", Status: "valid", Params: []Param{{"a", 1}, {"a", 2}}}, `"a" appears twice`},
		{Evaluation{RunID: r.ID + 1, Key: "1", Status: "valid"}, "run 2 not found"},
		{Evaluation{RunID: r.ID, Key: "1", Status: "valid", Params: []Param{{"a", struct{ n int }{1}}}}, `"a" has a value of type struct`},
		{Evaluation{RunID: r.ID, Key: "1", Status: "valid", Params: []Param{{"", 1}}}, "empty name"},
	} {
		err := db.Add(&c.e)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%+v) error = %v, want one containing %q", c.e, err, c.want)
		}
	}
	var n int
	if err := db.sql.QueryRow(`SELECT count(*) FROM evaluations`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d evaluations stored after rejected adds (%v), want 0", n, err)
	}
	if err := db.BeginRun(&Run{Kernel: "k"}); err == nil || !strings.Contains(err.Error(), "run of k has no backend name") {
		t.Errorf("BeginRun without a backend: error %v", err)
	}
	if err := db.EndRun(r.ID, "running"); err == nil {
		t.Error("EndRun with status running: no error")
	}
}

func TestPrevious(t *testing.T) {
	db := openTemp(t)
	add := func(r *Run, key, status string, obj *float64) *Evaluation {
		e := &Evaluation{RunID: r.ID, Key: key, Params: []Param{{"x", key}}, Status: status, Objective: obj}
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	r1 := newRun(t, db, "spec-A", "GPU-0")
	add(r1, "1", "valid", ptr(10))
	add(r1, "2", "valid", ptr(20))
	add(r1, "3", "timeout", nil)
	r2 := newRun(t, db, "spec-A", "GPU-0")
	n1 := add(r2, "1", "valid", ptr(11))      // newer than r1's "1"
	n3 := add(r2, "3", "compile_failed", nil) // newer than r1's "3"
	n4 := add(r2, "4", "valid", ptr(40))
	// The same keys under another spec and on another device must not leak in.
	other := newRun(t, db, "spec-B", "GPU-0")
	add(other, "1", "valid", ptr(99))
	add(other, "2", "valid", ptr(99))
	otherDev := newRun(t, db, "spec-A", "GPU-1")
	add(otherDev, "2", "valid", ptr(98))
	add(otherDev, "5", "valid", ptr(98))
	// An evaluation whose reuse key is given explicitly wins over the run's.
	explicit := &Evaluation{RunID: other.ID, SpecHash: "spec-A", DeviceUUID: "GPU-0", Key: "2", Status: "valid", Objective: ptr(21)}
	if err := db.Add(explicit); err != nil {
		t.Fatal(err)
	}

	prev, err := db.Previous("spec-A", "GPU-0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"1": n1.ID, "2": explicit.ID, "3": n3.ID, "4": n4.ID}
	got := map[string]int64{}
	for k, e := range prev {
		got[k] = e.ID
		if e.Key != k {
			t.Errorf("Previous[%q].Key = %q", k, e.Key)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Previous ids = %v, want %v", got, want)
	}
	if *prev["1"].Objective != 11 || prev["3"].Status != "compile_failed" || *prev["2"].Objective != 21 {
		t.Errorf("Previous values: 1→%v, 3→%s, 2→%v", *prev["1"].Objective, prev["3"].Status, *prev["2"].Objective)
	}
	prev, err = db.Previous("spec-A", "GPU-1")
	if err != nil || len(prev) != 2 || *prev["2"].Objective != 98 || prev["5"] == nil {
		t.Errorf("Previous(spec-A, GPU-1) = %v, %v", prev, err)
	}
	prev, err = db.Previous("spec-C", "GPU-0")
	if err != nil || prev == nil || len(prev) != 0 {
		t.Errorf("Previous(spec-C, GPU-0) = %v, %v; want empty map", prev, err)
	}
}

func TestOpenUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "regular")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"parent is a regular file": filepath.Join(file, "results.db"),
		"under /proc":              "/proc/gtune-store-test/results.db",
		"in /proc itself":          "/proc/results.db",
		"is a directory":           dir,
		"missing directory":        filepath.Join(dir, "no", "such", "results.db"),
		"not a database":           file,
	}
	if os.Geteuid() != 0 { // root may write into a read-only directory
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		cases["read-only directory"] = filepath.Join(ro, "results.db")
	}
	for name, path := range cases {
		db, err := Open(path)
		if err == nil {
			db.Close()
			t.Errorf("%s: Open(%q) succeeded", name, path)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name %q", name, err, path)
		}
		t.Logf("%s: %v", name, err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("Open changed the non-database file: %q, %v", b, err)
	}
	if _, err := Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

// A database that exists but whose file cannot be written must fail at
// Open, not at the first Add.
func TestOpenReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only files")
	}
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if db, err := Open(path); err == nil {
		db.Close()
		t.Fatal("Open of a read-only database succeeded")
	} else if !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name %q", err, path)
	}
}

// URI metacharacters in the file name must not change which file is used.
func TestOpenOddFileName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a b?mode=ro#c%20.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	newRun(t, db, "h", "GPU-0")
	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	db.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(path) {
		t.Fatalf("directory holds %v, want only %q", entries, filepath.Base(path))
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if runs, err := db.Runs(); err != nil || len(runs) != 1 {
		t.Fatalf("Runs() = %v, %v; want 1 run", runs, err)
	}
}

func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	newer := SchemaVersion + 1
	if _, err := db.sql.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, newer)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d is newer", newer)) {
		t.Fatalf("Open of a version-%d database: %v", newer, err)
	}
}

// The migration hook runs the missing steps, in order, inside Open's
// transaction; a failing step leaves the file at its old version.
func TestMigrationHook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, db, "h", "GPU-0")
	db.Close()

	saved := migrations
	defer func() { migrations = saved }()
	migrations = append(append([]migration{}, saved...), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT 'v2'`)
		if err != nil {
			return err
		}
		return errors.New("step fails")
	})
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("from version %d to %d: step fails", SchemaVersion, SchemaVersion+1)) {
		t.Fatalf("failing migration: %v", err)
	}
	migrations = saved
	db, err = Open(path) // still version SchemaVersion, column not added
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.sql.Exec(`SELECT note FROM runs`); err == nil {
		t.Error("column of the failed migration exists")
	}
	db.Close()

	migrations = append(append([]migration{}, saved...), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT 'v2'`)
		return err
	})
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var note string
	var version int
	if err := db.sql.QueryRow(`SELECT note FROM runs WHERE id = ?`, r.ID).Scan(&note); err != nil || note != "v2" {
		t.Errorf("note = %q, %v", note, err)
	}
	if err := db.sql.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion+1 {
		t.Errorf("user_version = %d, %v; want %d", version, err, SchemaVersion+1)
	}
}

func TestMarkInterrupted(t *testing.T) {
	db := openTemp(t)
	live := newRun(t, db, "h", "GPU-0")    // this process: alive
	crashed := newRun(t, db, "h", "GPU-0") // given the pid of a finished process below
	moved := newRun(t, db, "h", "GPU-0")   // recorded on another host: only that host can tell
	done := newRun(t, db, "h", "GPU-0")
	if err := db.EndRun(done.ID, RunDone); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := child.ProcessState.Pid()
	if _, err := db.sql.Exec(`UPDATE runs SET pid = ? WHERE id = ?`, deadPID, crashed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.sql.Exec(`UPDATE runs SET host = 'elsewhere' WHERE id = ?`, moved.ID); err != nil {
		t.Fatal(err)
	}
	n, err := db.MarkInterrupted()
	if err != nil || n != 1 {
		t.Fatalf("MarkInterrupted() = %d, %v; want 1", n, err)
	}
	want := map[int64]string{live.ID: RunRunning, crashed.ID: RunInterrupted, moved.ID: RunRunning, done.ID: RunDone}
	for id, status := range want {
		r, err := db.Run(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != status || (status == RunInterrupted && r.EndedAt.IsZero()) {
			t.Errorf("run %d: status %q, ended %v; want %q", id, r.Status, r.EndedAt, status)
		}
	}
	if n, err := db.MarkInterrupted(); err != nil || n != 0 {
		t.Errorf("second MarkInterrupted() = %d, %v; want 0", n, err)
	}
}

func TestParamKinds(t *testing.T) {
	in := []Param{{"i8", int8(-3)}, {"u16", uint16(700)}, {"i64", int64(1) << 40}, {"f32", float32(0.5)},
		{"f32int", float32(3)}, {"f64int", 1e3}, {"tiny", 1e-300}, {"s", "a,b"}, {"nil", nil}}
	s, err := encodeParams(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"i8":-3,"u16":700,"i64":1099511627776,"f32":0.5,"f32int":3.0,"f64int":1000.0,"tiny":1e-300,"s":"a,b","nil":null}`; s != want {
		t.Fatalf("encoded %s, want %s", s, want)
	}
	got, err := decodeParams(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{{"i8", -3}, {"u16", 700}, {"i64", 1 << 40}, {"f32", 0.5},
		{"f32int", 3.0}, {"f64int", 1000.0}, {"tiny", 1e-300}, {"s", "a,b"}, {"nil", nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %#v, want %#v", got, want)
	}
}

func TestAnnotate(t *testing.T) {
	db, r, e := oneEvaluation(t)
	if err := db.Annotate(e.ID, "implausible: too fast", "implausible"); err != nil {
		t.Fatal(err)
	}
	if err := db.Annotate(e.ID, "second note", ""); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Evaluations(r.ID)
	if err != nil || len(evs) != 1 {
		t.Fatalf("%v %v", evs, err)
	}
	got := evs[0]
	if got.Reason != "implausible: too fast; second note" || got.Observations["implausible"] != 1 || got.Observations["time"] != 0.01 || got.Status != "valid" {
		t.Errorf("reason %q observations %v status %s", got.Reason, got.Observations, got.Status)
	}
	if err := db.Annotate(e.ID+100, "x", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	// An evaluation still in an open batch is committed first.
	if err := db.SetBatch(100, 0); err != nil {
		t.Fatal(err)
	}
	f := &Evaluation{RunID: r.ID, Key: "2", Params: []Param{{Name: "x", Value: 2}}, Status: "valid", Objective: e.Objective,
		Observations: map[string]float64{"time": 0.02}}
	if err := db.Add(f); err != nil {
		t.Fatal(err)
	}
	if err := db.Annotate(f.ID, "batched", "implausible"); err != nil {
		t.Fatalf("annotating a batched evaluation: %v", err)
	}
}

// OpenReadOnly reads what Open wrote, changes no byte of the file, refuses
// writes, and refuses a missing, empty or foreign file without creating
// it.
func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, w, "abc", "GPU-1")
	if err := w.Add(&Evaluation{RunID: r.ID, Key: "1", Params: []Param{{Name: "x", Value: 1}}, Status: "valid", Objective: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ro.Runs()
	if err != nil || len(runs) != 1 || runs[0].SpecHash != "abc" {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	es, err := ro.Evaluations(r.ID)
	if err != nil || len(es) != 1 || *es[0].Objective != 2 {
		t.Fatalf("evaluations %+v, %v", es, err)
	}
	if err := ro.BeginRun(&Run{SpecHash: "x", DeviceUUID: "y", Backend: "sim"}); err == nil {
		t.Error("a write through a read-only database succeeded")
	}
	ro.Close()
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the file changed (%d → %d bytes), %v", len(before), len(after), err)
	}
	os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "spec.json"), []byte(`{"General": {}}`), 0o644)
	for name, want := range map[string]string{
		"missing.db": "no such file",
		"empty.db":   "the file is empty",
		"spec.json":  "the file is not an SQLite database",
	} {
		p := filepath.Join(dir, name)
		_, err := OpenReadOnly(p)
		if err == nil || err.Error() != fmt.Sprintf("store: cannot read results database %q: %s", p, want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(err) {
		t.Errorf("OpenReadOnly created the missing file: %v", err)
	}
}

// Settings added after a run ended are merged into its own: new names
// added, the same name replaced, the others kept; an unknown run or a
// value JSON cannot encode is refused and writes nothing.
func TestSetRunSettings(t *testing.T) {
	db := openTemp(t)
	r := &Run{SpecHash: "h", Kernel: "k", Objective: "time", Strategy: "brute_force", Backend: "sim",
		Settings: map[string]any{"seed": 1.0, "energy": true}}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	if err := db.EndRun(r.ID, RunDone); err != nil {
		t.Fatal(err)
	}
	if err := db.SetRunSettings(r.ID, map[string]any{"ncu_profiled": 23, "seed": 2.0, "ncu_metrics": []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Run(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"seed": 2.0, "energy": true, "ncu_profiled": 23.0, "ncu_metrics": []any{"a", "b"}}
	if !reflect.DeepEqual(got.Settings, want) || got.Status != RunDone {
		t.Errorf("settings %v, status %s; want %v, done", got.Settings, got.Status, want)
	}
	if err := db.SetRunSettings(99, map[string]any{"x": 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run: %v", err)
	}
	if err := db.SetRunSettings(r.ID, map[string]any{"x": make(chan int)}); err == nil {
		t.Error("a value JSON cannot encode: no error")
	}
	if again, _ := db.Run(r.ID); !reflect.DeepEqual(again.Settings, want) {
		t.Errorf("a refused call wrote: %v", again.Settings)
	}
}

// TestOtherDevices: the newest evaluation of each configuration of the
// spec on every other GPU, grouped by GPU in UUID order, named by the
// newest run there; the GPU asked about and other specs stay out.
func TestOtherDevices(t *testing.T) {
	db := openTemp(t)
	add := func(r *Run, key string, time float64) *Evaluation {
		e := &Evaluation{RunID: r.ID, Key: key, Params: []Param{{"x", key}}, Status: "valid", Objective: ptr(time), Observations: map[string]float64{"time": time}}
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	add(newRun(t, db, "spec-A", "GPU-0"), "1", 1)
	old := newRun(t, db, "spec-A", "GPU-2")
	add(old, "1", 20)
	add(old, "2", 21)
	newer := &Run{SpecHash: "spec-A", SpecPath: "a.json", Kernel: "k", Objective: "time", Strategy: "bayes_opt",
		DeviceName: "NVIDIA H100 NVL", DeviceUUID: "GPU-2", Driver: "570.86", Backend: "cuda", GtuneVersion: "0.1.0"}
	if err := db.BeginRun(newer); err != nil {
		t.Fatal(err)
	}
	n1 := add(newer, "1", 22)
	g1 := add(newRun(t, db, "spec-A", "GPU-1"), "3", 13)
	add(newRun(t, db, "spec-B", "GPU-3"), "1", 99)

	devs, err := db.OtherDevices("spec-A", "GPU-0")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	var order []string
	for _, d := range devs {
		order = append(order, d.DeviceUUID+" "+d.DeviceName)
		got[d.DeviceUUID] = map[string]float64{}
		for k, e := range d.Evaluations {
			got[d.DeviceUUID][k] = e.Observations["time"]
		}
	}
	if want := []string{"GPU-1 NVIDIA H100", "GPU-2 NVIDIA H100 NVL"}; !reflect.DeepEqual(order, want) {
		t.Errorf("devices %q, want %q", order, want)
	}
	if want := map[string]map[string]float64{"GPU-1": {"3": 13}, "GPU-2": {"1": 22, "2": 21}}; !reflect.DeepEqual(got, want) {
		t.Errorf("times by device %v, want %v", got, want)
	}
	if devs[1].Evaluations["1"].ID != n1.ID || devs[0].Evaluations["3"].ID != g1.ID {
		t.Errorf("ids %d, %d; want the newest, %d and %d", devs[1].Evaluations["1"].ID, devs[0].Evaluations["3"].ID, n1.ID, g1.ID)
	}
	if devs, err := db.OtherDevices("spec-C", "GPU-0"); err != nil || devs != nil {
		t.Errorf("an unknown spec: %v, %v; want none", devs, err)
	}
}
