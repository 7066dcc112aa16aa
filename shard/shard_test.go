package shard

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/store"
)

func TestParseAndIndexes(t *testing.T) {
	s, err := Parse(" 1/3 ")
	if err != nil || s != (Spec{1, 3}) || s.String() != "1/3" {
		t.Fatalf("Parse(1/3) = %v, %v", s, err)
	}
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0", ""} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
	// The shards of 10 configurations are disjoint and cover them.
	var all []int
	for i := range 3 {
		all = append(all, Indexes(10, Spec{i, 3})...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) || !slices.Equal(Indexes(10, Spec{1, 3}), []int{1, 4, 7}) {
		t.Errorf("shards of 10: %v", all)
	}
}

// Merge keeps each evaluation's typed observations, PTX and GPU, and
// resolves a configuration evaluated twice to the valid evaluation.
func TestMergeKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, uuid, status string, at time.Time) string {
		return shardDB(t, filepath.Join(dir, name), uuid, status, at,
			map[string]any{"shard": name, "gpus": []string{uuid, uuid + "2"}, "repeat": 5, "thermal": name})
	}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a := mk("a.db", "GPU-a", "valid", t0)
	b := mk("b.db", "GPU-b", "launch_failed", t0.Add(time.Minute)) // newer, not valid
	out, err := store.Open(filepath.Join(dir, "out.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ms, err := Merge(out, []string{a, b}, "t", io.Discard)
	if err != nil || len(ms) != 1 || ms[0].Duplicates != 1 || ms[0].Evaluations != 1 {
		t.Fatalf("Merge = %+v, %v", ms, err)
	}
	// The merged run's GPUs are every GPU of both runs over two GPUs, and
	// it keeps how its configurations were measured where both runs
	// agree (repeat), not where they differ (thermal).
	runs, err := out.Runs()
	if err != nil || len(runs) != 1 || fmt.Sprint(runs[0].Settings["gpus"]) != "[GPU-a GPU-a2 GPU-b GPU-b2]" ||
		runs[0].Settings["repeat"] != 5.0 || runs[0].Settings["thermal"] != nil {
		t.Fatalf("merged run %+v, %v", runs, err)
	}
	evs, err := out.Evaluations(ms[0].RunID)
	if err != nil || len(evs) != 1 || evs[0].Status != "valid" || evs[0].GPU != "GPU-a" {
		t.Fatalf("merged evaluations %+v, %v", evs, err)
	}
	typed, err := out.Observations(evs[0].ID)
	if err != nil || len(typed) != 1 || typed[0].Method != "events" {
		t.Errorf("typed observations %v, %v", typed, err)
	}
	ptx, err := out.EvaluationPTX(evs[0].ID)
	if err != nil || len(ptx) != 1 || !bytes.Equal(ptx[0].PTX, []byte(".version 8.8 // a.db")) {
		t.Errorf("PTX %v, %v", ptx, err)
	}
}

// shardDB writes a results database at p holding one done run on GPU
// uuid with settings, of one configuration "1,1" evaluated at at with
// status (valid: 2 ms, with its PTX).
func shardDB(t *testing.T, p, uuid, status string, at time.Time, settings map[string]any) string {
	t.Helper()
	db, err := store.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &store.Run{SpecHash: "h", SpecPath: "s.json", Kernel: "k", Objective: "time", Strategy: "brute_force",
		DeviceName: "NVIDIA H100", DeviceUUID: uuid, Driver: "580", Backend: "cuda", GtuneVersion: "t", Settings: settings}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	e := &store.Evaluation{RunID: r.ID, Key: "1,1", Status: status, StartedAt: at, FinishedAt: at,
		PTX: []store.KernelPTX{{Kernel: "k", PTX: []byte(".version 8.8 // " + filepath.Base(p))}}}
	if status == "valid" {
		v := 2.0
		e.Objective, e.Observations = &v, map[string]float64{"time": 2}
		e.Typed = measure.Observations{{Name: "time", Unit: "ms", Value: 2, Method: "events", Launch: -1}}
	} else {
		e.Reason = "launch failed"
	}
	if err := db.Add(e); err != nil {
		t.Fatal(err)
	}
	if err := db.EndRun(r.ID, store.RunDone); err != nil {
		t.Fatal(err)
	}
	return p
}

// A library routine's runs merge per GPU, each the reference point of
// its GPU's kernels: cuBLAS measured twice on GPU-a (two shard
// databases) and once on GPU-b makes two runs, not one.
func TestMergeKeepsLibraryRunsPerGPU(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	lib := func() map[string]any { return map[string]any{store.SettingLibrary: "cublasDgemm"} }
	paths := []string{
		shardDB(t, filepath.Join(dir, "a1.db"), "GPU-a", "valid", t0, lib()),
		shardDB(t, filepath.Join(dir, "b.db"), "GPU-b", "valid", t0, lib()),
		shardDB(t, filepath.Join(dir, "a2.db"), "GPU-a", "valid", t0.Add(time.Minute), lib()),
	}
	out, err := store.Open(filepath.Join(dir, "out.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ms, err := Merge(out, paths, "t", io.Discard)
	if err != nil || len(ms) != 2 || ms[0].Sources != 2 || ms[0].Duplicates != 1 || ms[1].Sources != 1 {
		t.Fatalf("Merge = %+v, %v", ms, err)
	}
	runs, err := out.Runs()
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	for _, r := range runs {
		want := map[int64]string{ms[0].RunID: "GPU-a", ms[1].RunID: "GPU-b"}[r.ID]
		if r.DeviceUUID != want || r.Settings[store.SettingLibrary] != "cublasDgemm" {
			t.Errorf("run %d on %s (%v), want %s", r.ID, r.DeviceUUID, r.Settings[store.SettingLibrary], want)
		}
	}
}

// Restrictor: the identity without --shard; shard I/K of a space holds
// the configurations Indexes gives and says so; a learning strategy and
// a malformed value are bad input.
func TestRestrictor(t *testing.T) {
	vals := make([]expr.Value, 10)
	for i := range vals {
		vals[i] = expr.Int(int64(i))
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: vals}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	none, err := Restrictor("", "bayes_opt")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := none(io.Discard, sp); got != sp {
		t.Error("without --shard the space is not the run's")
	}
	r, err := Restrictor("1/3", "brute_force")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sub, err := r(&log, sp)
	if err != nil || sub.Len() != len(Indexes(10, Spec{Index: 1, Count: 3})) || log.String() != "gtune: shard 1/3: 3 of the search space's 10 configurations\n" {
		t.Errorf("shard 1/3: %d configurations, %q, %v", sub.Len(), log.String(), err)
	}
	for _, c := range [][2]string{{"1/3", "bayes_opt"}, {"3/3", "brute_force"}, {"x", "random_sample"}} {
		if _, err := Restrictor(c[0], c[1]); err == nil || !badinput.Is(err) {
			t.Errorf("--shard %s with %s: %v", c[0], c[1], err)
		}
	}
}
