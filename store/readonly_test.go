package store

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// OpenReadOnly reads a database of an older schema through a migrated
// copy: its runs read back, and the file, its folder's listing and every
// byte stay as they were (the copy is gone after Close).
func TestOpenReadOnlyOlderSchema(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	db := openSchema(t, path, true)
	r := newRun(t, db, "h", "GPU-0")
	db.Close()
	sum := func() [32]byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	list := func() []string {
		es, _ := os.ReadDir(dir)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	before, names := sum(), list()
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ro.Runs()
	if err != nil || len(runs) != 1 || runs[0].ID != r.ID || runs[0].Kernel != "matmul" {
		t.Fatalf("runs of the old database: %v, %v", runs, err)
	}
	if _, err := ro.Repeats(1); err != nil {
		t.Errorf("the newest schema's table in the copy: %v", err)
	}
	copyDir := ro.copyDir
	if copyDir == "" {
		t.Error("no migrated copy")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(copyDir); err == nil {
		t.Errorf("the copy %s is left after Close", copyDir)
	}
	if sum() != before {
		t.Error("reading the old database changed its bytes")
	}
	if got := list(); !slices.Equal(got, names) {
		t.Errorf("the folder holds %v after reading; before %v", got, names)
	}
	// Still of the old schema: a writable Open upgrades it, not a read.
	check, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	check.Close()
	if sum() == before {
		t.Error("Open did not upgrade the old database (the test's old schema is not old)")
	}
}

// The cost of reading a database of an older schema (runs, show, report,
// a merge's shard): the migrated copy OpenReadOnly makes, against
// opening a current one. The database holds 10,000 evaluations.
func BenchmarkOpenReadOnly(b *testing.B) {
	for _, old := range []bool{false, true} {
		name := "current"
		if old {
			name = "older-schema"
		}
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "r.db")
			db := openSchema(b, path, old)
			r := newRun(b, db, "h", "GPU-0")
			db.SetBatch(1000, 0)
			for i := range 10000 {
				if err := db.Add(sampleEvaluation(r.ID, i)); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
			b.ResetTimer()
			for b.Loop() {
				ro, err := OpenReadOnly(path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ro.Runs(); err != nil {
					b.Fatal(err)
				}
				ro.Close()
			}
		})
	}
}

// openSchema opens a new database at path with the current schema, or
// with the one before it (old).
func openSchema(tb testing.TB, path string, old bool) *DB {
	tb.Helper()
	saved := migrations
	defer func() { migrations = saved }()
	if old {
		migrations = saved[:len(saved)-1]
	}
	db, err := Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}
