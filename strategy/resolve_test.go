package strategy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gtune/gtune/internal/badinput"
)

// The flag wins, then the spec's strategy, then brute_force; an unknown
// name is bad input.
func TestResolve(t *testing.T) {
	for _, c := range []struct{ flag, spec, want string }{
		{"", "", "brute_force"}, {"", "pso", "pso"}, {"random_sample", "pso", "random_sample"},
	} {
		if got, err := Resolve(c.flag, c.spec); err != nil || got != c.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", c.flag, c.spec, got, err, c.want)
		}
	}
	if _, err := Resolve("", "nope"); !badinput.Is(err) {
		t.Errorf("unknown strategy: %v, want bad input", err)
	}
}

// The spec's hyperparameters count only where the spec names its
// strategy; flags parse as JSON, else strings, and win; the
// bench-strategies form is refused.
func TestMergeParams(t *testing.T) {
	got, err := MergeParams("pso", map[string]any{"popsize": 20.0, "w": 0.5}, []string{"popsize=30", "method=fast", "elitism=true"})
	want := map[string]any{"popsize": 30.0, "w": 0.5, "method": "fast", "elitism": true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if got, err := MergeParams("", map[string]any{"popsize": 20.0}, nil); err != nil || len(got) != 0 {
		t.Errorf("no strategy in the spec: %v, %v; want none", got, err)
	}
	for _, bad := range []string{"popsize", "=3", "pso.popsize=3"} {
		if _, err := MergeParams("", nil, []string{bad}); !badinput.Is(err) {
			t.Errorf("%q: %v, want bad input", bad, err)
		}
	}
}

// CheckParams refuses a bad hyperparameter as bad input, before any run,
// and leaves strategies that need the run's inputs to the run.
func TestCheckParams(t *testing.T) {
	sp := lineSpace(t, 10)
	if err := CheckParams("random_sample", sp, nil, 1, 1); err != nil {
		t.Errorf("random_sample: %v", err)
	}
	err := CheckParams("genetic_algorithm", sp, map[string]any{"popsize": "many"}, 1, 1)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "popsize") {
		t.Errorf("a bad popsize: %v", err)
	}
	if err := CheckParams("nope", sp, nil, 1, 1); err == nil || !badinput.Is(err) {
		t.Errorf("an unknown strategy: %v", err)
	}
	// occupancy_greedy needs the GPU's description: left to the run.
	if err := CheckParams("occupancy_greedy", sp, map[string]any{"popsize": "many"}, 1, 1); err != nil {
		t.Errorf("a strategy that needs the run: %v", err)
	}
}
