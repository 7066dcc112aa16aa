package strategy

import (
	"math"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// BenchmarkPropose is the cost of proposing a configuration (Next and
// Tell, the strategy's own work) on a 10^5-configuration space: five
// parameters of ten values, a smooth objective with one optimum, 400
// evaluations per run (issue 35's target: under 10 ms a proposal).
// ms/proposal is the mean over the 400; bayes_opt_in_flight_4 is
// bayes_opt told a batch of 4, as tune runs it on a GPU, and
// bayes_opt_thread_blocks bayes_opt on the same space with two parameters
// named as the thread block's dimensions (values 1..10), where its local
// phases also try reshapes.
//
//	go test ./strategy -run '^$' -bench Propose -benchtime 3x
func BenchmarkPropose(b *testing.B) {
	// grid is five parameters of ten values from first, named names.
	grid := func(names []string, first int64) *space.Space {
		var params []space.Param
		for _, n := range names {
			var vs []expr.Value
			for v := range int64(10) {
				vs = append(vs, expr.Int(first+v))
			}
			params = append(params, space.Param{Name: n, Values: vs})
		}
		sp, err := space.Build(params, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if sp.Len() != 100000 {
			b.Fatalf("%d configurations", sp.Len())
		}
		return sp
	}
	sp := grid([]string{"a", "b", "c", "d", "e"}, 0)
	// score depends on value indexes only, so it is the same landscape on
	// every grid.
	score := func(i int) float64 {
		s := 1.0
		for p, x := range sp.Indexes(i) {
			d := float64(x) - float64(p+3)
			s += d * d * float64(p+1)
		}
		return s * (1 + 0.1*math.Sin(float64(i)))
	}
	const evals = 400
	// sequential measures name on a space, each proposal told before the next.
	sequential := func(name string, on *space.Space) func(b *testing.B) {
		return func(b *testing.B) {
			proposals := 0
			for i := 0; i < b.N; i++ {
				s, err := New(name, Options{Space: on, Seed: uint64(i + 1), Budget: evals})
				if err != nil {
					b.Fatal(err)
				}
				for done := 0; done < evals; {
					ids := s.Next(1)
					if len(ids) == 0 {
						break
					}
					for _, id := range ids {
						s.Tell(Evaluation{Index: id, Valid: true, Score: score(id)})
						done++
						proposals++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(proposals, 1))/1e6, "ms/proposal")
		}
	}
	for _, name := range []string{"random_sample", "bayes_opt", "genetic_algorithm", "pso", "diff_evo", "dual_annealing", "simulated_annealing", "greedy_ils", "greedy_mls"} {
		b.Run(name, sequential(name, sp))
	}
	// bayes_opt where two of the parameters are the thread block's
	// dimensions, values 1..10: its local phases then also try the best
	// configurations' reshapes (reshapeFunc), the case of a CUDA kernel.
	blocks := grid([]string{"block_size_x", "block_size_y", "c", "d", "e"}, 1)
	if reshapeFunc(blocks) == nil {
		b.Fatal("no reshape neighbourhood")
	}
	b.Run("bayes_opt_thread_blocks", sequential("bayes_opt", blocks))
	// bayes_opt with 4 in flight (tune's default on a GPU): the oldest of
	// 4 outstanding told before each new proposal, chosen as if the
	// others had been measured (the kriging believer).
	b.Run("bayes_opt_in_flight_4", func(b *testing.B) {
		proposals := 0
		for i := 0; i < b.N; i++ {
			s, err := New("bayes_opt", Options{Space: sp, Seed: uint64(i + 1), Budget: evals, Batch: 4})
			if err != nil {
				b.Fatal(err)
			}
			var out []int
			for done := 0; done < evals; {
				ids := s.Next(min(4-len(out), evals-done-len(out)))
				out = append(out, ids...)
				proposals += len(ids)
				if len(out) == 0 {
					break
				}
				if len(ids) == 0 || len(out) == 4 {
					s.Tell(Evaluation{Index: out[0], Valid: true, Score: score(out[0])})
					out = out[1:]
					done++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(proposals, 1))/1e6, "ms/proposal")
	})
}
