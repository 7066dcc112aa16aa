package strategy

import (
	"reflect"
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
