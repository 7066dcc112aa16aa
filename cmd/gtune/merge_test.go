package main

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
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

// merge and project --from only read their inputs: no byte of a shard
// changes, nothing is created beside it, a read-only shard merges, and a
// link to the output (symbolic or hard) is the output. An empty file is
// not a shard.
func TestMergeReadsOnly(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	var shards []string
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("shard%d.db", i))
		if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--db", p, "--shard", fmt.Sprintf("%d/2", i), "--no-compile-cache", "--no-progress"); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, code, errs)
		}
		shards = append(shards, p)
	}
	if err := os.Chmod(shards[1], 0o444); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string][32]byte {
		m := map[string][32]byte{}
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			m[e.Name()] = sha256.Sum256(b)
		}
		return m
	}
	before := snapshot()
	outDir := t.TempDir()
	out := filepath.Join(outDir, "merged.db")
	if code, stdout, errs := gtune(t, "merge", out, shards[0], shards[1]); code != 0 || !strings.Contains(stdout, "96 configurations from 2 runs") {
		t.Fatalf("merge: exit %d: %s %s", code, stdout, errs)
	}
	if code, _, errs := gtune(t, "project", va, "--config", "all", "--from", shards[0]+":1", "--devices", "h100_sxm,h200", "--db", shards[1]); code != 0 {
		t.Errorf("project --from: exit %d: %s", code, errs)
	}
	if after := snapshot(); !maps.Equal(after, before) {
		t.Errorf("merge or project changed its inputs' folder: %d files before, %d after", len(before), len(after))
	}
	sym, hard := filepath.Join(outDir, "sym.db"), filepath.Join(outDir, "hard.db")
	if err := os.Symlink(out, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(out, hard); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(outDir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", out, sym}, "is both the output and a shard (it is the file " + out + ")"},
		{[]string{"merge", out, shards[0], hard}, "is both the output and a shard (it is the file " + out + ")"},
		{[]string{"merge", sym, out}, "is both the output"},
		{[]string{"merge", filepath.Join(outDir, "m2.db"), empty}, "the file is empty"},
	} {
		if code, _, errs := gtune(t, c.args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errs)
		}
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Error("merge wrote into the empty file")
	}
}
