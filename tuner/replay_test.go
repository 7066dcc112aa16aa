package tuner

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"

	"github.com/gtune/gtune/internal/shared"
)

// Replaying a Kernel Tuner cache through the tuner: the tuner's loop with
// the replay backend (package cache) in place of a GPU.

// convTotalMs is the sum of compile_time + verification_time +
// benchmark_time over the 4,362 entries of convolution_milo_A100 (Python,
// in file order): what Kernel Tuner's simulation mode charges for a brute
// force, 3.386 h.
const convTotalMs = 12190447.934668744

// loadHub reads a cache of ../shared/datasets/benchmark_hub (beside the
// repository, as in CI); the test skips without it.
func loadHub(t testing.TB, name string) *cache.Cache {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "datasets", "benchmark_hub", name)
	shared.Need(t, p)
	c, err := cache.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func convSpec(t testing.TB) (*spec.Spec, *space.Space) {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "datasets", "benchmark_hub", "specs", "convolution_milo.T1.json")
	shared.Need(t, p)
	s, err := spec.LoadWith(p, spec.LoadOptions{NoSource: true})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	return s, sp
}

// Brute force through the tuner (a temporary results database) finds the
// cache's optimum and charges the sum of the recorded times; a time limit
// on the replay clock stops it as soon as the charged time reaches it.
func TestReplayThroughTuner(t *testing.T) {
	t.Parallel()
	c := loadHub(t, "convolution_milo_A100.json.gz")
	s, sp := convSpec(t)
	run := func(limit time.Duration) (*Summary, *cache.Replay) {
		r, err := cache.NewReplay(c, sp)
		if err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(filepath.Join(t.TempDir(), "replay.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		sum, err := Run(context.Background(), Config{
			Subject: FromSpec(s), Space: sp, Backend: r, DB: db, Objective: objective.FromSpec(s), Strategy: "brute_force",
			Seed: 1, TimeLimit: limit, Clock: r.Charged, Fresh: true, CompileWorkers: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := db.Runs()
		if err != nil || len(runs) != 1 || runs[0].Backend != "replay" || runs[0].DeviceUUID != "replay:NVIDIA A100-PCIE-40GB" {
			t.Fatalf("runs %+v, %v", runs, err)
		}
		return sum, r
	}
	sum, r := run(0)
	if sum.Evaluated != 4362 || sum.Invalid != 161 || len(sum.Best) == 0 {
		t.Fatalf("evaluated %d, invalid %d", sum.Evaluated, sum.Invalid)
	}
	if b := sum.Best[0]; b.Key != "32,4,1,3,1,0,1,1,15,15" || math.Abs(b.Value-0.5536000076681376) > 1e-15 {
		t.Errorf("best %s at %v ms", b.Key, b.Value)
	}
	if math.Abs(r.ChargedMs()-convTotalMs) > 1e-3 || sum.Elapsed != r.Charged() {
		t.Errorf("charged %.6f ms, elapsed %v; want %.6f ms", r.ChargedMs(), sum.Elapsed, convTotalMs)
	}

	// One hour of recorded time: brute force stops after the configuration
	// that reaches it, as Kernel Tuner's budget does.
	sum, r = run(time.Hour)
	charged := 0.0
	n := 0
	for i := 0; i < sp.Len() && charged < 3600e3; i++ {
		e := c.Entries[sp.Key(i)]
		charged += e.CompileMs + e.VerificationMs + e.BenchmarkMs
		n++
	}
	if sum.Evaluated != n || r.Runs() != n || math.Abs(r.ChargedMs()-charged) > 1e-6 {
		t.Errorf("with a 1 h limit: evaluated %d, charged %.3f ms; want %d and %.3f", sum.Evaluated, r.ChargedMs(), n, charged)
	}
	if n < 100 || n >= 4362 {
		t.Errorf("1 h of recorded time covers %d configurations", n)
	}
}

// A configuration that satisfies the restrictions but is missing from the
// cache is an error of the run naming it; one that fails the restrictions
// is launch_failed (Kernel Tuner's InvalidConfig) and charged nothing.
func TestReplayMissingConfiguration(t *testing.T) {
	c := loadHub(t, "convolution_milo_A100.json.gz")
	s, sp := convSpec(t)
	const gone = "64,2,2,2,0,0,1,1,15,15"
	if _, ok := sp.Lookup(gone); !ok {
		t.Fatalf("%s is not a valid configuration", gone)
	}
	delete(c.Entries, gone)
	r, err := cache.NewReplay(c, sp)
	if err != nil {
		t.Fatal(err)
	}
	i, _ := sp.Lookup(gone)
	j, err := s.Job(sp.Values(i))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := r.Compile(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, backend.SingleLaunch(j, b, nil, measure.Request{}, 0)); err == nil || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "not in the cache") {
		t.Fatalf("Run of a missing configuration: %v", err)
	}
	// use_padding=1 with use_shmem=0 fails the restrictions.
	const restricted = "16,1,1,1,0,1,0,1,15,15"
	if _, ok := sp.Lookup(restricted); ok {
		t.Fatalf("%s is valid", restricted)
	}
	res, err := r.Run(ctx, backend.SingleLaunch(&backend.Job{Key: restricted}, &backend.Binary{}, nil, measure.Request{}, 0))
	if err != nil || res.Status != backend.StatusLaunchFailed || !strings.HasPrefix(res.Reason, cache.MarkerInvalid) {
		t.Fatalf("Run of a restricted configuration: %+v, %v", res, err)
	}
	if r.Runs() != 0 || r.Charged() != 0 {
		t.Errorf("runs %d charged %v after no recorded configuration", r.Runs(), r.Charged())
	}

	// Through the tuner the missing configuration fails the whole run.
	db, err := store.Open(filepath.Join(t.TempDir(), "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Run(ctx, Config{Subject: FromSpec(s), Space: sp, Backend: r, DB: db, Objective: objective.FromSpec(s),
		Strategy: "brute_force", Seed: 1, Clock: r.Charged, Fresh: true, CompileWorkers: 1})
	if err == nil || !strings.Contains(err.Error(), gone) {
		t.Fatalf("tuner.Run over a cache missing %s: %v", gone, err)
	}
}
