package benchmark

import (
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/strategy"
)

// Batch is how many configurations Run asks a strategy for at a time
// (strategies may return fewer); fixed, so that results do not depend on
// the machine.
const Batch = 8

// Run runs strategy name once on p with the seed for evals evaluations
// and gives its best-so-far curve: curve[k] is the best valid time (ms)
// after k+1 evaluations, +Inf while none was valid. The strategy is told
// the budget (strategy.Options.Budget: evals, at most the size of the
// space, as the tuner tells it), so that strategies that plan over their
// budget (simulated annealing's cooling schedule) behave as in a real run
// of that length. When the strategy stops early (the space is exhausted)
// the curve stays at its last value. Every proposal is checked: a
// configuration out of range or proposed twice is an error naming the
// strategy and the seed. A transfer run whose priors include p's own
// cache is an error (CheckPriors).
func Run(p *Problem, name string, params map[string]any, seed uint64, evals int) ([]float64, error) {
	return RunParallel(p, name, params, seed, evals, 1)
}

// RunParallel is Run as a tuning run over gpus GPUs measures: the
// strategy is told the batch (strategy.Options.Batch) and up to gpus
// configurations are outstanding, each told when it is the oldest and a
// new one is wanted or the strategy proposes none (the replay charges no
// time, so results come back in the order asked: first in, first out).
// gpus ≤ 1 is Run: every proposal told at once. Errors as Run's.
func RunParallel(p *Problem, name string, params map[string]any, seed uint64, evals, gpus int) ([]float64, error) {
	var priors []strategy.PriorTimes
	if name == TransferName {
		if err := CheckPriors(p, priorList(params["prior"])); err != nil {
			return nil, err
		}
		var err error
		if priors, err = loadPriors(p.Space, params["prior"]); err != nil {
			return nil, err
		}
	}
	// The objectives a cache can give: time, and energy where recorded
	// (a multi-objective strategy searches both; the curve is of time).
	s, err := strategy.New(name, strategy.Options{Space: p.Space, Seed: seed, Params: params, Budget: min(evals, p.Space.Len()), Priors: priors, Objectives: 2, Batch: gpus})
	if err != nil {
		return nil, err
	}
	curve := make([]float64, evals)
	seen := make([]bool, p.Space.Len())
	best := math.Inf(1)
	k := 0
	// tell gives configuration i's recorded outcome to the strategy.
	tell := func(i int) {
		t := p.Times[i]
		r := strategy.Evaluation{Index: i, Score: math.Inf(1), Objectives: []float64{math.Inf(1), math.Inf(1)}}
		if !math.IsNaN(t) {
			r.Valid, r.Score = true, t
			r.Observations = map[string]float64{"time": t}
			r.Objectives[0] = t
			if e := p.Energy[i]; !math.IsNaN(e) {
				r.Observations["energy"] = e
				r.Objectives[1] = e
			}
			best = min(best, t)
		}
		s.Tell(r)
		curve[k] = best
		k++
	}
	if gpus > 1 {
		var outstanding []int
		asked := 0
		for k < evals {
			if len(outstanding) < gpus && asked < evals {
				ids := s.Next(min(gpus-len(outstanding), evals-asked))
				for _, i := range ids {
					if i < 0 || i >= len(seen) || seen[i] {
						return nil, fmt.Errorf("strategy %s (seed %d) proposed configuration %d twice or out of range", name, seed, i)
					}
					seen[i] = true
				}
				if len(ids) > 0 {
					outstanding = append(outstanding, ids...)
					asked += len(ids)
					continue
				}
			}
			if len(outstanding) == 0 {
				break
			}
			tell(outstanding[0])
			outstanding = outstanding[1:]
		}
		for ; k < evals; k++ {
			curve[k] = best
		}
		return curve, nil
	}
	for k < evals {
		ids := s.Next(min(Batch, evals-k))
		if len(ids) == 0 {
			break
		}
		if len(ids) > evals-k {
			return nil, fmt.Errorf("strategy %s (seed %d) proposed %d configurations when asked for %d", name, seed, len(ids), evals-k)
		}
		for _, i := range ids {
			if i < 0 || i >= len(seen) || seen[i] {
				return nil, fmt.Errorf("strategy %s (seed %d) proposed configuration %d twice or out of range", name, seed, i)
			}
			seen[i] = true
		}
		for _, i := range ids {
			tell(i)
		}
	}
	for ; k < evals; k++ {
		curve[k] = best
	}
	return curve, nil
}

// Result is the outcome of one strategy on one problem over many runs.
type Result struct {
	Problem  string    `json:"problem"`
	Strategy string    `json:"strategy"`
	Runs     int       `json:"runs"` // seeds; each seed is run once per budget and once for the score
	Budgets  []int     `json:"budgets"`
	Fraction []float64 `json:"fraction_of_optimum"` // per budget: mean over runs of optimum/best (0 with none valid)
	Success  []float64 `json:"success_rate"`        // per budget: fraction of runs that found the optimum
	// Random is the exact random search's fraction of the optimum per
	// budget (Problem.RandomFraction; the mean row: the mean over
	// caches), and Gap the share of its gap that Fraction closes
	// (GapClosed; NaN where random search reaches the optimum; the mean
	// row: the mean over the caches where it is defined).
	Random []float64 `json:"random_fraction"`
	Gap    []float64 `json:"gap_closed"`
	Score  float64   `json:"score"` // methodology performance score (NaN: undefined)
	// Reach is the median over runs of the evaluations the longest run
	// (told the largest budget) took to find a configuration within
	// ReachFraction of the optimum (optimum/best >= 0.95); +Inf where
	// more than half of the runs did not within that budget. Reached is
	// the fraction of runs that did.
	Reach   float64 `json:"evals_to_95"`
	Reached float64 `json:"reached_95"`
	// ReachWithin is the longest run's budget (evaluations): the largest
	// of the budgets and the score window's end.
	ReachWithin int    `json:"reach_within"`
	Window      [2]int `json:"score_window"` // evaluations [start, end) of the score
}

// ReachFraction is the fraction of the optimum Result.Reach counts the
// evaluations to (issue 32: "evaluations to reach 95 % of the optimum").
const ReachFraction = 0.95

// Config is one comparison.
type Config struct {
	Problems   []*Problem
	Strategies []string
	Params     map[string]map[string]any // hyperparameters by strategy name (may be nil)
	Seeds      int                       // runs per strategy, problem and budget; run k has seed Seed(problem, strategy, k)
	Budgets    []int                     // evaluations, ascending
	Workers    int                       // parallel runs (0: runtime.NumCPU())
	// GPUs replays each run as a tuning run over that many GPUs
	// (RunParallel); 0 or 1: Run.
	GPUs int
	// Priors are, by problem name, the prior caches of the transfer
	// strategy (TransferPriors); its "prior" hyperparameter. Every
	// transfer run is checked by CheckPriors.
	Priors map[string][]string
	// Progress, when set, is called after each run with the runs and the
	// evaluations replayed so far and in all (from one goroutine at a
	// time).
	Progress func(runs, totalRuns int, evals, totalEvals int64)
	// NoScore leaves out the run per seed told the end of the score
	// window, which on problems with a late window (thousands of
	// evaluations) costs more than all the budgets together; Score is
	// then NaN.
	NoScore bool
}

// Seed is the seed of run index (0-based) of strategy on the problem
// named problem: the FNV-1a hash of "problem\x00strategy\x00index", put
// through SplitMix64's finaliser so that neighbouring indexes give
// unrelated seeds. It depends on the problem's name (the cache file's base
// name), not its path, so results are reproducible wherever the caches
// live; and the runs on different caches (or of different strategies) do
// not share random streams, which a common seed sequence 1..N would make
// them do. The runs of one index at different budgets share the seed, so
// that budgets differ in the budget only.
func Seed(problem, strategy string, index int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", problem, strategy, index)
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// TransferName is the strategy that learns from prior caches.
const TransferName = "transfer"

// params gives the hyperparameters of strategy name on p: Params[name],
// with the priors of p for transfer (an explicit "prior" is kept), checked
// by CheckPriors.
func (c Config) params(p *Problem, name string) (map[string]any, error) {
	if name != TransferName {
		return c.Params[name], nil
	}
	out := map[string]any{}
	for k, v := range c.Params[name] {
		out[k] = v
	}
	if _, ok := out["prior"]; !ok {
		out["prior"] = c.Priors[p.Name]
	}
	if err := CheckPriors(p, priorList(out["prior"])); err != nil {
		return nil, err
	}
	return out, nil
}

// priorList reads a "prior" hyperparameter as the transfer strategy
// does: a list of paths or one comma-separated string.
func priorList(v any) []string {
	var priors []string
	switch x := v.(type) {
	case []string:
		priors = x
	case string:
		for _, s := range strings.Split(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				priors = append(priors, s)
			}
		}
	case []any:
		for _, e := range x {
			s, _ := e.(string)
			priors = append(priors, s)
		}
	}
	return priors
}

type priorKey struct {
	sp   *space.Space
	path string
}

// priorTimes memoises the prior caches' times: a benchmark runs many seeds
// on one space with the same priors.
var priorTimes sync.Map // priorKey -> []float64

// loadPriors loads the prior caches that transfer's prior hyperparameter
// v names as sp's times (strategy.LoadPriors, cache.LoadSpaceTimes),
// each cache once per space.
func loadPriors(sp *space.Space, v any) ([]strategy.PriorTimes, error) {
	return strategy.LoadPriors(v, func(path string) ([]float64, error) {
		if t, ok := priorTimes.Load(priorKey{sp, path}); ok {
			return t.([]float64), nil
		}
		t, err := cache.LoadSpaceTimes(path, sp)
		if err != nil {
			return nil, err
		}
		priorTimes.Store(priorKey{sp, path}, t)
		return t, nil
	})
}

// Evaluate runs every strategy Seeds times on every problem, as separate
// runs per budget: for each budget b, each seed's run is told b
// (strategy.Options.Budget) and its best after b evaluations gives the
// fraction of the optimum and the success rate at b; one more run per seed,
// told the end of the score window (the evaluations the score needs),
// gives the curve the score averages over (a budget equal to the window
// end shares that run). Reading small budgets
// off one long run would misjudge strategies that plan over their budget.
// Run k of a strategy on a problem has seed Seed(problem name, strategy,
// k) at every budget. Runs go to Workers goroutines, longest first; the
// results are in problem-major, strategy-minor order and do not depend on
// Workers. Errors: no seed or budget, budgets not ascending, a run's error
// (naming the problem).
func Evaluate(c Config) ([]Result, error) {
	if c.Seeds <= 0 || len(c.Budgets) == 0 {
		return nil, fmt.Errorf("benchmark: need at least one seed and one budget")
	}
	for i, b := range c.Budgets {
		if b <= 0 || i > 0 && b <= c.Budgets[i-1] {
			return nil, fmt.Errorf("benchmark: budgets %v: want positive, ascending budgets", c.Budgets)
		}
	}
	workers := c.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	runs := make([][]int, len(c.Problems))
	scoreRun := make([]int, len(c.Problems)) // index into runs[p]
	for pi, p := range c.Problems {
		if c.NoScore {
			runs[pi], scoreRun[pi] = slices.Clone(c.Budgets), -1
			continue
		}
		runs[pi] = RunBudgets(p, c.Budgets)
		_, end := Window(p.Sorted)
		scoreRun[pi] = slices.Index(runs[pi], end)
	}
	params := make([][]map[string]any, len(c.Problems))
	for pi, p := range c.Problems {
		params[pi] = make([]map[string]any, len(c.Strategies))
		for si, name := range c.Strategies {
			hp, err := c.params(p, name)
			if err != nil {
				return nil, err
			}
			params[pi][si] = hp
		}
	}
	// finals[p][s][seed][b] is the best after runs[p][b] evaluations of
	// the run told runs[p][b]; curves[p][s][seed] the score run's curve,
	// longest[p][s][seed] the longest run's.
	finals := make([][][][]float64, len(c.Problems))
	curves := make([][][][]float64, len(c.Problems))
	longest := make([][][][]float64, len(c.Problems))
	type job struct{ p, s, seed, b int }
	var jobs []job
	for pi := range c.Problems {
		finals[pi] = make([][][]float64, len(c.Strategies))
		curves[pi] = make([][][]float64, len(c.Strategies))
		longest[pi] = make([][][]float64, len(c.Strategies))
		for si := range c.Strategies {
			finals[pi][si] = make([][]float64, c.Seeds)
			curves[pi][si] = make([][]float64, c.Seeds)
			longest[pi][si] = make([][]float64, c.Seeds)
			for seed := 0; seed < c.Seeds; seed++ {
				finals[pi][si][seed] = make([]float64, len(runs[pi]))
				for bi := range runs[pi] {
					jobs = append(jobs, job{pi, si, seed, bi})
				}
			}
		}
	}
	// Longest first, so that no long run starts last and leaves the other
	// workers idle.
	slices.SortStableFunc(jobs, func(a, b job) int { return runs[b.p][b.b] - runs[a.p][a.b] })
	var totalEvals, doneEvals int64
	for _, j := range jobs {
		totalEvals += int64(runs[j.p][j.b])
	}
	doneRuns := 0
	ch := make(chan job)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				p, name := c.Problems[j.p], c.Strategies[j.s]
				evals := runs[j.p][j.b]
				curve, err := RunParallel(p, name, params[j.p][j.s], Seed(p.Name, name, j.seed), evals, c.GPUs)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", p.Name, err)
					}
				} else {
					finals[j.p][j.s][j.seed][j.b] = curve[evals-1]
					if j.b == scoreRun[j.p] {
						curves[j.p][j.s][j.seed] = curve
					}
					if j.b == len(runs[j.p])-1 {
						longest[j.p][j.s][j.seed] = curve
					}
				}
				doneRuns++
				doneEvals += int64(evals)
				if c.Progress != nil {
					c.Progress(doneRuns, len(jobs), doneEvals, totalEvals)
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	var out []Result
	for pi, p := range c.Problems {
		for si, name := range c.Strategies {
			bests := make([][]float64, c.Seeds) // per seed, per budget of c.Budgets
			for seed := range bests {
				for _, b := range c.Budgets {
					bests[seed] = append(bests[seed], finals[pi][si][seed][slices.Index(runs[pi], b)])
				}
			}
			r := summarise(p, name, bests, curves[pi][si], c.Budgets)
			r.Reach, r.Reached = reach(p.Optimum(), longest[pi][si])
			r.ReachWithin = runs[pi][len(runs[pi])-1]
			out = append(out, r)
		}
	}
	return out, nil
}

// RunBudgets are the budgets Evaluate runs each seed of a strategy with on
// p: budgets and the end of p's score window, ascending, without repeats.
func RunBudgets(p *Problem, budgets []int) []int {
	_, end := Window(p.Sorted)
	out := slices.Clone(budgets)
	if !slices.Contains(out, end) {
		out = append(out, end)
		slices.Sort(out)
	}
	return out
}

// summarise turns the runs into a Result: bests[seed][k] is the best time
// of the run told budgets[k], curves[seed] the score run's curve.
func summarise(p *Problem, name string, bests, curves [][]float64, budgets []int) Result {
	opt := p.Optimum()
	r := Result{Problem: p.Name, Strategy: name, Runs: len(bests), Budgets: budgets}
	for k := range budgets {
		frac, succ := 0.0, 0.0
		for _, b := range bests {
			best := b[k]
			if !math.IsInf(best, 1) {
				frac += opt / best
			}
			if best <= opt {
				succ++
			}
		}
		r.Fraction = append(r.Fraction, frac/float64(len(bests)))
		r.Success = append(r.Success, succ/float64(len(bests)))
		fr := p.RandomFraction(budgets[k])
		r.Random = append(r.Random, fr)
		r.Gap = append(r.Gap, GapClosed(r.Fraction[k], fr))
	}
	s, e := Window(p.Sorted)
	r.Window = [2]int{s, e}
	r.Score = math.NaN()
	if curves[0] == nil {
		return r // Config.NoScore
	}
	// Mean curve; a run with nothing valid yet counts as the worst valid
	// value.
	n := len(curves[0])
	mean := make([]float64, n)
	worst := p.Sorted[len(p.Sorted)-1]
	for _, c := range curves {
		for k, v := range c {
			if math.IsInf(v, 1) {
				v = worst
			}
			mean[k] += v / float64(len(curves))
		}
	}
	r.Score = Score(p.Sorted, mean)
	return r
}

// reach is Result.Reach and Result.Reached of runs whose best-so-far
// curves (ms after each evaluation, +Inf while nothing valid) are curves,
// on a problem of optimum opt (ms).
func reach(opt float64, curves [][]float64) (median, reached float64) {
	evals := make([]float64, len(curves))
	for i, c := range curves {
		evals[i] = math.Inf(1)
		for k, v := range c {
			if opt/v >= ReachFraction {
				evals[i] = float64(k + 1)
				reached++
				break
			}
		}
	}
	slices.Sort(evals)
	n := len(evals)
	if n == 0 {
		return math.NaN(), 0
	}
	// The median of a sample with censored values (+Inf) is defined as
	// long as fewer than half are censored; the middle pair's mean
	// otherwise stays +Inf.
	if n%2 == 1 {
		median = evals[n/2]
	} else {
		median = (evals[n/2-1] + evals[n/2]) / 2
	}
	return median, reached / float64(n)
}

// Mean averages results per strategy over problems (in the order the
// strategies first appear); Problem is "mean".
func Mean(rs []Result) []Result {
	var order []string
	acc := map[string]*Result{}
	count := map[string]int{}
	scoreCount := map[string]int{}
	gapCount := map[string][]int{}
	for _, r := range rs {
		a, ok := acc[r.Strategy]
		if !ok {
			n := len(r.Budgets)
			a = &Result{Problem: "mean", Strategy: r.Strategy, Budgets: r.Budgets,
				Fraction: make([]float64, n), Success: make([]float64, n), Random: make([]float64, n), Gap: make([]float64, n)}
			acc[r.Strategy] = a
			order = append(order, r.Strategy)
			gapCount[r.Strategy] = make([]int, n)
		}
		count[r.Strategy]++
		a.Runs += r.Runs
		a.Reached += r.Reached
		for k := range r.Budgets {
			a.Fraction[k] += r.Fraction[k]
			a.Success[k] += r.Success[k]
			if k < len(r.Random) {
				a.Random[k] += r.Random[k]
			}
			if k < len(r.Gap) && !math.IsNaN(r.Gap[k]) {
				a.Gap[k] += r.Gap[k]
				gapCount[r.Strategy][k]++
			}
		}
		if !math.IsNaN(r.Score) {
			a.Score += r.Score
			scoreCount[r.Strategy]++
		}
	}
	var out []Result
	for _, s := range order {
		a := acc[s]
		for k := range a.Fraction {
			a.Fraction[k] /= float64(count[s])
			a.Success[k] /= float64(count[s])
			a.Random[k] /= float64(count[s])
			if n := gapCount[s][k]; n > 0 {
				a.Gap[k] /= float64(n)
			} else {
				a.Gap[k] = math.NaN()
			}
		}
		// Evaluations to 95 % are counts on spaces of different sizes:
		// their mean over caches says nothing, so the mean row has none.
		a.Reach = math.NaN()
		a.Reached /= float64(count[s])
		if scoreCount[s] > 0 {
			a.Score /= float64(scoreCount[s])
		} else {
			a.Score = math.NaN()
		}
		out = append(out, *a)
	}
	return out
}

// Family is the kernel a problem's cache was recorded for: its name
// without the last "_" field (convolution_milo_A100 -> convolution_milo),
// the whole name where it has none.
func Family(problem string) string {
	if i := strings.LastIndex(problem, "_"); i > 0 {
		return problem[:i]
	}
	return problem
}

// FamilyMeans are Mean's rows per kernel family (Family) when rs covers
// more than one, each named "mean FAMILY", families in order of first
// appearance: issue 35 asks that no family fall below a share of random
// search's gap, which a mean over all caches can hide. Nil for one
// family.
func FamilyMeans(rs []Result) []Result {
	var fams []string
	by := map[string][]Result{}
	for _, r := range rs {
		f := Family(r.Problem)
		if _, ok := by[f]; !ok {
			fams = append(fams, f)
		}
		by[f] = append(by[f], r)
	}
	if len(fams) < 2 {
		return nil
	}
	var out []Result
	for _, f := range fams {
		for _, m := range Mean(by[f]) {
			m.Problem = "mean " + f
			out = append(out, m)
		}
	}
	return out
}
