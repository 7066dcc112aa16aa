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
// results are outstanding (the constant liar), up to 4 at once; with a
// batch of 1 it waits for each result.
func TestBayesOptBatch(t *testing.T) {
	p := grid(t)
	for _, batch := range []int{1, 4} {
		s, err := strategy.New("bayes_opt", strategy.Options{Space: p.Space, Seed: 2, Budget: 40, Batch: batch, Params: map[string]any{"initial_samples": 2}})
		if err != nil {
			t.Fatal(err)
		}
		c := &counting{Strategy: s}
		var outstanding []int
		for told := 0; told < 40; {
			ids := c.Next(batch - len(outstanding))
			outstanding = append(outstanding, ids...)
			if len(ids) == 0 || len(outstanding) == batch {
				i := outstanding[0]
				outstanding = outstanding[1:]
				c.Tell(strategy.Evaluation{Index: i, Score: p.Times[i], Valid: true})
				told++
			}
		}
		if c.most != batch {
			t.Errorf("batch %d: at most %d outstanding", batch, c.most)
		}
	}
}
