package tuner

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

// tellSpy proposes the space's first configurations in index order, as
// many as asked, and records the order it is told results in.
type tellSpy struct {
	next int
	size int
}

var (
	spyMu   sync.Mutex
	spyTold []int
)

func (s *tellSpy) Name() string { return "test_tell_spy" }
func (s *tellSpy) Next(n int) []int {
	var ids []int
	for ; n > 0 && s.next < s.size; n-- {
		ids = append(ids, s.next)
		s.next++
	}
	return ids
}
func (s *tellSpy) Tell(r strategy.Evaluation) {
	spyMu.Lock()
	spyTold = append(spyTold, r.Index)
	spyMu.Unlock()
}

func init() {
	strategy.Register("test_tell_spy", strategy.Needs{}, func(o strategy.Options) (strategy.Strategy, error) {
		return &tellSpy{size: o.Space.Len()}, nil
	})
}

// A re-run that takes its results from the database tells them in the
// order the run that measured them told them (completion order, stored
// as ascending ids), not in the order it proposes them: six
// configurations compiled with seeded times so that they finish out of
// proposal order, then the same run again on the same database.
func TestReusedToldInRecordedOrder(t *testing.T) {
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
	defer be.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	delays := map[string]time.Duration{}
	for i, j := range rng.Perm(6) {
		delays[sp.Key(i)] = 40 * time.Millisecond << j
	}
	slow := slowCompile{be, func(k string) time.Duration { return delays[k] }}
	tell := func() []int {
		spyMu.Lock()
		defer spyMu.Unlock()
		told := spyTold
		spyTold = nil
		return told
	}
	run := func() (*Summary, []int) {
		sum, err := Run(context.Background(), Config{Spec: s, Space: sp, Backend: slow, DB: db, Objective: objective.Objective{Name: objective.Time, Unit: "ms"},
			Strategy: "test_tell_spy", MaxEvals: 6, CompileWorkers: 2, CompletionOrder: true})
		if err != nil {
			t.Fatal(err)
		}
		return sum, tell()
	}
	first, firstTold := run()
	if first.Evaluated != 6 || slices.IsSorted(firstTold) {
		t.Fatalf("first run evaluated %d, told %v: want six, out of proposal order", first.Evaluated, firstTold)
	}
	second, secondTold := run()
	if second.Reused != 6 || !slices.Equal(secondTold, firstTold) {
		t.Fatalf("re-run reused %d, told %v; want all six told as recorded: %v", second.Reused, secondTold, firstTold)
	}
}

// The bookkeeping: results wait for earlier ones of their run; a skipped
// one (evaluated again) stops nothing; force gives up on the earliest;
// flush tells the rest by id; runs are independent.
func TestRecordedBookkeeping(t *testing.T) {
	prev := map[string]*store.Evaluation{}
	for _, e := range []struct {
		key     string
		id, run int64
	}{{"a", 1, 1}, {"b", 2, 1}, {"c", 3, 1}, {"d", 4, 1}, {"x", 5, 2}, {"y", 6, 2}} {
		prev[e.key] = &store.Evaluation{ID: e.id, RunID: e.run, Key: e.key}
	}
	rc := newRecorded(prev)
	keys := func(os []*Evaluation) (ks []string) {
		for _, o := range os {
			ks = append(ks, o.Key)
		}
		return ks
	}
	add := func(k string) []string { return keys(rc.add(prev[k], &Evaluation{Key: k})) }
	if got := add("c"); got != nil {
		t.Fatalf("c told at once: %v", got)
	}
	if got := add("y"); got != nil {
		t.Fatalf("y told before x: %v", got)
	}
	if got := add("a"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("a: %v", got)
	}
	if got := keys(rc.skip(prev["b"])); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("skipping b: %v, want c", got)
	}
	if got := add("a"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("a again: %v, want it told at once", got)
	}
	if got := keys(rc.force()); !slices.Equal(got, []string{"y"}) || rc.pending() {
		t.Fatalf("force: %v, pending %v", got, rc.pending())
	}
	if got := add("x"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("x after force: %v", got)
	}
	add("d")
	if got := keys(rc.flush()); got != nil {
		t.Fatalf("flush after d was due: %v", got)
	}
}
