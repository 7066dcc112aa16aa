package replay

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/shared"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/tuner"
)

// A brute-force replay of benchmark_hub's convolution_milo_A100 cache
// over its spec finds the recorded optimum (the fastest recorded mean
// time, 0.5536 ms at 32,4,1,3,1,0,1,1,15,15), evaluates all 4,362
// configurations and charges the recorded times.
func TestRunFindsTheRecordedOptimum(t *testing.T) {
	hub := shared.Path(t, "benchmark_hub")
	c, err := cache.Load(filepath.Join(hub, "convolution_milo_A100.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, cleanup, err := Load(ctx, c, filepath.Join(hub, "specs", "convolution_milo.T1.json"))
	defer cleanup()
	if err != nil {
		t.Fatal(err)
	}
	probe, err := cache.NewReplay(c, sub.Space)
	if err != nil {
		t.Fatal(err)
	}
	key, best := Optimum(probe, sub.Space, "time")
	if key != "32,4,1,3,1,0,1,1,15,15" || math.Abs(best-0.5536000076681376) > 1e-12 {
		t.Errorf("optimum %s at %v ms, want 32,4,1,3,1,0,1,1,15,15 at 0.5536", key, best)
	}
	if k, v := Optimum(probe, sub.Space, "GFLOP/s"); k != "" || !math.IsNaN(v) {
		t.Errorf("a metric's optimum: %q %v, want none", k, v)
	}
	db, _, closeDB, err := OpenDB("")
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	obj, err := objective.Resolve(sub.Spec, "time")
	if err != nil {
		t.Fatal(err)
	}
	in := tuner.Config{Subject: sub.Subject, Space: sub.Space, DB: db, Strategy: "brute_force", Objective: obj}
	steps := 0
	reps, err := Run(ctx, c, in, Repeats{N: 2, Seed: 7, Version: "test", Step: func(done, total int) { steps++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || steps != 2 || reps[0].Seed != 7 || reps[1].Seed != 8 {
		t.Fatalf("repeats %+v, %d steps", reps, steps)
	}
	for _, r := range reps {
		if r.Evaluated != 4362 || r.BestKey != key || r.Best == nil || *r.Best != best {
			t.Errorf("repeat %d: %d evaluated, best %s %v; want 4362, %s %v", r.Seed, r.Evaluated, r.BestKey, r.Best, key, best)
		}
	}
}

// A cache of a workload's run needs its workload file: bad input.
func TestLoadRefusesAWorkloadCacheWithoutItsFile(t *testing.T) {
	c := &cache.Cache{Path: "w.json", ParamNames: []string{"lud.block_size_x"}}
	if _, _, err := Load(context.Background(), c, ""); !badinput.Is(err) {
		t.Errorf("err %v, want bad input", err)
	}
}

// A replay loads the spec with its kernel source where the file is
// there, so that its hash is a tuning run's (what the run kept, the PTX
// transfer's prior=projection emulates, is found); without the file it
// loads the spec all the same, its hash then its own.
func TestLoadSpecKeepsTheRunsHash(t *testing.T) {
	path := filepath.Join("..", "examples", "stencil", "spec.json")
	want, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := loadSpec(nil, path)
	if err != nil || got.Hash != want.Hash {
		t.Fatalf("hash %v, want %s (%v)", got, want.Hash, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), "spec.json") // kernel.cu is not beside it
	if err := os.WriteFile(alone, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, err = loadSpec(nil, alone)
	if err != nil || got.Hash == "" || got.Hash == want.Hash {
		t.Errorf("without the kernel file: %v, %v", got, err)
	}
}
