package strategy

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/space"
)

// Resolve picks a run's strategy: flag (--strategy), else the spec's
// (its T1 Search.Name, specName), else brute_force. Errors: an unknown
// name (bad input, badinput).
func Resolve(flag, specName string) (string, error) {
	name := flag
	if name == "" {
		name = specName
	}
	if name == "" {
		name = "brute_force"
	}
	if !slices.Contains(Names(), name) {
		return "", badinput.New("unknown strategy %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return name, nil
}

// MergeParams merges a spec's strategy hyperparameters (its T1
// Search.Attributes, specOptions, used where the spec names its strategy,
// specStrategy) with --strategy-param NAME=VALUE flags (values parse as
// JSON numbers or booleans, else strings); the flags win. Errors: a flag
// not of that form, or of bench-strategies' STRATEGY.NAME=VALUE form
// (bad input, badinput).
func MergeParams(specStrategy string, specOptions map[string]any, flags []string) (map[string]any, error) {
	params := map[string]any{}
	if specStrategy != "" {
		for k, v := range specOptions {
			params[k] = v
		}
	}
	for _, kv := range flags {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, badinput.New("--strategy-param %q: want NAME=VALUE", kv)
		}
		if st, hp, dotted := strings.Cut(name, "."); dotted && slices.Contains(Names(), st) {
			// bench-strategies' form, which names the strategy: here
			// the hyperparameter belongs to the run's one strategy.
			return nil, badinput.New("--strategy-param %q: tune takes NAME=VALUE for the run's strategy (--strategy %s --strategy-param %s=%s); STRATEGY.NAME=VALUE is bench-strategies' form", kv, st, hp, val)
		}
		var v any
		if err := json.Unmarshal([]byte(val), &v); err != nil {
			v = val
		}
		params[name] = v
	}
	return params, nil
}

// CheckParams makes the strategy name over sp with params, as a run
// would, to check its hyperparameters before a job waits in a queue
// (gtune slurm submit) or a GPU is opened. A strategy that needs what
// only the run has (the GPU's description, compiled resources, priors,
// a workload's kernels, launch orders) is left to the run. Errors: the
// strategy's, as bad input (badinput).
func CheckParams(name string, sp *space.Space, params map[string]any, seed uint64, objectives int) error {
	n, err := NeedsOf(name)
	if err != nil {
		return badinput.Wrap(err)
	}
	if n.Target || n.Resources || n.Priors || n.Kernels || n.AloneTimes || n.Orders {
		return nil
	}
	if _, err := New(name, Options{Space: sp, Seed: seed, Params: params, Objectives: objectives}); err != nil {
		return badinput.Wrap(err)
	}
	return nil
}
