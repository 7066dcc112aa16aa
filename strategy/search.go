package strategy

// Shared machinery of the search strategies (genetic_algorithm,
// simulated_annealing, greedy_ils, greedy_mls, dual_annealing, pso,
// diff_evo, bayes_opt, nsga2): hyperparameter parsing, the record of what
// was proposed and learnt, coordinates of configurations, repair of a
// point to the nearest configuration not yet proposed, and a first- or
// best-improvement local search.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gtune/gtune/space"
)

// hyper reads a strategy's hyperparameters. Unknown names are an error
// listing the valid ones; the first bad value is kept in err.
type hyper struct {
	strategy string
	p        map[string]any
	err      error
}

// newHyper checks that p names only the hyperparameters in known.
func newHyper(strategy string, p map[string]any, known ...string) (*hyper, error) {
	for k := range p {
		if !slices.Contains(known, k) {
			sorted := slices.Clone(known)
			sort.Strings(sorted)
			return nil, fmt.Errorf("strategy %s has no hyperparameter %q (valid: %s)", strategy, k, strings.Join(sorted, ", "))
		}
	}
	return &hyper{strategy: strategy, p: p}, nil
}

func (h *hyper) fail(name string, v any, want string) {
	if h.err == nil {
		h.err = fmt.Errorf("strategy %s: hyperparameter %s = %v: want %s", h.strategy, name, v, want)
	}
}

func (h *hyper) number(name string) (float64, any, bool) {
	v, ok := h.p[name]
	if !ok {
		return 0, nil, false
	}
	switch x := v.(type) {
	case float64:
		return x, v, true
	case float32:
		return float64(x), v, true
	case int:
		return float64(x), v, true
	case int64:
		return float64(x), v, true
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return f, v, true
		}
	}
	return math.NaN(), v, true
}

// float gives hyperparameter name (default def), which must lie in [lo, hi].
func (h *hyper) float(name string, def, lo, hi float64) float64 {
	f, raw, ok := h.number(name)
	if !ok {
		return def
	}
	if math.IsNaN(f) || f < lo || f > hi {
		h.fail(name, raw, fmt.Sprintf("a number in [%g, %g]", lo, hi))
		return def
	}
	return f
}

// int gives hyperparameter name (default def), an integer in [lo, hi].
func (h *hyper) int(name string, def, lo, hi int) int {
	f, raw, ok := h.number(name)
	if !ok {
		return def
	}
	if math.IsNaN(f) || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		h.fail(name, raw, fmt.Sprintf("an integer in [%d, %d]", lo, hi))
		return def
	}
	return int(f)
}

// choice gives hyperparameter name (default def), one of valid.
func (h *hyper) choice(name, def string, valid ...string) string {
	v, ok := h.p[name]
	if !ok {
		return def
	}
	s, isStr := v.(string)
	if !isStr || !slices.Contains(valid, s) {
		h.fail(name, v, "one of "+strings.Join(valid, ", "))
		return def
	}
	return s
}

// bool gives hyperparameter name (default def).
func (h *hyper) bool(name string, def bool) bool {
	v, ok := h.p[name]
	if !ok {
		return def
	}
	switch x := v.(type) {
	case bool:
		return x
	case string:
		if b, err := strconv.ParseBool(x); err == nil {
			return b
		}
	}
	h.fail(name, v, "true or false")
	return def
}

// neighborKinds are the values of the "neighbor" hyperparameter.
var neighborKinds = []string{"Hamming", "adjacent", "strictly-adjacent"}

// neighborFunc maps a "neighbor" hyperparameter value to the space's
// neighbourhood: Hamming (one parameter changed to any value), adjacent
// (parameters moved by at most one value index), strictly-adjacent (one
// parameter moved by one value index) — Kernel Tuner's neighbour methods.
func neighborFunc(sp *space.Space, kind string) func(int) []int {
	switch kind {
	case "adjacent":
		return func(i int) []int { return sp.Neighbors(i, space.Adjacent) }
	case "strictly-adjacent":
		return func(i int) []int { return sp.Neighbors(i, space.StrictlyAdjacent) }
	default:
		return func(i int) []int { return sp.Neighbors(i, space.Hamming) }
	}
}

// newRand is the strategies' random source; salt separates strategies.
func newRand(seed uint64, salt uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d^salt))
}

// tracker records what a strategy proposed and learnt. Scores are the
// Evaluation scores (lower is better); invalid configurations score +Inf, so
// every comparison penalises them.
type tracker struct {
	sp        *space.Space
	n         int
	score     []float64 // NaN until told
	proposed  []bool
	nProposed int
	nTold     int
	best      int // -1 until a valid result
	bestScore float64
	rng       *rand.Rand
}

func newTracker(sp *space.Space, rng *rand.Rand) *tracker {
	t := &tracker{sp: sp, n: sp.Len(), score: make([]float64, sp.Len()), proposed: make([]bool, sp.Len()), best: -1, bestScore: math.Inf(1), rng: rng}
	for i := range t.score {
		t.score[i] = math.NaN()
	}
	return t
}

// propose marks i proposed; it must not have been before.
func (t *tracker) propose(i int) {
	if t.proposed[i] {
		panic(fmt.Sprintf("strategy: configuration %d proposed twice", i))
	}
	t.proposed[i] = true
	t.nProposed++
}

// tell records a result and gives its score (+Inf when invalid). Results
// for indexes never proposed or told twice are ignored (score NaN).
func (t *tracker) tell(r Evaluation) float64 {
	if r.Index < 0 || r.Index >= t.n || !t.proposed[r.Index] || !math.IsNaN(t.score[r.Index]) {
		return math.NaN()
	}
	s := r.Score
	if !r.Valid || math.IsNaN(s) {
		s = math.Inf(1)
	}
	t.score[r.Index] = s
	t.nTold++
	if s < t.bestScore {
		t.best, t.bestScore = r.Index, s
	}
	return s
}

// known gives the score of i once told.
func (t *tracker) known(i int) (float64, bool) {
	s := t.score[i]
	return s, !math.IsNaN(s)
}

// exhausted: every configuration has been proposed.
func (t *tracker) exhausted() bool { return t.nProposed >= t.n }

// pending: results outstanding.
func (t *tracker) pending() int { return t.nProposed - t.nTold }

// randomFresh gives a uniformly random configuration not yet proposed
// (false when there is none).
func (t *tracker) randomFresh() (int, bool) {
	if t.exhausted() {
		return 0, false
	}
	if free := t.n - t.nProposed; free*8 >= t.n {
		for {
			if i := t.rng.IntN(t.n); !t.proposed[i] {
				return i, true
			}
		}
	}
	// Few left: pick the k-th free one.
	k := t.rng.IntN(t.n - t.nProposed)
	for i, p := range t.proposed {
		if !p {
			if k == 0 {
				return i, true
			}
			k--
		}
	}
	return 0, false
}

// coordinates of every configuration of a space, as value indexes (float64,
// row-major, Len()×len(Params())), built once per space.
var coordCache sync.Map // *space.Space -> []float64

func coordsOf(sp *space.Space) []float64 {
	if c, ok := coordCache.Load(sp); ok {
		return c.([]float64)
	}
	np := len(sp.Params())
	c := make([]float64, sp.Len()*np)
	for i := 0; i < sp.Len(); i++ {
		for p, j := range sp.Indexes(i) {
			c[i*np+p] = float64(j)
		}
	}
	coordCache.Store(sp, c)
	return c
}

// dims gives the number of values of each parameter.
func dims(sp *space.Space) []int {
	d := make([]int, len(sp.Params()))
	for p, par := range sp.Params() {
		d[p] = len(par.Values)
	}
	return d
}

// nearestFresh repairs a point x in value-index coordinates (one float per
// parameter, any real value) to a configuration not yet proposed: the
// rounded point when that is valid and fresh, else the fresh configuration
// nearest in Euclidean distance over value indexes (ties: lowest index).
// This is how the continuous and evolutionary methods stay inside the
// restricted space without proposing a configuration twice. False when
// every configuration has been proposed.
func (t *tracker) nearestFresh(x []float64) (int, bool) {
	sizes := dims(t.sp)
	ix := make([]int32, len(x))
	for p, v := range x {
		r := math.Round(v)
		ix[p] = int32(min(max(r, 0), float64(sizes[p]-1)))
	}
	if i, ok := t.sp.IndexOf(ix); ok && !t.proposed[i] {
		return i, true
	}
	if t.exhausted() {
		return 0, false
	}
	c := coordsOf(t.sp)
	np := len(x)
	best, bestD := -1, math.Inf(1)
	for i := 0; i < t.n; i++ {
		if t.proposed[i] {
			continue
		}
		d := 0.0
		row := c[i*np : i*np+np]
		for p, v := range row {
			e := v - x[p]
			d += e * e
			if d >= bestD {
				break
			}
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best, best >= 0
}

// point gives the value-index coordinates of configuration i.
func point(sp *space.Space, i int) []float64 {
	ix := sp.Indexes(i)
	x := make([]float64, len(ix))
	for p, j := range ix {
		x[p] = float64(j)
	}
	return x
}

// localSearch is a hill climber over a neighbourhood: first improvement
// (move to the first better neighbour, neighbours in random order) or
// best improvement (scan all neighbours, move to the best). Neighbours
// already evaluated cost nothing: their known scores are used.
type localSearch struct {
	t         *tracker
	neighbors func(int) []int
	first     bool

	cur      int
	curScore float64
	cand     []int
	pos      int
	bestC    int
	bestS    float64
	out      []int // proposed by next and not yet told, in order
}

func (l *localSearch) start(i int, s float64) {
	l.cur, l.curScore = i, s
	l.cand = l.neighbors(i)
	l.t.rng.Shuffle(len(l.cand), func(a, b int) { l.cand[a], l.cand[b] = l.cand[b], l.cand[a] })
	l.pos = 0
	l.bestC, l.bestS = -1, s
}

func (l *localSearch) consider(c int, s float64) {
	if l.first {
		if s < l.curScore {
			l.start(c, s)
		}
		return
	}
	if s < l.bestS {
		l.bestC, l.bestS = c, s
	}
}

// next gives the next neighbour to evaluate, or ok=false when there is
// none: at a local optimum (the climber then rests at cur), or, while
// waiting says so, until the results outstanding are told. A climber
// that calls it only with nothing outstanding scans one neighbour at a
// time; one that calls it again before (greedy_ils with a batch) scans
// several at once, and moves at the first of them told better.
func (l *localSearch) next() (int, bool) {
	for {
		for l.pos < len(l.cand) {
			c := l.cand[l.pos]
			l.pos++
			if s, ok := l.t.known(c); ok {
				l.consider(c, s)
				continue
			}
			if l.t.proposed[c] {
				continue
			}
			l.out = append(l.out, c)
			return c, true
		}
		if len(l.out) > 0 {
			return -1, false // the rest of the neighbourhood is measuring
		}
		if !l.first && l.bestC >= 0 && l.bestS < l.curScore {
			l.start(l.bestC, l.bestS)
			continue
		}
		return -1, false
	}
}

// told passes a result to the climber when it is one it waits for.
func (l *localSearch) told(i int, s float64) {
	if k := slices.Index(l.out, i); k >= 0 {
		l.out = slices.Delete(l.out, k, k+1)
		l.consider(i, s)
	}
}

// waiting says whether results of neighbours next gave are outstanding.
func (l *localSearch) waiting() bool { return len(l.out) > 0 }

func errorf(format string, a ...any) error { return fmt.Errorf("strategy "+format, a...) }

// popDriver hands out the configurations of one generation at a time for
// the population methods: advance builds the next generation (adding its
// configurations with add) once every result of the current one is in.
type popDriver struct {
	t       *tracker
	queue   []int
	advance func()
}

// add proposes a configuration of the generation being built: i itself
// when fresh, else the nearest fresh configuration. It gives the index
// used, or -1 when the space is exhausted.
func (d *popDriver) add(i int) int {
	if d.t.proposed[i] {
		j, ok := d.t.nearestFresh(point(d.t.sp, i))
		if !ok {
			return -1
		}
		i = j
	}
	d.t.propose(i)
	d.queue = append(d.queue, i)
	return i
}

// addPoint proposes the fresh configuration nearest to x (value-index
// coordinates); -1 when the space is exhausted.
func (d *popDriver) addPoint(x []float64) int {
	i, ok := d.t.nearestFresh(x)
	if !ok {
		return -1
	}
	d.t.propose(i)
	d.queue = append(d.queue, i)
	return i
}

func (d *popDriver) next(n int) []int {
	if n <= 0 {
		return nil
	}
	for len(d.queue) == 0 {
		if d.t.pending() > 0 || d.t.exhausted() {
			return nil
		}
		d.advance()
	}
	k := min(n, len(d.queue))
	out := slices.Clone(d.queue[:k])
	d.queue = d.queue[k:]
	return out
}

// initial gives k distinct configurations spread over the space (a Latin
// hypercube sample of the value indexes, space.LatinHypercube).
func initial(t *tracker, k int) []int {
	return t.sp.LatinHypercube(t.rng, min(k, t.n))
}

// rankWeighted picks an index into a population sorted best first, with
// probability proportional to (len - rank): Kernel Tuner's
// weighted_choice for parent selection.
func rankWeighted(r *rand.Rand, n int) int {
	total := n * (n + 1) / 2
	u := r.IntN(total)
	for i := 0; i < n; i++ {
		u -= n - i
		if u < 0 {
			return i
		}
	}
	return n - 1
}
