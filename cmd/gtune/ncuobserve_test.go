package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// --observe: another observer, the simulated GPU and a workload are
// refused before any work (exit 2, nothing tuned).
func TestObserveNcuFlag(t *testing.T) {
	spec := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	db := filepath.Join(t.TempDir(), "o.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", spec, "--backend", "sim", "--observe", "ncu", "--db", db}, "the simulated GPU has no counters"},
		{[]string{"tune", spec, "--backend", "sim", "--observe", "perf", "--db", db}, "--observe \"perf\""},
		{[]string{"tune", twoKernelWorkload(t, ""), "--backend", "sim", "--observe", "ncu", "--db", db}, "gtune schedule WORKLOAD --profile ncu"},
	} {
		code, _, errs := gtune(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s", c.args[2:], code, errs)
		}
	}
}

// gtune observe refuses, before starting ncu, a run the database does
// not hold, a run tuned from another spec and a run measured on the
// simulated GPU (exit 2 each, nothing written).
func TestObserveStoredRun(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	mm := filepath.Join("..", "..", "examples", "matmul", "spec.json")
	db := filepath.Join(t.TempDir(), "o.db")
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--max-evals", "3", "--db", db, "--no-progress"); code != 0 {
		t.Fatalf("tune: exit %d: %s", code, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"observe", va, "7", "--db", db}, "holds no run 7"},
		{[]string{"observe", va, "one", "--db", db}, `RUN "one": want a run number`},
		{[]string{"observe", mm, "1", "--db", db}, "run 1 of " + db + " tuned " + va},
		{[]string{"observe", va, "1", "--db", db}, "measured on the sim backend"},
		{[]string{"observe", va, "1", "--db", db, "--observe", "nsys"}, `--observe "nsys"`},
	} {
		code, _, errs := gtune(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s", c.args[:3], code, errs)
		}
	}
}
