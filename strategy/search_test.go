package strategy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// searchStrategies are the strategies of search.go's family.
var searchStrategies = []string{"genetic_algorithm", "simulated_annealing", "greedy_ils", "greedy_mls",
	"dual_annealing", "pso", "diff_evo", "bayes_opt", "nsga2"}

// bowl is a 10×10×5 space with the restriction x+y != 7 (so the space has
// holes); its score is a quadratic bowl with a single minimum at
// (6, 3, 2) — a valid configuration, since 6+3 != 7 — and configurations
// with (x*y) % 7 == 3 fail (Valid=false).
func bowl(t testing.TB) (*space.Space, func(i int) Evaluation) {
	t.Helper()
	ints := func(n int) []expr.Value {
		v := make([]expr.Value, n)
		for i := range v {
			v[i] = expr.Int(int64(i))
		}
		return v
	}
	e, err := expr.Parse("x + y != 7")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: ints(10)}, {Name: "y", Values: ints(10)}, {Name: "z", Values: ints(5)}},
		[]space.Restriction{{Expr: e}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(i int) Evaluation {
		ix := sp.Indexes(i)
		x, y, z := float64(ix[0]), float64(ix[1]), float64(ix[2])
		if int(x*y)%7 == 3 {
			return Evaluation{Index: i, Score: math.Inf(1)}
		}
		f := (x-6)*(x-6) + (y-3)*(y-3) + 2*(z-2)*(z-2) + 1
		energy := 10 + (x-2)*(x-2) + y
		return Evaluation{Index: i, Score: f, Valid: true, Observations: map[string]float64{"time": f, "energy": energy}, Objectives: []float64{f, energy}}
	}
	return sp, eval
}

// drive runs s for at most budget evaluations, asking for batch at a time
// and telling every result at once; it gives the configurations in order.
func driveSearch(t testing.TB, s Strategy, eval func(int) Evaluation, batch, budget int) []int {
	var all []int
	for len(all) < budget {
		ids := s.Next(min(batch, budget-len(all)))
		if len(ids) == 0 {
			break
		}
		if len(ids) > batch {
			t.Fatalf("%s: asked for %d, got %d", s.Name(), batch, len(ids))
		}
		all = append(all, ids...)
		for _, i := range ids {
			s.Tell(eval(i))
		}
	}
	return all
}

func TestSearchStrategiesVisitDistinctAndExhaust(t *testing.T) {
	sp, eval := bowl(t)
	if sp.Len() != 460 { // 500 less the 8 (x,y) pairs with x+y=7, times 5 values of z
		t.Fatalf("bowl has %d configurations", sp.Len())
	}
	for _, name := range searchStrategies {
		t.Run(name, func(t *testing.T) {
			s, err := New(name, Options{Space: sp, Seed: 3, Budget: sp.Len(), Params: smallModel(name), Objectives: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := driveSearch(t, s, eval, 5, 10*sp.Len())
			if len(got) != sp.Len() {
				t.Fatalf("proposed %d configurations, want all %d", len(got), sp.Len())
			}
			seen := make([]bool, sp.Len())
			for _, i := range got {
				if i < 0 || i >= sp.Len() || seen[i] {
					t.Fatalf("configuration %d out of range or proposed twice", i)
				}
				seen[i] = true
			}
			if more := s.Next(4); len(more) != 0 {
				t.Fatalf("exhausted space, Next gave %v", more)
			}
		})
	}
}

// smallModel keeps bayes_opt cheap on exhaustive runs.
func smallModel(name string) map[string]any {
	if name == "bayes_opt" {
		return map[string]any{"bo_evals": 60}
	}
	return nil
}

func TestSearchStrategiesDeterministic(t *testing.T) {
	sp, eval := bowl(t)
	for _, name := range searchStrategies {
		run := func(seed uint64, batch int) []int {
			s, err := New(name, Options{Space: sp, Seed: seed, Budget: 100, Objectives: 2})
			if err != nil {
				t.Fatal(err)
			}
			return driveSearch(t, s, eval, batch, 100)
		}
		a, b, c := run(1, 4), run(1, 4), run(2, 4)
		if !slices.Equal(a, b) {
			t.Errorf("%s: same seed, different proposals", name)
		}
		if slices.Equal(a, c) {
			t.Errorf("%s: seeds 1 and 2 gave the same proposals", name)
		}
	}
}

func TestSearchStrategiesFindBowlMinimum(t *testing.T) {
	sp, eval := bowl(t)
	opt, ok := sp.IndexOf([]int32{6, 3, 2})
	if !ok {
		t.Fatal("minimum not in the space")
	}
	// 140 of 460 configurations: random sampling would succeed in about
	// three runs of ten.
	const budget = 140
	for _, name := range searchStrategies[:8] {
		for seed := uint64(1); seed <= 3; seed++ {
			s, err := New(name, Options{Space: sp, Seed: seed, Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			if got := driveSearch(t, s, eval, 8, budget); !slices.Contains(got, opt) {
				t.Errorf("%s seed %d: minimum not found in %d evaluations", name, seed, budget)
			}
		}
	}
}

func TestSearchHyperparameterErrors(t *testing.T) {
	sp, _ := bowl(t)
	for _, name := range searchStrategies {
		_, err := New(name, Options{Space: sp, Params: map[string]any{"no_such": 1}, Objectives: 2})
		if err == nil || !strings.Contains(err.Error(), `"no_such"`) || !strings.Contains(err.Error(), "valid:") {
			t.Errorf("%s: unknown hyperparameter: err = %v", name, err)
		}
	}
	bad := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"genetic_algorithm", map[string]any{"popsize": 1.0}, "popsize = 1"},
		{"genetic_algorithm", map[string]any{"method": "blend"}, "one of uniform"},
		{"pso", map[string]any{"w": "fast"}, "w = fast"},
		{"diff_evo", map[string]any{"F_min": 0.9, "F_max": 0.5}, "F_min (0.9) is above F_max (0.5)"},
		{"diff_evo", map[string]any{"CR": 1.5}, "CR = 1.5"},
		{"simulated_annealing", map[string]any{"T": 1.0, "T_min": 2.0}, "T_min (2) must be below T (1)"},
		{"greedy_ils", map[string]any{"neighbor": "diagonal"}, "Hamming, adjacent, strictly-adjacent"},
		{"greedy_mls", map[string]any{"restart": "maybe"}, "true or false"},
		{"dual_annealing", map[string]any{"visit": 3.5}, "visit = 3.5"},
		{"bayes_opt", map[string]any{"initial_samples": 2.5}, "an integer"},
		{"bayes_opt", map[string]any{"candidates": 0, "top": 0}, "no candidate configurations"},
		{"nsga2", map[string]any{"mutation_chance": 0}, "mutation_chance = 0"},
	}
	for _, b := range bad {
		_, err := New(b.name, Options{Space: sp, Params: b.params, Objectives: 2})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %v: err = %v, want it to contain %q", b.name, b.params, err, b.want)
		}
	}
	// Numbers from the command line arrive as strings or float64.
	if _, err := New("pso", Options{Space: sp, Params: map[string]any{"popsize": "12", "w": 0.7}}); err != nil {
		t.Errorf("valid hyperparameters: %v", err)
	}
}

func TestNSGA2FrontIsTheParetoFront(t *testing.T) {
	// Twelve configurations with hand-made (time ms, energy J); index 9
	// fails. The Pareto front, by hand: 0 (1, 9), 3 (2, 6), 5 (2.5, 5),
	// 8 (4, 2), 11 (6, 1). Index 6 (2, 7) is dominated by 3; 7 (4, 2.5) by
	// 8; 9 (0.5, 0.5) is invalid and so on no front.
	table := [][2]float64{{1, 9}, {3, 9}, {1.5, 9.5}, {2, 6}, {5, 5}, {2.5, 5}, {2, 7}, {4, 2.5}, {4, 2}, {0.5, 0.5}, {7, 3}, {6, 1}}
	sp := line(t, len(table))
	eval := func(i int) Evaluation {
		if i == 9 {
			return Evaluation{Index: i, Score: math.Inf(1)}
		}
		return Evaluation{Index: i, Score: table[i][0], Valid: true, Objectives: []float64{table[i][0], table[i][1]}}
	}
	if _, err := New("nsga2", Options{Space: sp, Seed: 5}); err == nil || !strings.Contains(err.Error(), "searches 2 objectives at once; the run has 1") {
		t.Fatalf("nsga2 with one objective: %v", err)
	}
	s, err := New("nsga2", Options{Space: sp, Seed: 5, Objectives: 2, Params: map[string]any{"popsize": 4}})
	if err != nil {
		t.Fatal(err)
	}
	driveSearch(t, s, eval, 3, 100)
	if got, want := s.(*nsga2).ParetoFront(), []int{0, 3, 5, 8, 11}; !slices.Equal(got, want) {
		t.Fatalf("front %v, want %v", got, want)
	}
}

func TestFrontsAndCrowding(t *testing.T) {
	pts := [][2]float64{{1, 5}, {2, 3}, {3, 1}, {2, 4}, {4, 4}}
	got := fmt.Sprint(fronts(pts))
	if got != "[[0 1 2] [3] [4]]" {
		t.Fatalf("fronts %s", got)
	}
	// Interior point 1 of front {0,1,2}: (3-1)/(3-1) + (5-1)/(5-1) = 2.
	cd := crowding(pts, []int{0, 1, 2})
	if !math.IsInf(cd[0], 1) || cd[1] != 2 || !math.IsInf(cd[2], 1) {
		t.Fatalf("crowding %v", cd)
	}
}

// TestBayesOptLocalPhase: after stall model-guided evaluations without a
// better configuration bayes_opt turns local (local=model): each of its
// proposals then is a neighbour of, or a crossover of two of, the
// configurations evaluated before; after local_stall more without one
// iterated local search takes over. It finds the bowl's minimum.
func TestBayesOptLocalPhase(t *testing.T) {
	sp, eval := bowl(t)
	s, err := New("bayes_opt", Options{Space: sp, Seed: 3, Params: map[string]any{"stall": 4, "local_stall": 6}})
	if err != nil {
		t.Fatal(err)
	}
	b := s.(*bayesOpt)
	var seen []int
	local, ils := 0, 0
	for len(seen) < 150 {
		ids := b.Next(1)
		if len(ids) == 0 {
			break
		}
		i := ids[0]
		switch {
		case b.handedOver:
			ils++
		case b.inLocal:
			local++
			if !nearOrCrossover(sp, i, seen) {
				t.Errorf("local proposal %v is neither a neighbour nor a crossover of the %d evaluated", sp.Indexes(i), len(seen))
			}
		}
		seen = append(seen, i)
		b.Tell(eval(i))
	}
	if local == 0 || ils == 0 {
		t.Fatalf("%d proposals: %d in the local phase, %d in iterated local search; want both", len(seen), local, ils)
	}
	if got := sp.Indexes(b.t.best); got[0] != 6 || got[1] != 3 || got[2] != 2 {
		t.Fatalf("best %v, want the minimum (6, 3, 2)", got)
	}
}

// nearOrCrossover: configuration i differs from one of done by one step
// (Hamming or adjacent: at most one in every index) or takes every
// parameter's value from one of two of them.
func nearOrCrossover(sp *space.Space, i int, done []int) bool {
	x := sp.Indexes(i)
	for _, j := range done {
		y := sp.Indexes(j)
		diff, adjacent := 0, true
		for d := range x {
			if x[d] != y[d] {
				diff++
				if x[d]-y[d] > 1 || y[d]-x[d] > 1 {
					adjacent = false
				}
			}
		}
		if diff <= 1 || adjacent {
			return true
		}
	}
	for _, j := range done {
		for _, k := range done {
			y, z := sp.Indexes(j), sp.Indexes(k)
			ok := true
			for d := range x {
				if x[d] != y[d] && x[d] != z[d] {
					ok = false
					break
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// trap is a 30×30 space with a broad basin of minimum 1 at (4, 4) and a
// narrow, deeper one far from it, of minimum 0.5 at (25, 25), below 1
// within a radius of 2 (13 configurations): a swarm or a population that
// converges on the broad basin seldom leaves it.
func trap(t testing.TB) (*space.Space, func(i int) Evaluation) {
	t.Helper()
	sp, err := space.Build([]space.Param{{Name: "x", Values: intValues(seq(30)...)}, {Name: "y", Values: intValues(seq(30)...)}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sp, func(i int) Evaluation {
		ix := sp.Indexes(i)
		x, y := float64(ix[0]), float64(ix[1])
		f := 1 + ((x-4)*(x-4)+(y-4)*(y-4))/100
		f = min(f, 0.5+((x-25)*(x-25)+(y-25)*(y-25))/8)
		return Evaluation{Index: i, Score: f, Valid: true}
	}
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// TestPopulationRestart: pso and diff_evo start again from fresh
// configurations after restart generations without a better one, which
// finds the trap's optimum in more runs than never restarting (seeds
// 1-20, 400 evaluations each: pso 10 without, 16 with; diff_evo 8 and
// 19).
func TestPopulationRestart(t *testing.T) {
	sp, eval := trap(t)
	for _, name := range []string{"pso", "diff_evo"} {
		found := map[int]int{}
		for _, restart := range []int{0, 5} {
			for seed := uint64(1); seed <= 20; seed++ {
				s, err := New(name, Options{Space: sp, Seed: seed, Params: map[string]any{"restart": restart}})
				if err != nil {
					t.Fatal(err)
				}
				for _, i := range driveSearch(t, s, eval, 1, 400) {
					if eval(i).Score == 0.5 {
						found[restart]++
						break
					}
				}
			}
		}
		t.Logf("%s: optimum found in %d of 20 runs without restarts, %d with restart 5", name, found[0], found[5])
		if found[5] < found[0]+5 || found[5] < 15 {
			t.Errorf("%s: optimum found in %d of 20 runs without restarts, %d with restart 5: want 5 more with, and at least 15", name, found[0], found[5])
		}
	}
}
