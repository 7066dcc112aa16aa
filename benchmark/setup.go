package benchmark

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/strategy"
)

// DefaultHub is where the shared Kernel Tuner benchmark caches live,
// relative to the repository root (the working directory of a run from
// there).
const DefaultHub = "../shared/datasets/benchmark_hub"

// LoadProblems loads each cache with its spec (specPath, else the spec
// FindSpec finds in specDirs), and where strategies include transfer,
// each problem's priors by name: the other caches of the same spec in
// priorPool (default: DefaultCaches and caches). Errors are bad input
// (badinput).
func LoadProblems(caches []string, specPath string, specDirs, strategies, priorPool []string) ([]*Problem, map[string][]string, error) {
	var problems []*Problem
	for _, c := range caches {
		sp := specPath
		if sp == "" {
			var err error
			if sp, err = FindSpec(c, specDirs); err != nil {
				return nil, nil, badinput.Wrap(err)
			}
		}
		p, err := LoadProblem(c, sp)
		if err != nil {
			return nil, nil, badinput.Wrap(err)
		}
		problems = append(problems, p)
	}
	if !slices.Contains(strategies, TransferName) {
		return problems, nil, nil
	}
	pool := priorPool
	if len(pool) == 0 {
		pool = append(DefaultCaches(), caches...)
	}
	priors := map[string][]string{}
	for _, p := range problems {
		ps, err := TransferPriors(p, pool, specDirs)
		if err != nil {
			return nil, nil, badinput.Wrap(err)
		}
		priors[p.Name] = ps
	}
	return problems, priors, nil
}

// DefaultCaches are the Kernel Tuner caches of DefaultHub (its *_T4
// files, the same runs in T4 form, left out); none where it is absent.
func DefaultCaches() []string {
	ms, _ := filepath.Glob(filepath.Join(DefaultHub, "*.json.gz"))
	var out []string
	for _, m := range ms {
		// *_T4 files hold the same runs as the caches, in T4 form.
		if !strings.HasSuffix(ProblemName(m), "_T4") {
			out = append(out, m)
		}
	}
	return out
}

// ParseBudgets reads --budgets: ascending positive evaluation counts
// separated by commas, each at most space.DefaultMaxConfigurations.
// Errors are bad input (badinput).
func ParseBudgets(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b <= 0 {
			return nil, badinput.New("--budgets %q: want positive integers separated by commas", s)
		}
		if b > space.DefaultMaxConfigurations {
			return nil, badinput.New("--budgets %q: %d is more evaluations than a search space may hold (%d)", s, b, space.DefaultMaxConfigurations)
		}
		if len(out) > 0 && b <= out[len(out)-1] {
			return nil, badinput.New("--budgets %q: want ascending budgets", s)
		}
		out = append(out, b)
	}
	return out, nil
}

// ParseStrategyParams reads STRATEGY.NAME=VALUE flags into parameters
// by strategy and name; values parse as JSON numbers or booleans, else
// strings. Errors are bad input (badinput).
func ParseStrategyParams(flags []string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, kv := range flags {
		k, val, ok := strings.Cut(kv, "=")
		s, name, ok2 := strings.Cut(k, ".")
		if !ok || !ok2 || s == "" || name == "" {
			return nil, badinput.New("--strategy-param %q: want STRATEGY.NAME=VALUE", kv)
		}
		var v any
		if err := json.Unmarshal([]byte(val), &v); err != nil {
			v = val
		}
		if out[s] == nil {
			out[s] = map[string]any{}
		}
		out[s][name] = v
	}
	return out, nil
}

// Work is the runs Evaluate makes and the evaluations they replay in
// all, for that many strategies and seeds: each run is told its budget;
// without noScore, each seed has one more run told the end of the score
// window (RunBudgets).
func Work(problems []*Problem, strategies, seeds int, budgets []int, noScore bool) (runs int, evals int64) {
	for _, p := range problems {
		bs := budgets
		if !noScore {
			bs = RunBudgets(p, budgets)
		}
		for _, b := range bs {
			runs += strategies * seeds
			evals += int64(strategies*seeds) * int64(b)
		}
	}
	return runs, evals
}

// DefaultStrategies are the strategies a benchmark runs when none is named: all
// but those whose declared needs (strategy.Needs) set them apart: an
// exhaustive walk (does not depend on the seed), a multi-objective search
// (optimises several objectives together), a need for the GPU's
// description or compiled resources (a recorded cache has neither), for
// other GPUs' results (a different setting, compared separately), or for
// the kernels of a workload one by one, or a space of launch orders.
func DefaultStrategies() []string {
	var out []string
	for _, n := range strategy.Names() {
		needs, _ := strategy.NeedsOf(n)
		if needs.Exhaustive || needs.Objectives > 1 || needs.Target || needs.Resources || needs.Priors || needs.Kernels || needs.Orders {
			continue
		}
		out = append(out, n)
	}
	return out
}

// Strategies checks the strategies a benchmark replays and their
// hyperparameters (--strategy-param STRATEGY.NAME=VALUE): names
// (DefaultStrategies where none is given) must be gtune's strategies,
// and each hyperparameter must belong to one of them (else a typo, or a
// forgotten --strategy, would be silently ignored). Errors are bad input.
func Strategies(names, params []string) ([]string, map[string]map[string]any, error) {
	if len(names) == 0 {
		names = DefaultStrategies()
	}
	for _, s := range names {
		if !slices.Contains(strategy.Names(), s) {
			return nil, nil, badinput.New("unknown strategy %q (valid: %s)", s, strings.Join(strategy.Names(), ", "))
		}
	}
	hp, err := ParseStrategyParams(params)
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range params {
		if name, _, _ := strings.Cut(kv, "."); !slices.Contains(names, name) {
			return nil, nil, badinput.New("--strategy-param %s: %s is not among the strategies this run replays (%s)", kv, name, strings.Join(names, ", "))
		}
	}
	return names, hp, nil
}
