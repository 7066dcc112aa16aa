package strategy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/space"
)

func init() { Register("transfer", newTransfer) }

// newTransfer makes transfer: Bayesian optimisation seeded with tuning results of the same
// kernel on other GPUs: gtune's projection of performance across GPUs
// (Panwar, Aji, Meng, Balaji & Feng, "Online Performance Projection for
// Clusters with Heterogeneous GPUs", ../shared/papers/
// performance-projection-heterogeneous-gpus.md, which projects a kernel's
// performance from one GPU to another) applied to search: configurations
// that are fast on other GPUs are likely fast on this one, but how much
// depends on how alike the GPUs are, which the search learns as it goes.
//
// Each prior device d gives each configuration i a feature
// r_d(i) = (log t_d(i) − log t_d,min) / (log t_d,max − log t_d,min) in
// [0, 1] (1 where the configuration failed there or is missing). The
// strategy is bayes_opt (bayesopt.go) whose GP inputs are the
// configuration's coordinates plus r_d(i) for every prior device, so that
// the automatic relevance determination of the length scales weighs each
// prior device by how well it explains this device's times (a GPU of the
// same vendor and generation gets a short length scale, an unrelated one a
// long one); the candidate sets also hold the prior_candidates fresh
// configurations of best mean rank over the prior devices. The initial
// design is the best configuration of each prior device, then the
// configurations of best mean rank, initial_samples in all (at least one
// per prior device and random_initial uniform ones, so that the model
// sees how far this device departs from the priors).
//
// Hyperparameters: those of bayes_opt (but initial_samples default 5,
// stall default 60), and
//   - prior: the prior tuning results, Kernel Tuner cache files (.json or
//     .json.gz) of the same kernel on other GPUs: a list of paths or one
//     string of paths separated by commas (required). Their tunable
//     parameters must include every parameter of the space; configurations
//     of the space a cache lacks count as failed there.
//   - prior_candidates: configurations of best mean prior rank in each
//     candidate set (default 200)
//   - random_initial: uniformly sampled configurations in the initial
//     design (default 3)
func newTransfer(o Options) (Strategy, error) {
	params := map[string]any{}
	var paths []string
	priorCands := 200
	h, err := newHyper("transfer", o.Params, "initial_samples", "candidates", "top", "xi", "max_points", "bo_evals", "refit", "stall", "scaling", "ard", "design", "acquisition", "kappa", "prior", "prior_candidates", "random_initial")
	if err != nil {
		return nil, err
	}
	for k, v := range o.Params {
		switch k {
		case "prior":
			paths, err = priorPaths(v)
			if err != nil {
				return nil, err
			}
		case "prior_candidates", "random_initial":
		default:
			params[k] = v
		}
	}
	priorCands = h.int("prior_candidates", priorCands, 0, 1<<20)
	nRandom := h.int("random_initial", 3, 0, 1<<20)
	if h.err != nil {
		return nil, h.err
	}
	if len(paths) == 0 {
		return nil, errorf("transfer: hyperparameter prior is required: Kernel Tuner cache files of the same kernel on other GPUs")
	}
	if _, ok := params["initial_samples"]; !ok {
		params["initial_samples"] = 5
	}
	if _, ok := params["stall"]; !ok {
		// The neighbourhood of a prior device's optimum can be a local
		// optimum here: let the model look further before handing over.
		params["stall"] = 60
	}
	s, err := newBayesOpt(Options{Space: o.Space, Seed: o.Seed, Params: params, Budget: o.Budget})
	if err != nil {
		return nil, fmt.Errorf("%s", strings.Replace(err.Error(), "bayes_opt", "transfer", 1))
	}
	b := s.(*bayesOpt)
	b.name = "transfer"
	b.priorCands = priorCands
	b.nRandomInit = nRandom
	for _, p := range paths {
		f, err := priorFeature(o.Space, p)
		if err != nil {
			return nil, err
		}
		b.prior = append(b.prior, f)
	}
	b.priorOrder = meanRankOrder(b.prior)
	return b, nil
}

// priorPaths reads the prior hyperparameter: a list of strings or one
// comma-separated string.
func priorPaths(v any) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case string:
		for _, p := range strings.Split(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	case []string:
		out = slices.Clone(x)
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, errorf("transfer: hyperparameter prior = %v: want a list of cache file paths", v)
			}
			out = append(out, s)
		}
	default:
		return nil, errorf("transfer: hyperparameter prior = %v: want a list of cache file paths", v)
	}
	return out, nil
}

type priorKey struct {
	sp   *space.Space
	path string
}

// priorFeatures memoises priorFeature: a benchmark runs many seeds on one
// space with the same priors.
var priorFeatures sync.Map // priorKey -> []float64

// priorFeature reads a Kernel Tuner cache and gives each configuration of
// sp its normalised log time there (see transfer), 1 where it failed or is
// missing. Errors: unreadable cache, a parameter of sp the cache lacks, no
// valid time of sp's configurations in it.
func priorFeature(sp *space.Space, path string) ([]float64, error) {
	key := priorKey{sp, path}
	if f, ok := priorFeatures.Load(key); ok {
		return f.([]float64), nil
	}
	t, err := PriorTimes(sp, path)
	if err != nil {
		return nil, err
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range t {
		if !math.IsNaN(v) {
			lo, hi = min(lo, math.Log(v)), max(hi, math.Log(v))
		}
	}
	f := make([]float64, len(t))
	for i, v := range t {
		switch {
		case math.IsNaN(v):
			f[i] = 1
		case hi > lo:
			f[i] = (math.Log(v) - lo) / (hi - lo)
		}
	}
	priorFeatures.Store(key, f)
	return f, nil
}

// PriorTimes reads the Kernel Tuner cache at path and gives the time (ms)
// of each configuration of sp in it, NaN where the configuration failed,
// has no positive time or is missing. Errors: unreadable cache, a tunable
// parameter of sp the cache lacks (naming both), no valid time.
func PriorTimes(sp *space.Space, path string) ([]float64, error) {
	c, err := cache.Load(path)
	if err != nil {
		return nil, fmt.Errorf("strategy transfer: prior %w", err)
	}
	pos := map[string]int{}
	for j, n := range c.ParamNames {
		pos[n] = j
	}
	params := sp.Params()
	perm := make([]int, len(params))
	for k, par := range params {
		j, ok := pos[par.Name]
		if !ok {
			return nil, errorf("transfer: prior cache %s has no tunable parameter %q of the search space", path, par.Name)
		}
		perm[k] = j
	}
	t := make([]float64, sp.Len())
	for i := range t {
		t[i] = math.NaN()
	}
	vals := make([]any, len(params))
	valid := 0
	for _, e := range c.Entries {
		if len(e.Params) != len(c.ParamNames) || !e.Valid() || !(e.Time > 0) {
			continue
		}
		for k, j := range perm {
			vals[k] = e.Params[j]
		}
		if i, ok := sp.Lookup(cache.KeyOf(vals)); ok {
			t[i] = e.Time
			valid++
		}
	}
	if valid == 0 {
		return nil, errorf("transfer: prior cache %s has no valid time for a configuration of the search space", path)
	}
	return t, nil
}

// meanRankOrder gives the configurations sorted by their mean rank over
// the prior devices (features ranked per device, ties by index).
func meanRankOrder(prior [][]float64) []int {
	n := len(prior[0])
	mean := make([]float64, n)
	idx := make([]int, n)
	for _, f := range prior {
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return f[idx[a]] < f[idx[b]] })
		for r, i := range idx {
			mean[i] += float64(r) / float64(len(prior))
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return mean[order[a]] < mean[order[b]] })
	return order
}

// priorDesign is transfer's initial design: the best configuration of
// each prior device, then the best by mean rank, nInit in all (at least
// one per prior device), distinct.
func (b *bayesOpt) priorDesign() []int {
	var out []int
	seen := map[int]bool{}
	for _, f := range b.prior {
		best := 0
		for i, v := range f {
			if v < f[best] {
				best = i
			}
		}
		if !seen[best] {
			seen[best] = true
			out = append(out, best)
		}
	}
	for _, i := range b.t.sp.Sample(b.t.rng, min(b.nRandomInit+len(out), b.t.n)) {
		if len(out) >= len(b.prior)+b.nRandomInit {
			break
		}
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	for _, i := range b.priorOrder {
		if len(out) >= b.nInit {
			break
		}
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}
