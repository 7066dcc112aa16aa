package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// Three shards of vector_add's space tuned apart and merged are the same
// run as one brute force over the whole space: the same configurations
// with the same outcomes; each evaluation keeps its GPU, the merged run
// its sources.
func TestShardsMergeToOneRun(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.db")
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--db", whole, "--no-compile-cache", "--no-progress"); code != 0 {
		t.Fatalf("whole: exit %d: %s", code, errs)
	}
	var shards []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("shard%d.db", i))
		code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--db", p, "--shard", fmt.Sprintf("%d/3", i), "--no-compile-cache", "--no-progress")
		if code != 0 || !strings.Contains(errs, fmt.Sprintf("gtune: shard %d/3: 32 of the search space's 96 configurations", i)) {
			t.Fatalf("shard %d: exit %d: %s", i, code, errs)
		}
		shards = append(shards, p)
	}
	out := filepath.Join(dir, "merged.db")
	code, stdout, errs := gtune(t, append([]string{"merge", out}, shards...)...)
	if code != 0 || !strings.Contains(stdout, "gtune: run 1: vector_add on ") || !strings.Contains(stdout, "96 configurations from 3 runs, done") {
		t.Fatalf("merge: exit %d: %s %s", code, stdout, errs)
	}
	want := outcomes(t, whole, 1)
	got := outcomes(t, out, 1)
	if len(got) != 96 || len(want) != 96 {
		t.Fatalf("%d merged, %d whole; want 96", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: merged %q, whole %q", k, got[k], w)
		}
	}
	db, err := store.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	from, _ := r.Settings["merged_from"].([]any)
	if len(from) != 3 || from[1].(map[string]any)["shard"] != "1/3" || r.Status != store.RunDone {
		t.Errorf("merged run: status %s, merged_from %v", r.Status, from)
	}
	evs, _ := db.Evaluations(1)
	for _, e := range evs {
		if e.GPU == "" {
			t.Errorf("%s: no GPU kept", e.Key)
		}
	}
	db.Close()
	// The same shard twice: each of its configurations kept once.
	code, stdout, errs = gtune(t, "merge", filepath.Join(dir, "twice.db"), shards[0], shards[0], shards[1])
	if code != 0 || !strings.Contains(stdout, "64 configurations from 3 runs (32 evaluated twice or more: one kept each)") {
		t.Errorf("a shard twice: exit %d: %s %s", code, stdout, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", va, "--backend", "sim", "--db", filepath.Join(dir, "x.db"), "--shard", "3/3"}, "want I/K"},
		{[]string{"tune", va, "--backend", "sim", "--db", filepath.Join(dir, "x.db"), "--shard", "0/2", "--strategy", "bayes_opt"}, "only brute_force and random_sample split a space"},
		{[]string{"tune", va, "--backend", "sim", "--db", filepath.Join(dir, "x.db"), "--shard", "150/200"}, "give at most 96 shards"},
		{[]string{"merge", out, out}, "is both the output and a shard"},
		{[]string{"merge", out, filepath.Join(dir, "missing.db")}, "shard database"},
	} {
		if code, _, errs := gtune(t, c.args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errs)
		}
	}
}

// outcomes are the evaluations of run id of the database at path: key →
// status and objective.
func outcomes(t *testing.T, path string, id int64) map[string]string {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.Evaluations(id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range evs {
		v := "-"
		if e.Objective != nil {
			v = fmt.Sprint(*e.Objective)
		}
		out[e.Key] = e.Status + " " + v
	}
	return out
}
