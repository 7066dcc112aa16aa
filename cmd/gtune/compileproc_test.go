package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// Tuning with compile processes on the simulated GPU: a configuration
// whose compiler process dies fails to compile with the crash as its
// reason, the run goes on, and every other result is the one compiling in
// this process gives.
func TestTuneCompileProcessesCrash(t *testing.T) {
	specPath := writeSpec(t, `"CompileFails": "block_size_x == 992",`, `"CompileFails": "block_size_x == 992", "CompileCrashes": "block_size_x == 64",`)
	type doc struct {
		Best struct {
			Key        string         `json:"key"`
			Objectives map[string]any `json:"objectives"`
		} `json:"best"`
		Evaluated int `json:"evaluated"`
		Compiled  int `json:"compiled"`
		Invalid   int `json:"invalid"`
		Pool      *struct {
			Processes, Compilations, Died, TimedOut int
		} `json:"compile_processes"`
	}
	tune := func(procs string, cache ...string) (doc, string) {
		db := filepath.Join(t.TempDir(), "r.db")
		if cache == nil {
			cache = []string{"--no-compile-cache"}
		}
		args := append([]string{"tune", specPath, "--backend", "sim", "--db", db, "--json", "--compile-processes", procs}, cache...)
		code, out, errs := gtune(t, args...)
		if code != 0 {
			t.Fatalf("--compile-processes %s: exit %d: %s", procs, code, errs)
		}
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return d, db
	}
	inProc, _ := tune("0")
	pooled, db := tune("2")
	if inProc.Pool != nil {
		t.Errorf("in-process run reports compile processes: %+v", inProc.Pool)
	}
	// 112 valid configurations, each compiled once: 4 (block_size_x 64)
	// crash their process; the other 108 are answered (105 binaries, 3
	// rejected: block_size_x 992), and so is the reference configuration.
	if p := pooled.Pool; p == nil || p.Processes != 2 || p.Died != 4 || p.TimedOut != 0 || p.Compilations != 108 || pooled.Compiled != 105 {
		// 108: each configuration once, the reference's too (its
		// reference run compiled it a second time before the one
		// build layer).
		t.Fatalf("compile processes: %+v, %d compiled; want 2 processes, 4 died (block_size_x 64), 108 answered, 105 binaries", p, pooled.Compiled)
	}
	if pooled.Evaluated != 112 || pooled.Invalid != inProc.Invalid || pooled.Invalid != 8 {
		t.Errorf("evaluated %d, invalid %d (in process %d); want 112 and 8", pooled.Evaluated, pooled.Invalid, inProc.Invalid)
	}
	if pooled.Best.Key != inProc.Best.Key || pooled.Best.Objectives["time"] != inProc.Best.Objectives["time"] {
		t.Errorf("best %s %v with compile processes, %s %v in process", pooled.Best.Key, pooled.Best.Objectives, inProc.Best.Key, inProc.Best.Objectives)
	}
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	es, err := s.Evaluations(1)
	if err != nil {
		t.Fatal(err)
	}
	crashed := 0
	for _, e := range es {
		if strings.HasPrefix(e.Key, "64,") {
			if e.Status != "compile_failed" || !strings.Contains(e.Reason, "the compiler's process died compiling configuration "+e.Key) {
				t.Errorf("%s: %s %q", e.Key, e.Status, e.Reason)
			}
			crashed++
		}
	}
	if crashed != 4 {
		t.Errorf("%d configurations with block_size_x 64 stored, want 4", crashed)
	}

	// With a compile cache, the same run again (a new database) compiles
	// only the four that crashed (a crash is not a verdict on the
	// source), and does not take their deaths for a broken compiler: the
	// cache's binaries, the reference configuration's among them (one
	// build layer), are this compiler's. The three rejections come from
	// the cache.
	cacheDir := []string{"--compile-cache", t.TempDir()}
	tune("2", cacheDir...)
	again, _ := tune("2", cacheDir...)
	if p := again.Pool; p == nil || p.Compilations != 0 || p.Died != 4 || again.Compiled != 0 || again.Invalid != 8 || again.Best.Key != inProc.Best.Key {
		t.Errorf("repeated run: %+v, %d compiled, %d invalid, best %s; want 0 compilations, 4 died, 0 compiled, 8 invalid, best %s", p, again.Compiled, again.Invalid, again.Best.Key, inProc.Best.Key)
	}
}

func TestCompileProcessesFlag(t *testing.T) {
	specPath := writeSpec(t, "", "")
	for _, c := range []struct{ args, want string }{
		{"--compile-processes -2", `invalid argument "-2" for "--compile-processes" flag: must be between 0 and 4096`},
		{"--compile-processes 1 --compile-timeout 0s", `invalid argument "0s" for "--compile-timeout" flag: must be at least 1s`},
	} {
		args := append([]string{"tune", specPath, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db")}, strings.Fields(c.args)...)
		code, _, errs := gtune(t, args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
