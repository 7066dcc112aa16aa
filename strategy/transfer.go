package strategy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

func init() { Register("transfer", Needs{Priors: true}, newTransfer) }

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
// The prior tuning results are data, Options.Priors (required): the
// times of the same kernel on other GPUs, one PriorTimes per prior device,
// which the caller loads (from Kernel Tuner caches: cache.LoadSpaceTimes).
//
// Hyperparameters: those of bayes_opt (but initial_samples default 5,
// acquisition "ei", target "log" at every budget, stall default 60), and
//   - prior: where the callers load Options.Priors from, Kernel Tuner
//     cache files (.json or .json.gz) of the same kernel on other GPUs: a
//     list of paths or one string of paths separated by commas
//     (PriorPaths). Their tunable parameters must include every parameter
//     of the space; configurations of the space a cache lacks count as
//     failed there. "projection" (or "projection:ID", a GPU of the device
//     database) is the projected times on the run's GPU (or ID) instead
//     (the tuner's Config.Provide, model.Project over the GPU's profile
//     in the results database, each configuration's work emulated from
//     the PTX a run kept there, else the spec's declared work): a run
//     that starts from the configurations projected best. With
//     initial_samples=8 random_initial=0 its first 8 are the 8 projected
//     fastest: on an H100, within 2 % of the optimum on 6 of 7 kernels
//     (BENCHMARKS.md, seed 000). "database" is the kernel's
//     results on every other GPU of the run's results database
//     (tuner.DatabasePriors: tune, replay and import runs of the same
//     spec, each GPU from MinPriorValid valid configurations on); gtune
//     tune uses it by default where it finds such a GPU (Default).
//   - prior_candidates: configurations of best mean prior rank in each
//     candidate set (default 200)
//   - random_initial: uniformly sampled configurations in the initial
//     design (default 3)
func newTransfer(o Options) (Strategy, error) {
	params := map[string]any{}
	priorCands := 200
	h, err := newHyper("transfer", o.Params, "initial_samples", "candidates", "top", "xi", "max_points", "bo_evals", "refit", "stall", "scaling", "ard", "design", "acquisition", "kappa", "target", "liar", "reshape", "prior", "prior_candidates", "random_initial")
	if err != nil {
		return nil, err
	}
	for k, v := range o.Params {
		switch k {
		case "prior":
			// Loaded by the caller into o.Priors; only its form is
			// checked here.
			if _, err = PriorPaths(v); err != nil {
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
	if len(o.Priors) == 0 {
		return nil, errorf("transfer: hyperparameter prior is required: Kernel Tuner cache files of the same kernel on other GPUs")
	}
	if _, ok := params["initial_samples"]; !ok {
		params["initial_samples"] = 5
	}
	if _, ok := params["acquisition"]; !ok {
		// With priors the model knows where to look: expected
		// improvement (exploiting) closes 0.82 of random search's gap
		// at 25 evaluations, bayes_opt's exploring lower confidence
		// bound 0.70 (issue 35, 50 seeds on the hub's caches).
		params["acquisition"] = "ei"
	}
	if _, ok := params["target"]; !ok {
		// Ranks help bayes_opt alone at small budgets, not with
		// priors: with the other GPUs' results of 100-evaluation runs
		// the gap closed at 25 / 50 evaluations is 0.744 / 0.766 on
		// ranks and 0.777 / 0.822 on logarithms (100 seeds).
		params["target"] = "log"
	}
	if _, ok := params["stall"]; !ok {
		// The neighbourhood of a prior device's optimum can be a local
		// optimum here: let the model look further before handing over.
		params["stall"] = 60
	}
	s, err := newBayesOpt(Options{Space: o.Space, Seed: o.Seed, Params: params, Budget: o.Budget, Batch: o.Batch})
	if err != nil {
		return nil, fmt.Errorf("%s", strings.Replace(err.Error(), "bayes_opt", "transfer", 1))
	}
	b := s.(*bayesOpt)
	b.name = "transfer"
	b.priorCands = priorCands
	b.nRandomInit = nRandom
	for _, p := range o.Priors {
		if len(p.TimesMs) != o.Space.Len() {
			return nil, errorf("transfer: prior %s has %d times for a search space of %d configurations", p.Source, len(p.TimesMs), o.Space.Len())
		}
		b.prior = append(b.prior, priorFeature(p.TimesMs))
	}
	b.priorOrder = meanRankOrder(b.prior)
	return b, nil
}

// PriorTimes are the tuning results of the kernel on one prior device
// (transfer): its time (ms) of each configuration of the search space,
// by space index (TimesMs has Space.Len() elements), NaN where the
// configuration failed, has no positive time or is missing there.
type PriorTimes struct {
	Source  string    // where the times come from, e.g. the cache file's path
	TimesMs []float64 // per space index, ms; NaN: failed or missing
}

// LoadPriors makes transfer's Options.Priors from its prior hyperparameter
// v (PriorPaths): load gives the times (ms) of the search space's
// configurations in one cache file (cache.LoadSpaceTimes over the space).
// A v of another form loads nothing (New says what is wrong with it).
// Error: the first path load fails for, with load's error.
func LoadPriors(v any, load func(path string) ([]float64, error)) ([]PriorTimes, error) {
	paths, err := PriorPaths(v)
	if err != nil {
		return nil, nil
	}
	var out []PriorTimes
	for _, path := range paths {
		t, err := load(path)
		if err != nil {
			return nil, errorf("transfer: prior %w", err)
		}
		out = append(out, PriorTimes{Source: path, TimesMs: t})
	}
	return out, nil
}

// PriorPaths reads transfer's prior hyperparameter: a list of strings or
// one comma-separated string of Kernel Tuner cache paths. Error: any
// other form.
func PriorPaths(v any) ([]string, error) {
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

// priorFeature gives each configuration its normalised log time on a
// prior device (see transfer) from its times t (ms), 1 where it failed or
// is missing.
func priorFeature(t []float64) []float64 {
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
	return f
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
