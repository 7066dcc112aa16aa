package strategy

import (
	"math"
	"slices"
)

// genetic_algorithm after Kernel Tuner's (Schoonhoven et al., IEEE TEC
// 2022, Sec. III-C): a population of configurations as genomes of value
// indexes; parents are chosen with probability by rank, recombined by
// crossover and mutated gene by gene; a child that is not a valid,
// fresh configuration is repaired to the nearest one that is (Euclidean
// over value indexes). Survivors are the best popsize of parents and
// children (elitist). One generation per Next/Tell round.
//
// Hyperparameters:
//   - popsize: population size (default 20, rounded up to a multiple of
//     the GPUs measuring at once: populationFor)
//   - mutation_chance: each gene mutates with probability 1/mutation_chance
//     (default 10)
//   - method: crossover, "uniform" (default), "single_point", "two_point"
//     or "disruptive_uniform"
type geneticAlgorithm struct {
	t *tracker
	d popDriver
	evolution
	sizes    []int
	pop      []int // population, best first once scored
	children []int
}

func init() { Register("genetic_algorithm", Needs{}, newGeneticAlgorithm) }

func newGeneticAlgorithm(o Options) (Strategy, error) {
	e, err := evolutionHyper("genetic_algorithm", o.Params, o.Batch)
	if err != nil {
		return nil, err
	}
	g := &geneticAlgorithm{evolution: e, sizes: dims(o.Space)}
	g.t = newTracker(o.Space, newRand(o.Seed, 14))
	g.d = popDriver{t: g.t, advance: g.advance}
	return g, nil
}

func (g *geneticAlgorithm) Name() string      { return "genetic_algorithm" }
func (g *geneticAlgorithm) Next(n int) []int  { return g.d.next(n) }
func (g *geneticAlgorithm) Tell(r Evaluation) { g.t.tell(r) }

func (g *geneticAlgorithm) score(i int) float64 {
	s, ok := g.t.known(i)
	if !ok {
		return math.Inf(1)
	}
	return s
}

func (g *geneticAlgorithm) advance() {
	if g.pop == nil {
		for _, i := range initial(g.t, g.popsize) {
			if j := g.d.add(i); j >= 0 {
				g.pop = append(g.pop, j)
			}
		}
		return
	}
	all := append(g.pop, g.children...)
	slices.SortStableFunc(all, func(a, b int) int { return cmpScore(g.score(a), g.score(b)) })
	g.pop = slices.Clone(all[:min(g.popsize, len(all))])
	g.children = g.children[:0]
	r := g.t.rng
	for len(g.children) < g.popsize {
		a := point(g.t.sp, g.pop[rankWeighted(r, len(g.pop))])
		b := point(g.t.sp, g.pop[rankWeighted(r, len(g.pop))])
		c := crossover(g.method, a, b, r)
		for p := range c {
			if r.IntN(g.mutation) == 0 {
				c[p] = float64(r.IntN(g.sizes[p]))
			}
		}
		j := g.d.addPoint(c)
		if j < 0 {
			return
		}
		g.children = append(g.children, j)
	}
}

func cmpScore(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// crossover recombines genomes a and b (Kernel Tuner's crossover methods).
func crossover(method string, a, b []float64, r interface{ IntN(int) int }) []float64 {
	n := len(a)
	c := slices.Clone(a)
	switch method {
	case "single_point":
		k := r.IntN(n + 1)
		copy(c[k:], b[k:])
	case "two_point":
		i, j := r.IntN(n+1), r.IntN(n+1)
		if i > j {
			i, j = j, i
		}
		copy(c[i:j], b[i:j])
	case "disruptive_uniform":
		// Swap half of the genes where the parents differ.
		var diff []int
		for p := range a {
			if a[p] != b[p] {
				diff = append(diff, p)
			}
		}
		for k := len(diff) - 1; k > 0; k-- {
			m := r.IntN(k + 1)
			diff[k], diff[m] = diff[m], diff[k]
		}
		for _, p := range diff[:len(diff)/2] {
			c[p] = b[p]
		}
	default: // uniform
		for p := range c {
			if r.IntN(2) == 1 {
				c[p] = b[p]
			}
		}
	}
	return c
}

// evolution holds the hyperparameters the evolutionary strategies share
// (genetic_algorithm, nsga2): population size, the chance 1/mutation of
// mutating each gene, and the crossover method.
type evolution struct {
	popsize  int
	mutation int
	method   string
}

// evolutionHyper reads popsize (default populationFor(batch)),
// mutation_chance (default 10) and method (default uniform) for the
// strategy name; any other hyperparameter is an error listing the valid
// ones.
func evolutionHyper(name string, params map[string]any, batch int) (evolution, error) {
	h, err := newHyper(name, params, "popsize", "mutation_chance", "method")
	if err != nil {
		return evolution{}, err
	}
	e := evolution{
		popsize:  h.int("popsize", populationFor(batch), 2, 1<<20),
		mutation: h.int("mutation_chance", 10, 1, 1<<30),
		method:   h.choice("method", "uniform", "uniform", "single_point", "two_point", "disruptive_uniform"),
	}
	return e, h.err
}

// populationFor is the default population of the population-based
// strategies (genetic_algorithm, nsga2, pso, diff_evo) measured batch
// configurations at a time (Options.Batch: the GPUs of a run over several):
// Kernel Tuner's 20, rounded up to a multiple of batch. A generation is
// proposed at once and the next waits for all of it, so a generation of
// 20 on 16 GPUs takes two waves, the second with 4 of 16 GPUs busy
// (62 % efficiency, measured: BENCHMARKS.md "Tuning on a Slurm cluster");
// 32 fills both.
func populationFor(batch int) int {
	if batch <= 1 {
		return 20
	}
	return (20 + batch - 1) / batch * batch
}
