package strategy

import (
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// line is a one-parameter space of n configurations.
func line(t *testing.T, n int) *space.Space {
	t.Helper()
	vals := make([]expr.Value, n)
	for i := range vals {
		vals[i] = expr.Int(int64(i))
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: vals}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func drain(s Strategy, batch int) []int {
	var all []int
	for {
		b := s.Next(batch)
		if len(b) == 0 {
			return all
		}
		all = append(all, b...)
	}
}

func TestBruteForceVisitsAllInOrder(t *testing.T) {
	s, err := New("brute_force", Options{Space: line(t, 7)})
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(s, 3); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("got %v", got)
	}
}

func TestRandomSampleIsSeededPermutation(t *testing.T) {
	sp := line(t, 100)
	a, _ := New("random_sample", Options{Space: sp, Seed: 7})
	b, _ := New("random_sample", Options{Space: sp, Seed: 7})
	c, _ := New("random_sample", Options{Space: sp, Seed: 8})
	ga, gb, gc := drain(a, 9), drain(b, 13), drain(c, 9)
	if !slices.Equal(ga, gb) {
		t.Fatal("same seed gave different orders")
	}
	if slices.Equal(ga, gc) {
		t.Fatal("different seeds gave the same order")
	}
	sorted := slices.Clone(ga)
	slices.Sort(sorted)
	for i, v := range sorted {
		if v != i {
			t.Fatalf("not a permutation: %v", sorted)
		}
	}
}

func TestUnknownStrategy(t *testing.T) {
	_, err := New("annealing", Options{Space: line(t, 1)})
	if err == nil || !strings.Contains(err.Error(), "brute_force") || !strings.Contains(err.Error(), "random_sample") {
		t.Fatalf("err = %v", err)
	}
	_, err = New("brute_force", Options{Space: line(t, 1), Params: map[string]any{"popsize": 3}})
	if err == nil || !strings.Contains(err.Error(), "popsize") {
		t.Fatalf("err = %v", err)
	}
}

// The population-based strategies' default population fills the GPUs'
// waves: 20 on one GPU, a multiple of the GPUs on several.
func TestPopulationFor(t *testing.T) {
	for _, c := range [][2]int{{0, 20}, {1, 20}, {2, 20}, {3, 21}, {4, 20}, {8, 24}, {16, 32}, {64, 64}} {
		if got := populationFor(c[0]); got != c[1] {
			t.Errorf("populationFor(%d) = %d; want %d", c[0], got, c[1])
		}
	}
}

func TestDefault(t *testing.T) {
	for _, c := range []struct {
		size, budget int
		limited      bool
		priors       int
		name         string
		evals        int
		why          string
	}{
		{1000, 0, false, 0, "brute_force", 0, "strategy brute_force: the search space has 1000 configurations, at most 1000 (over that, gtune searches with bayes_opt)"},
		{1000, 0, false, 2, "brute_force", 0, "strategy brute_force: the search space has 1000 configurations, at most 1000 (over that, gtune searches with bayes_opt)"},
		{1001, 0, false, 0, "bayes_opt", 400, "strategy bayes_opt with 400 evaluations: the search space has 1001 configurations, over 1000 (--max-evals N for another budget, --strategy brute_force to try them all)"},
		{4362, 5000, false, 1, "brute_force", 0, "strategy brute_force: the budget of 5000 evaluations covers the search space's 4362 configurations"},
		{4362, 100, false, 0, "bayes_opt", 0, "strategy bayes_opt: the search space has 4362 configurations, over 1000 (--strategy brute_force to try them all)"},
		{4362, 0, true, 0, "bayes_opt", 0, "strategy bayes_opt: the search space has 4362 configurations, over 1000 (--strategy brute_force to try them all)"},
		{4362, 0, false, 1, "transfer", 400, "strategy transfer with 400 evaluations, learning from this kernel's results on 1 other GPU in the results database: the search space has 4362 configurations, over 1000 (--max-evals N for another budget, --strategy brute_force to try them all)"},
		{4362, 25, false, 3, "transfer", 0, "strategy transfer, learning from this kernel's results on 3 other GPUs in the results database: the search space has 4362 configurations, over 1000 (--strategy brute_force to try them all)"},
	} {
		name, evals, why := Default(c.size, c.budget, c.limited, c.priors)
		if name != c.name || evals != c.evals || why != c.why {
			t.Errorf("Default(%d, %d, %v, %d) = %s, %d, %q; want %s, %d, %q", c.size, c.budget, c.limited, c.priors, name, evals, why, c.name, c.evals, c.why)
		}
	}
}

// TestBayesOptStall: the hand-over to local search waits 20 model-guided
// evaluations without improvement, or 15 % of a longer run's budget,
// unless the stall hyperparameter says otherwise.
func TestBayesOptStall(t *testing.T) {
	sp := line(t, 50)
	for _, c := range []struct {
		budget int
		params map[string]any
		want   int
	}{
		{0, nil, 20},
		{25, nil, 20},
		{100, nil, 20},
		{400, nil, 60},
		{1600, nil, 240},
		{400, map[string]any{"stall": 5}, 5},
	} {
		s, err := New("bayes_opt", Options{Space: sp, Seed: 1, Budget: c.budget, Params: c.params})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.(*bayesOpt).stall; got != c.want {
			t.Errorf("budget %d, params %v: stall %d, want %d", c.budget, c.params, got, c.want)
		}
	}
}
