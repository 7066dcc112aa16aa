package strategy

import "math"

// greedy_mls and greedy_ils: local search over the neighbourhood of a
// configuration, after Kernel Tuner's strategies of the same names
// (Schoonhoven et al., "Benchmarking optimization algorithms for
// auto-tuning GPU kernels", IEEE TEC 2022, Sec. III). greedy_mls is
// sequential: Next proposes one configuration and waits for its result.
// greedy_ils keeps up to Options.Batch outstanding: the neighbours of a
// neighbourhood measure together, and the climb moves at the first told
// better.

func init() {
	Register("greedy_mls", Needs{}, newGreedyMLS)
	Register("greedy_ils", Needs{}, newGreedyILS)
}

// greedyMLS is multi-start local search: hill-climb from a random
// configuration to a local optimum, then start again from another random
// configuration not yet evaluated.
//
// Hyperparameters:
//   - neighbor: "Hamming" (default), "adjacent" or "strictly-adjacent"
//   - restart: true (default) moves at the first improving neighbour
//     (neighbours in random order); false scans every neighbour and moves
//     to the best one.
type greedyMLS struct {
	climb
}

// climb is the hill-climbing state greedy_mls and greedy_ils share: a
// start configuration waiting for its result, then a local search from it.
type climb struct {
	t      *tracker
	ls     localSearch
	active bool
	start  int // start configuration waiting for its result; -1 if none
}

// Tell starts the climb when the start configuration's result arrives and
// feeds every other result to the local search.
func (c *climb) Tell(r Evaluation) {
	s := c.t.tell(r)
	if math.IsNaN(s) {
		return
	}
	if r.Index == c.start {
		c.start = -1
		c.ls.start(r.Index, s)
		c.active = true
		return
	}
	c.ls.told(r.Index, s)
}

func newGreedyMLS(o Options) (Strategy, error) {
	h, err := newHyper("greedy_mls", o.Params, "neighbor", "restart")
	if err != nil {
		return nil, err
	}
	kind := h.choice("neighbor", "Hamming", neighborKinds...)
	first := h.bool("restart", true)
	if h.err != nil {
		return nil, h.err
	}
	t := newTracker(o.Space, newRand(o.Seed, 11))
	return &greedyMLS{climb{t: t, ls: localSearch{t: t, neighbors: neighborFunc(o.Space, kind), first: first}, start: -1}}, nil
}

func (g *greedyMLS) Name() string { return "greedy_mls" }

func (g *greedyMLS) Next(n int) []int {
	if n <= 0 || g.t.pending() > 0 {
		return nil
	}
	for {
		if g.active {
			if c, ok := g.ls.next(); ok {
				g.t.propose(c)
				return []int{c}
			}
			g.active = false
		}
		i, ok := g.t.randomFresh()
		if !ok {
			return nil
		}
		g.t.propose(i)
		g.start = i
		return []int{i}
	}
}

// greedyILS is iterated local search: hill-climb to a local optimum, then
// perturb the incumbent (the best local optimum so far) by a random walk
// and climb again; the new local optimum becomes the incumbent when it is
// better. After no_improvement evaluations without a better incumbent the
// search restarts from a random configuration.
//
// Hyperparameters:
//   - neighbor: "Hamming" (default), "adjacent" or "strictly-adjacent"
//   - restart: true (default): first improvement; false: best improvement
//   - random_walk: fraction of the parameters changed by a perturbation,
//     in (0, 1] (default 0.3; at least one step)
//   - no_improvement: evaluations without a better incumbent before a
//     random restart (default 50)
type greedyILS struct {
	climb
	walk     int
	patience int
	neigh    func(int) []int
	batch    int // Options.Batch: results outstanding at most

	inc      int // incumbent local optimum; -1 if none
	incScore float64
	lastImpr int // t.nTold when the incumbent last improved
}

func newGreedyILS(o Options) (Strategy, error) {
	h, err := newHyper("greedy_ils", o.Params, "neighbor", "restart", "random_walk", "no_improvement")
	if err != nil {
		return nil, err
	}
	kind := h.choice("neighbor", "Hamming", neighborKinds...)
	first := h.bool("restart", true)
	frac := h.float("random_walk", 0.3, 1e-9, 1)
	patience := h.int("no_improvement", 50, 1, math.MaxInt32)
	if h.err != nil {
		return nil, h.err
	}
	t := newTracker(o.Space, newRand(o.Seed, 12))
	nf := neighborFunc(o.Space, kind)
	walk := max(1, int(math.Round(frac*float64(len(o.Space.Params())))))
	return &greedyILS{climb: climb{t: t, ls: localSearch{t: t, neighbors: nf, first: first}, start: -1}, walk: walk, patience: patience, neigh: nf, batch: max(1, o.Batch), inc: -1, incScore: math.Inf(1)}, nil
}

func (g *greedyILS) Name() string { return "greedy_ils" }

func (g *greedyILS) Next(n int) []int {
	var out []int
	for len(out) < n && g.t.pending() < g.batch {
		i, ok := g.one()
		if !ok {
			break
		}
		out = append(out, i)
	}
	return out
}

// one proposes the next configuration: a neighbour, or the start of the
// next climb (a perturbation of the incumbent or a random restart). It
// returns false while the climb waits for a result it needs (its start's,
// or the rest of a neighbourhood's) and when the space is exhausted.
func (g *greedyILS) one() (int, bool) {
	if g.start >= 0 {
		return -1, false // the climb begins from the start's result
	}
	for tries := 0; ; tries++ {
		if g.active {
			if c, ok := g.ls.next(); ok {
				g.t.propose(c)
				return c, true
			}
			if g.ls.waiting() {
				return -1, false
			}
			g.active = false
			if g.ls.curScore < g.incScore {
				g.inc, g.incScore, g.lastImpr = g.ls.cur, g.ls.curScore, g.t.nTold
			}
		}
		var i int
		if g.inc < 0 || g.t.nTold-g.lastImpr >= g.patience || tries > 100 {
			// (Re)start from a random configuration.
			var ok bool
			if i, ok = g.t.randomFresh(); !ok {
				return -1, false
			}
			if g.inc >= 0 {
				g.lastImpr = g.t.nTold
				g.inc, g.incScore = -1, math.Inf(1)
			}
		} else {
			i = g.perturb(g.inc)
		}
		if s, ok := g.t.known(i); ok {
			g.ls.start(i, s)
			g.active = true
			continue
		}
		g.t.propose(i)
		g.start = i
		return i, true
	}
}

// perturb walks g.walk random neighbour steps from i.
func (g *greedyILS) perturb(i int) int {
	for k := 0; k < g.walk; k++ {
		nb := g.neigh(i)
		if len(nb) == 0 {
			break
		}
		i = nb[g.t.rng.IntN(len(nb))]
	}
	return i
}
