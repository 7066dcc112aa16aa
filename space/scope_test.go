package space

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
)

// Two kernels' parameters named alike, each restriction reading its own
// through its Scope: x in {2,3} for a, x in {1,2} for b (b.N = 3).
func TestScopedRestrictions(t *testing.T) {
	vals := []expr.Value{expr.Int(1), expr.Int(2), expr.Int(3)}
	params := []Param{{Name: "a.x", Values: vals}, {Name: "b.x", Values: vals}}
	rs := []Restriction{
		{Expr: expr.MustParse("x > 1"), Scope: "a."},
		{Expr: expr.MustParse("x < N"), Scope: "b."},
	}
	consts := expr.MapEnv{"b.N": expr.Int(3)}
	for name, build := range map[string]func([]Param, []Restriction, expr.Env) (*Space, error){"csp": Build, "brute force": BuildBruteForce} {
		sp, err := build(params, rs, consts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var keys []string
		for i := range sp.Len() {
			keys = append(keys, sp.Key(i))
		}
		if got, want := strings.Join(keys, " "), "2,1 2,2 3,1 3,2"; got != want {
			t.Errorf("%s: configurations %q, want %q", name, got, want)
		}
	}
	// A name outside the scope is an error naming it, even when another
	// scope has it.
	_, err := Build(params, []Restriction{{Expr: expr.MustParse("N > 0"), Scope: "a."}}, consts)
	if err == nil || !strings.Contains(err.Error(), `"N"`) {
		t.Errorf("unscoped constant: err = %v, want one naming N", err)
	}
}
