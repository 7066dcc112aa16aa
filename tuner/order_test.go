package tuner

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// slowCompile is the simulated GPU with compile times taken from delay
// (by configuration key): the compile pool's timing made controllable.
type slowCompile struct {
	backend.Backend
	delay func(key string) time.Duration
}

func (s slowCompile) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	time.Sleep(s.delay(j.Key))
	return s.Backend.Compile(ctx, j)
}

// vectorAddSim is the vector_add example, its space, the simulated H100
// (seed 1) and a results database of the test's own, closed at its end.
func vectorAddSim(t *testing.T) (*spec.Spec, *space.Space, *sim.Sim, *store.DB) {
	t.Helper()
	s, err := spec.Load(filepath.Join("..", "examples", "vector_add", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	be := sim.New(d, sim.Options{Seed: 1})
	t.Cleanup(func() { be.Close() })
	db, err := store.Open(filepath.Join(t.TempDir(), "o.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return s, sp, be, db
}

// orderRun tunes six configurations of the vector_add example (random
// sample, seed 3) on two compile workers with the given compile times and
// returns the keys in the order they were evaluated (the database's, the
// order the strategy was told).
func orderRun(t *testing.T, completion bool, delay func(string) time.Duration) (evaluated []string) {
	t.Helper()
	s, sp, be, db := vectorAddSim(t)
	sum, err := Run(context.Background(), Config{Subject: FromSpec(s), Space: sp, Backend: slowCompile{be, delay}, DB: db, Objective: objective.Objective{Name: objective.Time, Unit: "ms"}, Strategy: "random_sample", Seed: 3,
		MaxEvals: 6, CompileWorkers: 2, CompletionOrder: completion})
	if err != nil {
		t.Fatal(err)
	}
	es, err := db.Evaluations(sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		evaluated = append(evaluated, e.Key)
	}
	return evaluated
}

// In proposal order a slow compilation holds the others back; in
// completion order the configurations whose compilations are over go
// first, and the slow one is evaluated when it is ready.
func TestCompletionOrder(t *testing.T) {
	inOrder := orderRun(t, false, func(string) time.Duration { return 0 })
	slow := inOrder[0]
	delay := func(k string) time.Duration {
		if k == slow {
			return 300 * time.Millisecond
		}
		return 0
	}
	held := orderRun(t, false, delay)
	if !slices.Equal(held, inOrder) {
		t.Errorf("in proposal order with a slow first compilation: %v, want %v", held, inOrder)
	}
	got := orderRun(t, true, delay)
	if len(got) != 6 || got[0] == slow || got[len(got)-1] != slow {
		t.Errorf("completion order: %v; want %s, the slow one, last", got, slow)
	}
}

// Given the same compile times, completion order is the same order: the
// pool starts compilations in proposal order, and the loop takes the
// first proposed among those finished. Compile times drawn from a seeded
// distribution (a permutation of 40, 80, 160, ..., 1280 ms over the six
// configurations, so that no two chains of compilations end within 40 ms
// of each other, far more than a simulated evaluation takes: the loop is
// idle whenever a compilation ends): two runs evaluate in the same order,
// which is not the proposal order. With 10 ms steps the race detector's
// slower evaluations sometimes overlapped a compilation's end and swapped
// two configurations: the order depends on when the loop looks as well.
func TestCompletionOrderReproducible(t *testing.T) {
	keys := orderRun(t, false, func(string) time.Duration { return 0 })
	rng := rand.New(rand.NewPCG(7, 11))
	delays := map[string]time.Duration{}
	for i, j := range rng.Perm(len(keys)) {
		delays[keys[i]] = 40 * time.Millisecond << j
	}
	delay := func(k string) time.Duration { return delays[k] }
	first := orderRun(t, true, delay)
	second := orderRun(t, true, delay)
	if !slices.Equal(first, second) {
		t.Errorf("two runs with the same compile times: %v and %v", first, second)
	}
	if slices.Equal(first, keys) {
		t.Errorf("completion order %v is the proposal order", first)
	}
}
