package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// tune --slurm starts one remote GPU worker per GPU of the allocation
// (here through testdata/srun-local, which runs each job step on this
// host) and measures what one simulated GPU measures: the same outcomes,
// spread over the four workers.
func TestTuneSlurmWorkers(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	one := filepath.Join(dir, "one.db")
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--db", one, "--no-compile-cache", "--no-progress"); code != 0 {
		t.Fatalf("one GPU: exit %d: %s", code, errs)
	}
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--slurm", "--db", filepath.Join(dir, "x.db")); code != 2 || !strings.Contains(errs, "--slurm runs inside a Slurm allocation") {
		t.Errorf("outside an allocation: exit %d: %s", code, errs)
	}
	t.Setenv("SLURM_JOB_ID", "1")
	srun, _ := filepath.Abs(filepath.Join("testdata", "srun-local"))
	four := filepath.Join(dir, "four.db")
	code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--slurm", "--nodes", "2", "--gpus-per-node", "2", "--srun", srun, "--db", four, "--no-compile-cache", "--no-progress")
	if code != 0 || !strings.Contains(errs, "gtune: --slurm: starting 4 GPU workers (2 nodes × 2) with srun") {
		t.Fatalf("--slurm: exit %d: %s", code, errs)
	}
	want, got := outcomes(t, one, 1), outcomes(t, four, 1)
	if len(got) != 96 {
		t.Fatalf("%d configurations over 4 workers; want 96", len(got))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: 4 workers %q, one GPU %q", k, got[k], w)
		}
	}
	db, err := store.Open(four)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, _ := db.Evaluations(1)
	gpus := map[string]int{}
	for _, e := range evs {
		gpus[e.GPU]++
	}
	if len(gpus) != 4 {
		t.Errorf("evaluations by GPU: %v; want 4 GPUs", gpus)
	}
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--slurm", "--nodes", "1", "--srun", srun, "--db", four); code != 2 || !strings.Contains(errs, "give --gpus-per-node") {
		t.Errorf("no GPUs per node: exit %d: %s", code, errs)
	}
}

// tune --repeat N keeps N repeats of each configuration; --repeat-until
// caps at --repeat and wants at least 6 (the 95 % interval of a median).
func TestTuneRepeatFlags(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--repeat", "3", "--max-evals", "4", "--strategy", "random_sample", "--db", db, "--no-compile-cache", "--no-progress"); code != 0 {
		t.Fatalf("--repeat 3: exit %d: %s", code, errs)
	}
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := s.Evaluations(1)
	for _, e := range evs {
		if rs, _ := s.Repeats(e.ID); len(rs) != 3 || e.Metrics["repeats"] != 3 {
			t.Errorf("%s: %d repeats, metrics %v; want 3", e.Key, len(rs), e.Metrics)
		}
	}
	s.Close()
	if len(evs) != 4 {
		t.Errorf("%d evaluations; want 4", len(evs))
	}
	// --confirm 3 prints the best three re-measured, in order, each
	// against the next.
	code, out, errs := gtune(t, "tune", va, "--backend", "sim", "--confirm", "3", "--confirm-rounds", "4", "--max-evals", "10", "--strategy", "random_sample",
		"--db", filepath.Join(dir, "c.db"), "--no-compile-cache", "--no-progress")
	if code != 0 || !strings.Contains(out, "confirmed: the best 3 by time re-measured interleaved") || strings.Count(out, "p = ") != 2 {
		t.Errorf("--confirm 3: exit %d: %s %s", code, out, errs)
	}
	// show prints each median time's interval and the repeats.
	if code, out, errs := gtune(t, "show", "1", "--db", db); code != 0 || !strings.Contains(out, "repeats: each configuration measured 3 times") ||
		!strings.Contains(out, "interval (ms), repeats, level") || strings.Count(out, "×3 75.0 %") != 4 {
		t.Errorf("show: exit %d: %s %s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--repeat", "3", "--repeat-until", "1"}, "needs 6 repeats at least"},
		{[]string{"--repeat-until", "-1"}, "want a half-width in percent"},
		{[]string{"--confirm", "1"}, "give 2 or more"},
		{[]string{"--thermal", "warm"}, `--thermal: thermal policy "warm": must be one of none, steady, model, steady+model`},
	} {
		args := append([]string{"tune", va, "--backend", "sim", "--db", filepath.Join(dir, "x.db")}, c.args...)
		if code, _, errs := gtune(t, args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errs)
		}
	}
}
