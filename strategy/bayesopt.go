package strategy

import (
	"math"
	"slices"
)

// bayes_opt is Bayesian optimisation over the discrete space (Willemsen,
// van Nieuwpoort & van Werkhoven, "Bayesian optimization for auto-tuning
// GPU kernels", PMBS 2021, which Kernel Tuner's bayes_opt follows): a
// Gaussian process (gp.go) on the logarithm of the score, standardised,
// with a Matérn 5/2 kernel whose per-coordinate length scales and noise
// maximise the log marginal likelihood plus a weak prior (automatic
// relevance determination: coordinates that do not matter get long length
// scales), found on a grid and refined by L-BFGS with the analytic
// gradient (refineHyper). The coordinates (featureMap) are one in [0, 1]
// per parameter that has more than one value (its value's logarithm, or
// its index), two that GPU kernels need (issue 35: measured on the
// replayed caches, they raise the gap closed at 25 evaluations from 0.23
// to 0.33 together with the gradient fit and the smaller initial design):
// each integer parameter's power-of-two alignment up to the warp size
// (addAlignment) and the log of the threads per thread block
// (addThreads). The next configuration minimises the lower confidence
// bound μ − 3.5σ (Srinivas et al. 2010; an exploring weight: at 25
// evaluations exploring pays more than expected improvement, Jones,
// Schonlau & Welch 1998, the other acquisition) over a candidate set of fresh
// configurations: the Hamming and adjacent neighbours of the best
// configurations found plus a uniform random sample. The initial design is
// a small uniform sample of the valid configurations (4 by default), so
// that the model guides the search early. Invalid configurations enter the
// model with the worst observed value, so the model learns to avoid their
// region. The model is fitted on at most max_points observations (the
// best half and a random half); the hyperparameters are refitted on at
// most 100 of them, every refit observations and at least every eighth of
// those told. After stall model-guided evaluations without improvement
// the search turns local by measured progress: the model's mean picks
// among the neighbours of the best configurations and their crossovers
// (localPick), until local_stall evaluations more bring nothing better;
// then, or after bo_evals evaluations, it continues as iterated local
// search (greedy_ils) from the best configuration, whose random walks
// and restarts leave a basin the model keeps returning to. Both local
// phases also try the best configurations' thread-block reshapes
// (reshapeFunc), which no single Hamming or adjacent step reaches. After the
// initial design (which Next hands out as one batch) it keeps up to
// Options.Batch configurations outstanding, each chosen as if those
// outstanding had been measured (liar).
//
// Hyperparameters:
//   - initial_samples: size of the initial design (default 4)
//   - candidates: random fresh configurations in each candidate set
//     (default 300)
//   - top: best configurations whose neighbours join the candidates
//     (default 5)
//   - xi: exploration margin of expected improvement, in standardised
//     units (default 0.01)
//   - max_points: observations the model is fitted on (default 200)
//   - bo_evals: evaluations guided by the model (default 400; 0: all)
//   - refit: observations between hyperparameter fits (default 10)
//   - stall: model-guided evaluations without a better configuration
//     after which the search hands over to iterated local search early
//     (0: never; default 20, or 15 % of the run's budget where that is
//     more: on the replayed caches the gap closed at 100 evaluations is
//     0.556 / 0.641 / 0.648 / 0.626 with stall 10 / 20 / 30 / 60, and at
//     400 it is 0.881 with 20 and 0.902 with 60, 100 seeds each: the
//     longer the run, the longer the model pays before local search)
//   - local: "model" (default: the model-guided local phase, localPick,
//     between the global phase and iterated local search) or "ils"
//     (straight to iterated local search); on the replayed caches the
//     gap closed at 100 / 400 evaluations is 0.647 / 0.919 with "model"
//     and 0.641 / 0.902 with "ils", 100 seeds each
//   - local_stall: evaluations of the local phase without a better
//     configuration before iterated local search takes over (default as
//     stall's: 20, or 15 % of the run's budget)
//   - scaling: "log" (default) or "index": placement of a parameter's
//     values on its axis (featureMap)
//   - alignment, threads: the power-of-two alignment and threads per
//     thread block coordinates (default true each)
//   - fit: how the kernel's hyperparameters are chosen: "gradient"
//     (default: the isotropic grid, then L-BFGS), "grid" (the grid and
//     ard coordinate passes) or "grid+gradient" (both)
//   - design: "random" (default: a uniform sample of the valid
//     configurations, space.Sample) or "lhs" (space.LatinHypercube, whose
//     snapping to valid configurations crowds the boundary of restricted
//     spaces)
//   - acquisition: "lcb" (default: lower confidence bound μ − kappa·σ,
//     Srinivas et al. 2010) or "ei" (expected improvement)
//   - kappa: exploration weight of lcb (default 3.5: on the replayed
//     caches the gap closed at 25 / 100 evaluations is 0.334 / 0.598
//     with ei, 0.362 / 0.622 at kappa 2.5, 0.367 / 0.641 at 3.5 and
//     0.360 / 0.635 at 5, 100 seeds each)
//   - invalid: how configurations that failed enter the model: "worst"
//     (default: the worst observed value) or "feasibility" (a second GP
//     on validity, BaCO's feasibility model: its probability weighs
//     expected improvement, and lcb passes over a candidate more likely
//     to fail than to run; no better on the hub's caches, where 0–11 % of
//     the configurations fail)
//   - target: what the GP models: "log" (the logarithm of the score) or
//     "rank" (the normal quantiles of the observations' ranks, a Gaussian
//     copula, rankGauss); default "rank" for runs told a budget of at
//     most 50 evaluations (rankBudget), else "log"
//   - ard: coordinate passes of the per-parameter length-scale fit on
//     the grid (default 2; 0: one length scale for all parameters); the
//     gradient fit sets every length scale at once
//   - liar: with results outstanding, what the model takes them to
//     be: "believer" (default: its own mean there), "min", "median" or
//     "max" (see the field liar for what each closes)
//   - reshape: where the thread-block reshapes of a configuration
//     (reshapeFunc: the same threads per block in another shape, 16×48
//     and 8×96) join its neighbours: "both" (default: the candidates
//     around the best configurations, addNeighbours, and iterated local
//     search's climb), "candidates", "ils" or "off". On the replayed
//     caches the gap closed at 25 / 100 / 400 evaluations is 0.397 /
//     0.660 / 0.942 with "both" and 0.399 / 0.647 / 0.919 with "off",
//     100 seeds each; on dedispersion at 400, 0.946 against 0.853
type bayesOpt struct {
	name      string
	t         *tracker
	nInit     int
	nCand     int
	nTop      int
	xi        float64
	maxPoints int
	boEvals   int
	refit     int
	ard       int
	fit       string
	invalid   string
	local     string
	// inLocal: the model-guided local phase (local=model) runs, since
	// localSince told, until localStall evaluations bring nothing better.
	inLocal    bool
	localSince int
	localStall int
	// feas, when not nil, is the feasibility model of the last fit (the
	// "feasibility" treatment of invalid configurations): a GP over the
	// same coordinates on each observation's validity, 1 or 0, less
	// pValid, the valid share observed.
	feas       *gp
	pValid     float64
	designKind string
	acq        string
	kappa      float64
	fm         *featureMap
	design     []int
	told       []int // configurations in the order told
	hyp        hyperGP
	lastFit    int
	ils        *greedyILS
	hamming    func(int) []int
	adjacent   func(int) []int
	reshapes   func(int) []int // thread-block reshapes (reshapeFunc); nil: none
	// batch is Options.Batch: results outstanding at most. With more
	// than one, each proposal beyond the first is chosen as if the
	// outstanding ones had been measured (withLiars, liar), so that a
	// batch spreads over the space instead of piling on one optimum.
	batch int
	lying bool // withLiars: outstanding configurations hold lies
	// liar is what outstanding configurations are taken to have scored
	// (Ginsbourger, Le Riche and Carraro, "Kriging is well-suited to
	// parallelize optimization", 2010): "believer" the model's mean
	// there (the kriging believer: the mean stays, the uncertainty
	// shrinks), "min" the incumbent's score (the constant liar CL-min),
	// "median" or "max" the median or worst valid score measured. With
	// 4 outstanding on the 8 replayed caches (bench-strategies --gpus 4,
	// 100 seeds) they close 0.346 / 0.233 / 0.316 / 0.306 of random
	// search's gap at 25 evaluations; one at a time, 0.399.
	liar        string
	outstanding []int // withLiars: proposed, not yet told
	stall       int
	lastImpr    int     // t.nTold when the best last improved
	lastBest    float64 // best score at lastImpr
	handedOver  bool
	target      string

	// transfer (transfer.go): per prior device, a feature per
	// configuration; configurations by mean prior rank, best first; how
	// many of those join each candidate set.
	prior       [][]float64
	priorOrder  []int
	priorCands  int
	nRandomInit int
}

// defaultStall is bayes_opt's stall for a run of budget evaluations (0:
// unknown): 20, or 15 % of the budget where that is more.
func defaultStall(budget int) int { return max(20, budget*15/100) }

// defaultTarget is bayes_opt's target for a run of budget evaluations (0:
// unknown): "rank" up to rankBudget evaluations, else "log".
func defaultTarget(budget int) string {
	if budget > 0 && budget <= rankBudget {
		return "rank"
	}
	return "log"
}

// rankBudget is the longest run whose model is fitted on the ranks of its
// observations (rankGauss) by default: on the replayed caches the gap
// closed at 25 / 50 / 100 evaluations is 0.399 / 0.517 / 0.614 with ranks
// and 0.367 / 0.488 / 0.647 with logarithms, 100 seeds each. A few
// observations spread over orders of magnitude (the slowest configurations
// of a convolution are 30 times the fastest) pull a model of logarithms
// towards the outliers; by 100 the values themselves say more than their
// order.
const rankBudget = 50

// hyperPoints bounds the observations the hyperparameters are fitted on:
// the grid search costs O(points³) per grid point.
const hyperPoints = 100

func init() { Register("bayes_opt", Needs{}, newBayesOpt) }

func newBayesOpt(o Options) (Strategy, error) {
	h, err := newHyper("bayes_opt", o.Params, "initial_samples", "candidates", "top", "xi", "max_points", "bo_evals", "refit", "stall", "scaling", "ard", "design", "acquisition", "kappa", "fit", "alignment", "threads", "invalid", "local", "local_stall", "target", "liar", "reshape")
	if err != nil {
		return nil, err
	}
	b := &bayesOpt{
		name:      "bayes_opt",
		nInit:     h.int("initial_samples", 4, 1, 1<<20),
		nCand:     h.int("candidates", 300, 0, 1<<20),
		nTop:      h.int("top", 5, 0, 1<<20),
		xi:        h.float("xi", 0.01, 0, 10),
		maxPoints: h.int("max_points", 200, 10, 1<<16),
		boEvals:   h.int("bo_evals", 400, 0, math.MaxInt32),
		refit:     h.int("refit", 10, 1, 1<<20),
		stall:     h.int("stall", defaultStall(o.Budget), 0, math.MaxInt32),
		ard:       h.int("ard", 2, 0, 10),
		lastBest:  math.Inf(1),
		batch:     max(o.Batch, 1),
	}
	scaling := h.choice("scaling", "log", "index", "log")
	b.designKind = h.choice("design", "random", "lhs", "random")
	b.acq = h.choice("acquisition", "lcb", "ei", "lcb")
	b.kappa = h.float("kappa", 3.5, 0, 100)
	b.fit = h.choice("fit", "gradient", "grid", "gradient", "grid+gradient")
	alignment := h.bool("alignment", true)
	threads := h.bool("threads", true)
	reshape := h.choice("reshape", "both", "off", "candidates", "ils", "both")
	b.invalid = h.choice("invalid", "worst", "worst", "feasibility")
	b.local = h.choice("local", "model", "ils", "model")
	b.localStall = h.int("local_stall", defaultStall(o.Budget), 1, math.MaxInt32)
	b.target = h.choice("target", defaultTarget(o.Budget), "log", "rank")
	b.liar = h.choice("liar", "believer", "min", "median", "max", "believer")
	if h.err != nil {
		return nil, h.err
	}
	if b.nCand == 0 && b.nTop == 0 {
		return nil, errorf("bayes_opt: candidates and top are both 0: no candidate configurations")
	}
	b.t = newTracker(o.Space, newRand(o.Seed, 18))
	b.fm = newFeatureMap(o.Space, scaling)
	if alignment {
		b.fm.addAlignment()
	}
	if threads {
		b.fm.addThreads()
	}
	b.hamming = neighborFunc(o.Space, "Hamming")
	b.adjacent = neighborFunc(o.Space, "adjacent")
	ils, _ := newGreedyILS(Options{Space: o.Space, Seed: o.Seed, Batch: o.Batch})
	b.ils = ils.(*greedyILS)
	if reshape != "off" {
		rf := reshapeFunc(o.Space)
		if reshape != "ils" {
			b.reshapes = rf
		}
		if reshape != "candidates" {
			b.ils.ls.neighbors = withReshapes(b.ils.ls.neighbors, rf)
		}
	}
	b.ils.t = b.t // share the record: never propose a configuration twice
	b.ils.ls.t = b.t
	return b, nil
}

func (b *bayesOpt) Name() string { return b.name }

func (b *bayesOpt) Next(n int) []int {
	if n <= 0 || b.t.exhausted() {
		return nil
	}
	if b.design == nil {
		if b.prior != nil {
			b.design = b.priorDesign()
		} else if b.designKind == "random" {
			b.design = b.t.sp.Sample(b.t.rng, min(b.nInit, b.t.n))
		} else {
			b.design = initial(b.t, b.nInit)
		}
	}
	if len(b.design) > 0 {
		var out []int
		for len(out) < n && len(b.design) > 0 {
			i := b.design[0]
			b.design = b.design[1:]
			if !b.t.proposed[i] {
				b.t.propose(i)
				out = append(out, i)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if b.t.pending() >= b.batch {
		return nil
	}
	if b.t.best < 0 {
		if b.t.pending() > 0 {
			return nil // nothing to model, nor to lie about, yet
		}
		// Nothing valid to model yet: sample at random.
		i, ok := b.t.randomFresh()
		if !ok {
			return nil
		}
		b.t.propose(i)
		return []int{i}
	}
	if b.t.bestScore < b.lastBest {
		b.lastBest, b.lastImpr = b.t.bestScore, b.t.nTold
	}
	if b.handedOver || b.boEvals > 0 && b.t.nTold >= b.boEvals || b.stall > 0 && b.t.nTold-b.lastImpr >= b.stall && b.t.nTold > b.nInit {
		if b.local == "model" && !b.handedOver && (b.boEvals == 0 || b.t.nTold < b.boEvals) {
			if !b.inLocal {
				b.inLocal, b.localSince = true, b.t.nTold
			}
			if b.t.nTold-max(b.lastImpr, b.localSince) < b.localStall {
				return b.proposeWith(n, b.localPick)
			}
		}
		if !b.handedOver {
			b.handedOver = true
			// Hand over: the incumbent is the model's best.
			b.ils.ls.start(b.t.best, b.t.bestScore)
			b.ils.active = true
			b.ils.lastImpr = b.t.nTold
		}
		return b.ils.Next(n)
	}
	return b.proposeWith(n, b.maximiseAcquisition)
}

// proposeWith proposes up to n configurations that pick chooses, while
// fewer than the batch are outstanding (withLiars).
func (b *bayesOpt) proposeWith(n int, pick func() (int, bool)) []int {
	var out []int
	for len(out) < n && b.t.pending() < b.batch && !b.t.exhausted() {
		i, ok := b.withLiars(pick)
		if !ok {
			break
		}
		b.t.propose(i)
		out = append(out, i)
	}
	return out
}

// bestTold is the k best configurations told whose score is finite, best
// first.
func (b *bayesOpt) bestTold(k int) []int {
	sorted := slices.Clone(b.told)
	slices.SortStableFunc(sorted, func(x, y int) int { return cmpScore(b.t.score[x], b.t.score[y]) })
	sorted = sorted[:min(k, len(sorted))]
	for n, i := range sorted {
		if math.IsInf(b.t.score[i], 1) {
			return sorted[:n]
		}
	}
	return sorted
}

// candidates is a candidate set of fresh configurations, each once, in
// the order added.
type candidates struct {
	proposed []bool
	seen     map[int]bool
	list     []int
}

func (b *bayesOpt) newCandidates() *candidates {
	return &candidates{proposed: b.t.proposed, seen: map[int]bool{}}
}

func (c *candidates) add(i int) {
	if !c.proposed[i] && !c.seen[i] {
		c.seen[i] = true
		c.list = append(c.list, i)
	}
}

// addNeighbours adds the Hamming and adjacent neighbours of each of
// configurations to c.
func (b *bayesOpt) addNeighbours(c *candidates, configurations []int) {
	for _, i := range configurations {
		for _, j := range b.hamming(i) {
			c.add(j)
		}
		for _, j := range b.adjacent(i) {
			c.add(j)
		}
		if b.reshapes != nil {
			for _, j := range b.reshapes(i) {
				c.add(j)
			}
		}
	}
}

// withLiars runs pick with every outstanding configuration (proposed, not
// yet told) taken as measured, its score the liar's, and takes the lies
// back after. With none outstanding it is pick.
func (b *bayesOpt) withLiars(pick func() (int, bool)) (int, bool) {
	if b.t.pending() == 0 {
		return pick()
	}
	var liars []int
	for i, p := range b.t.proposed {
		if p && math.IsNaN(b.t.score[i]) {
			liars = append(liars, i)
		}
	}
	if b.liar == "believer" {
		// The lies join the model after the fit (model, gp.believe).
		b.outstanding, b.lying = liars, true
		defer func() { b.lying = false }()
		return pick()
	}
	if b.hyp.ls == nil || b.hyperDue() {
		// The GP's hyperparameters come from measurements only, not
		// lies: they are kept for the next refit evaluations.
		if _, _, ok := b.model(); !ok {
			return b.t.randomFresh()
		}
	}
	b.lying = true
	defer func() { b.lying = false }()
	told := len(b.told)
	lie := b.lie()
	for _, i := range liars {
		b.t.score[i] = lie
		b.told = append(b.told, i)
	}
	i, ok := pick()
	for _, j := range liars {
		b.t.score[j] = math.NaN()
	}
	b.told = b.told[:told]
	return i, ok
}

// lie is the score outstanding configurations are given (liar).
func (b *bayesOpt) lie() float64 {
	if b.liar == "min" {
		return b.t.bestScore
	}
	var f []float64
	for _, i := range b.told {
		if s := b.t.score[i]; !math.IsInf(s, 0) && !math.IsNaN(s) {
			f = append(f, s)
		}
	}
	if len(f) == 0 {
		return b.t.bestScore // nothing valid yet: no scale to lie on
	}
	slices.Sort(f)
	if b.liar == "max" {
		return f[len(f)-1]
	}
	return f[len(f)/2]
}

// hyperDue says whether model refits the kernel's hyperparameters: every
// refit evaluations, or an eighth of those told where that is more.
func (b *bayesOpt) hyperDue() bool {
	return b.t.nTold-b.lastFit >= max(b.refit, b.t.nTold/8)
}

func (b *bayesOpt) Tell(r Evaluation) {
	if b.handedOver {
		b.ils.Tell(r) // records in the shared tracker
		return
	}
	if !math.IsNaN(b.t.tell(r)) {
		b.told = append(b.told, r.Index)
	}
}

// model fits the GP to (a subset of) the observations: targets are
// log(score) (or, with target "rank", their ranks' normal quantiles)
// standardised; invalid configurations get the worst value.
func (b *bayesOpt) model() (*gp, float64, bool) {
	obs := b.told
	if len(obs) > b.maxPoints {
		// The best half and a random half of the rest.
		sorted := slices.Clone(obs)
		slices.SortStableFunc(sorted, func(x, y int) int { return cmpScore(b.t.score[x], b.t.score[y]) })
		keep := slices.Clone(sorted[:b.maxPoints/2])
		rest := sorted[b.maxPoints/2:]
		for _, k := range b.t.rng.Perm(len(rest))[:b.maxPoints-len(keep)] {
			keep = append(keep, rest[k])
		}
		obs = keep
	}
	b.feas = nil
	if b.invalid == "feasibility" {
		obs = b.fitFeasibility(obs)
	}
	y := make([]float64, len(obs))
	worst := math.Inf(-1)
	for k, i := range obs {
		s := b.t.score[i]
		y[k] = transform(s)
		if !math.IsInf(y[k], 0) && y[k] > worst {
			worst = y[k]
		}
	}
	if math.IsInf(worst, -1) {
		return nil, 0, false
	}
	for k := range y {
		if math.IsInf(y[k], 0) || math.IsNaN(y[k]) {
			y[k] = worst
		}
	}
	if b.target == "rank" {
		rankGauss(y)
	}
	mean, sd := meanSD(y)
	if sd == 0 {
		sd = 1
	}
	best := math.Inf(1)
	for k := range y {
		y[k] = (y[k] - mean) / sd
		best = min(best, y[k])
	}
	X := make([][]float64, len(obs))
	for k, i := range obs {
		X[k] = b.features(i, nil)
	}
	// With a liar other than the believer the lies are among obs: the
	// hyperparameters are not fitted then (withLiars fitted them first).
	if !(b.lying && b.liar != "believer") && (b.hyp.ls == nil || b.hyperDue()) {
		b.lastFit = b.t.nTold
		// Fit on the best and a spread of the rest: obs is sorted best
		// first when it was subsampled, else in the order told.
		hx, hy := X, y
		if len(X) > hyperPoints {
			hx, hy = nil, nil
			for k := 0; k < hyperPoints; k++ {
				j := k * len(X) / hyperPoints
				hx, hy = append(hx, X[j]), append(hy, y[j])
			}
		}
		passes := b.ard
		if b.fit == "gradient" {
			passes = 0
		}
		hyp, ok := fitHyper(hx, hy, passes)
		if !ok {
			return nil, 0, false
		}
		if b.fit != "grid" {
			hyp = refineHyper(hx, hy, hyp)
		}
		b.hyp = hyp
	}
	g, ok := fitGP(X, y, b.hyp.inv(), b.hyp.noise)
	if ok && b.lying && b.liar == "believer" {
		// The kriging believer: each outstanding configuration is told the
		// model's mean there, so the mean stays and only the uncertainty
		// about it shrinks (gp.believe: no refit).
		P := make([][]float64, len(b.outstanding))
		for k, i := range b.outstanding {
			P[k] = b.features(i, nil)
		}
		g = g.believe(P)
	}
	return g, best, ok
}

// features gives configuration i's GP inputs: its coordinates
// (featureMap) and, for transfer, its feature on each prior device.
func (b *bayesOpt) features(i int, dst []float64) []float64 {
	dst = b.fm.at(i, dst)
	for _, p := range b.prior {
		dst = append(dst, p[i])
	}
	return dst
}

// maximiseAcquisition picks the fresh candidate of best acquisition value:
// largest expected improvement, or lowest confidence bound.
func (b *bayesOpt) maximiseAcquisition() (int, bool) {
	g, fbest, ok := b.model()
	if !ok {
		return b.t.randomFresh()
	}
	c := b.newCandidates()
	b.addNeighbours(c, b.bestTold(b.nTop))
	for k, added := 0, 0; k < len(b.priorOrder) && added < b.priorCands; k++ {
		if i := b.priorOrder[k]; !b.t.proposed[i] && !c.seen[i] {
			c.add(i)
			added++
		}
	}
	for k, added := 0, 0; k < b.nCand*4 && added < b.nCand && len(c.seen) < b.t.n-b.t.nProposed; k++ {
		if i, ok := b.t.randomFresh(); ok && !c.seen[i] {
			c.add(i)
			added++
		}
	}
	cands := c.list
	if len(cands) == 0 {
		return b.t.randomFresh()
	}
	scratch := make([]float64, len(g.X))
	if b.feas != nil {
		scratch = make([]float64, max(len(g.X), len(b.feas.X)))
	}
	x := make([]float64, 0, len(b.fm.used)+len(b.prior))
	bestI, bestEI := cands[0], math.Inf(-1)
	maxSD := g.maxSD()
	for _, i := range cands {
		x = b.features(i, x)
		mu := g.meanK(x, scratch)
		// Under the bound, a candidate whose bound at the prior's
		// deviation cannot beat the best so far is passed over before
		// the O(m²) solve: exactly the choice a full scan makes, since
		// sd ≤ maxSD and rounding is monotone.
		if b.acq == "lcb" && -(mu-b.kappa*maxSD) <= bestEI {
			continue
		}
		sd := g.sdK(scratch)
		var ei float64
		if b.acq == "lcb" {
			// A bound has no scale to weigh by a probability: the
			// feasibility model vetoes a candidate more likely to fail
			// than to run instead.
			if b.feas != nil && b.feasible(x, scratch) < 0.5 {
				continue
			}
			ei = -(mu - b.kappa*sd)
		} else {
			ei = expectedImprovement(fbest-b.xi, mu, sd)
			if b.feas != nil {
				ei *= b.feasible(x, scratch)
			}
		}
		if ei > bestEI {
			bestI, bestEI = i, ei
		}
	}
	return bestI, true
}

// feasibilityNoise is the noise variance of the feasibility model: validity
// is a hard 0 or 1, but neighbours of a failed configuration often run.
const feasibilityNoise = 0.1

// fitFeasibility fits the feasibility model on obs (b.feas, b.pValid)
// when some of them are invalid, and returns the valid ones, which the
// performance model is then fitted on alone; with none invalid (or none
// valid) it returns obs and leaves b.feas nil. A failed compilation or
// launch is information about where the others are (Hellsten et al.,
// BaCO, CC'24: a feasibility model beside the performance model), and
// giving it the worst observed time instead (the "worst" treatment)
// bends the performance model around a cliff that is not in the times.
// Its length scales are the performance model's (last fit).
func (b *bayesOpt) fitFeasibility(obs []int) []int {
	var valid []int
	for _, i := range obs {
		if !math.IsInf(b.t.score[i], 1) {
			valid = append(valid, i)
		}
	}
	if len(valid) == len(obs) || len(valid) == 0 || b.hyp.ls == nil {
		return obs
	}
	b.pValid = float64(len(valid)) / float64(len(obs))
	X := make([][]float64, len(obs))
	y := make([]float64, len(obs))
	for k, i := range obs {
		X[k] = b.features(i, nil)
		y[k] = -b.pValid
		if !math.IsInf(b.t.score[i], 1) {
			y[k] = 1 - b.pValid
		}
	}
	if g, ok := fitGP(X, y, b.hyp.inv(), feasibilityNoise); ok {
		b.feas = g
		return valid
	}
	return obs
}

// feasible is the feasibility model's probability that the configuration
// of features x is valid, kept in [0.01, 1] so that expected improvement
// never vanishes; scratch as gp.predict's.
func (b *bayesOpt) feasible(x, scratch []float64) float64 {
	mu, _ := b.feas.predict(x, scratch[:len(b.feas.X)])
	return min(max(b.pValid+mu, 0.01), 1)
}

// localPick is the local phase under local=model: the fresh configuration
// of lowest model mean (no exploration bonus: the phase exploits what the
// global phase learnt) among the Hamming and adjacent neighbours of the
// top best configurations that ran (bestTold) and 50 uniform crossovers
// of pairs of them (the
// elite crossover of Kernel Tuner 1.4's hybrid_vndx, which on flat
// landscapes reaches optima that no single neighbour step does).
func (b *bayesOpt) localPick() (int, bool) {
	g, _, ok := b.model()
	if !ok {
		return b.t.randomFresh()
	}
	elite := b.bestTold(b.nTop)
	c := b.newCandidates()
	b.addNeighbours(c, elite)
	for k := 0; k < 50 && len(elite) > 1; k++ {
		p, q := b.t.sp.Indexes(elite[b.t.rng.IntN(len(elite))]), b.t.sp.Indexes(elite[b.t.rng.IntN(len(elite))])
		child := make([]int32, len(p))
		for d := range p {
			child[d] = p[d]
			if b.t.rng.IntN(2) == 1 {
				child[d] = q[d]
			}
		}
		if i, ok := b.t.sp.IndexOf(child); ok {
			c.add(i)
		}
	}
	cands := c.list
	if len(cands) == 0 {
		return b.t.randomFresh()
	}
	scratch := make([]float64, len(g.X))
	x := make([]float64, 0, len(b.fm.used))
	bestI, bestMu := cands[0], math.Inf(1)
	for _, i := range cands {
		x = b.features(i, x)
		if mu := g.meanK(x, scratch); mu < bestMu {
			bestI, bestMu = i, mu
		}
	}
	return bestI, true
}

// rankGauss replaces y by the normal quantiles of its ranks (ties share
// the mean rank): a Gaussian copula of the targets.
func rankGauss(y []float64) {
	idx := make([]int, len(y))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpScore(y[a], y[b]) })
	r := make([]float64, len(y))
	for k := 0; k < len(idx); {
		j := k
		for j+1 < len(idx) && y[idx[j+1]] == y[idx[k]] {
			j++
		}
		for m := k; m <= j; m++ {
			r[idx[m]] = float64(k+j)/2 + 0.5
		}
		k = j + 1
	}
	n := float64(len(y))
	for k := range y {
		y[k] = math.Sqrt2 * math.Erfinv(2*r[k]/n-1)
	}
}
