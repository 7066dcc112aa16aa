package benchmark

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/strategy"
)

// grid is a 2-D problem of 30 × 30 configurations whose time is a bowl
// with noise, its minimum at (21, 8).
func grid(t *testing.T) *Problem {
	t.Helper()
	vals := make([]expr.Value, 30)
	for i := range vals {
		vals[i] = expr.Int(int64(i))
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: vals}, {Name: "y", Values: vals}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	times := make([]float64, sp.Len())
	for i := range times {
		c := sp.Values(i)
		x, _ := c[0].Int()
		y, _ := c[1].Int()
		times[i] = 1 + math.Pow(float64(x-21), 2)/50 + math.Pow(float64(y-8), 2)/50 + 0.05*r.Float64()
	}
	p, err := NewProblem("grid", sp, times, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Replayed over several GPUs, a strategy that does not learn from the
// results it waits for (random sampling) makes the same run as on one;
// brute force too. bayes_opt keeps up to the batch outstanding, never
// proposes twice (RunParallel checks), and still finds the bowl.
func TestRunParallel(t *testing.T) {
	p := grid(t)
	for _, name := range []string{"random_sample", "brute_force"} {
		one, err := Run(p, name, nil, 5, 60)
		if err != nil {
			t.Fatal(err)
		}
		four, err := RunParallel(p, name, nil, 5, 60, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one, four) {
			t.Errorf("%s: one GPU %v\nfour GPUs %v", name, one, four)
		}
	}
	for _, gpus := range []int{1, 4} {
		curve, err := RunParallel(p, "bayes_opt", nil, 3, 60, gpus)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Optimum() / curve[59]; got < 0.9 {
			t.Errorf("bayes_opt on %d GPU(s): %.3f of the optimum after 60", gpus, got)
		}
	}
}

// counting counts a strategy's outstanding proposals.
type counting struct {
	strategy.Strategy
	outstanding, most int
}

func (c *counting) Next(n int) []int {
	ids := c.Strategy.Next(n)
	c.outstanding += len(ids)
	c.most = max(c.most, c.outstanding)
	return ids
}

func (c *counting) Tell(r strategy.Evaluation) {
	c.outstanding--
	c.Strategy.Tell(r)
}

// bayes_opt told a batch of 4 proposes beyond its initial design (2 here) while
// results are outstanding (liar), up to 4 at once, and so does greedy_ils
// (the neighbours of a neighbourhood), also as bayes_opt's last phase
// (bo_evals 10); with a batch of 1 each waits for each result.
func TestBayesOptBatch(t *testing.T) {
	p := grid(t)
	for _, c := range []struct {
		name   string
		params map[string]any
	}{
		{"bayes_opt", map[string]any{"initial_samples": 2}},
		{"greedy_ils", nil},
		{"bayes_opt", map[string]any{"initial_samples": 2, "bo_evals": 10}},
	} {
		for _, batch := range []int{1, 4} {
			testBatch(t, p, c.name, c.params, batch)
		}
	}
}

// testBatch drives strategy name told a batch over 40 evaluations, asking
// for as many as the batch leaves room for and telling the oldest when
// it is full or the strategy waits: it must reach the batch, never
// exceed it, and never propose twice.
func testBatch(t *testing.T, p *Problem, name string, params map[string]any, batch int) {
	t.Helper()
	s, err := strategy.New(name, strategy.Options{Space: p.Space, Seed: 2, Budget: 40, Batch: batch, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Strategy: s}
	var outstanding []int
	seen := map[int]bool{}
	late := 0 // most outstanding after the first 20 told
	for told := 0; told < 40; {
		ids := c.Next(batch - len(outstanding))
		for _, i := range ids {
			if seen[i] {
				t.Fatalf("%s batch %d: configuration %d proposed twice", name, batch, i)
			}
			seen[i] = true
		}
		outstanding = append(outstanding, ids...)
		if told >= 20 {
			late = max(late, len(outstanding))
		}
		if len(ids) == 0 || len(outstanding) == batch {
			i := outstanding[0]
			outstanding = outstanding[1:]
			c.Tell(strategy.Evaluation{Index: i, Score: p.Times[i], Valid: true})
			told++
		}
	}
	if c.most != batch || late != batch {
		t.Errorf("%s %v, batch %d: at most %d outstanding, %d after 20 told", name, params, batch, c.most, late)
	}
}
