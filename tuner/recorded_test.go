package tuner

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
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

// recordedSetup is the vector_add example on the simulated GPU with
// compile times drawn from a seeded permutation (40 ms << j) over its
// first six configurations, so that they finish out of proposal order,
// and a results database.
func recordedSetup(t *testing.T) (*spec.Spec, *space.Space, backend.Backend, *store.DB) {
	t.Helper()
	s, sp, be, db := vectorAddSim(t)
	rng := rand.New(rand.NewPCG(7, 11))
	delays := map[string]time.Duration{}
	for i, j := range rng.Perm(6) {
		delays[sp.Key(i)] = 40 * time.Millisecond << j
	}
	return s, sp, slowCompile{be, func(k string) time.Duration { return delays[k] }}, db
}

// spyRun tunes six configurations with the spy strategy and returns the
// summary and the order the spy was told results in.
func spyRun(t *testing.T, c Config) (*Summary, []int) {
	t.Helper()
	c.Objective, c.Strategy, c.MaxEvals = objective.Objective{Name: objective.Time, Unit: "ms"}, "test_tell_spy", 6
	sum, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	spyMu.Lock()
	defer spyMu.Unlock()
	told := spyTold
	spyTold = nil
	return sum, told
}

// A re-run that takes its results from the database tells them in the
// order the run that measured them told them (completion order, stored
// as ascending ids), not in the order it proposes them.
func TestReusedToldInRecordedOrder(t *testing.T) {
	s, sp, be, db := recordedSetup(t)
	cfg := Config{Subject: FromSpec(s), Space: sp, Backend: be, DB: db, CompileWorkers: 2, CompletionOrder: true}
	first, firstTold := spyRun(t, cfg)
	if first.Evaluated != 6 || slices.IsSorted(firstTold) {
		t.Fatalf("first run evaluated %d, told %v: want six, out of proposal order", first.Evaluated, firstTold)
	}
	second, secondTold := spyRun(t, cfg)
	if second.Reused != 6 || !slices.Equal(secondTold, firstTold) {
		t.Fatalf("re-run reused %d, told %v; want all six told as recorded: %v", second.Reused, secondTold, firstTold)
	}
}

// A replay of the run's export with RecordedOrder and the run's
// look-ahead tells the strategy what the run told it, in its order;
// without, in proposal order.
func TestReplayInRecordedOrder(t *testing.T) {
	s, sp, be, db := recordedSetup(t)
	first, firstTold := spyRun(t, Config{Subject: FromSpec(s), Space: sp, Backend: be, DB: db, CompileWorkers: 2, CompletionOrder: true})
	run, err := db.Run(first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Settings["lookahead"]; got != 4.0 {
		t.Fatalf("stored look-ahead %v, want 4", got)
	}
	evals, err := db.Evaluations(first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.FromRun(run, evals)
	if err != nil {
		t.Fatal(err)
	}
	// The export knows the values its six configurations use; the replay
	// maps the whole space (every value an integer here).
	for _, p := range sp.Params() {
		c.ParamValues[p.Name] = nil
		for _, v := range p.Values {
			f, _ := v.Float()
			c.ParamValues[p.Name] = append(c.ParamValues[p.Name], int(f))
		}
	}
	// The cache lacks the spec's reference configuration (256,1): a
	// replay needs no reference output.
	replay := func(order []string) []int {
		r, err := cache.NewReplay(c, sp)
		if err != nil {
			t.Fatal(err)
		}
		_, told := spyRun(t, Config{Subject: FromSpec(s), Space: sp, Backend: r, DB: db, Fresh: true, CompileWorkers: 1, Lookahead: 4, RecordedOrder: order})
		return told
	}
	if got := replay(c.RecordedOrder()); !slices.Equal(got, firstTold) {
		t.Errorf("replay in recorded order told %v, the run %v", got, firstTold)
	}
	if got := replay(nil); !slices.IsSorted(got) || len(got) != 6 {
		t.Errorf("replay told %v, want proposal order", got)
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
