package objective

import (
	"slices"
	"strings"

	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/spec"
)

// ResolveList resolves --objective's comma-separated list against s (the
// first is the one a single-objective strategy optimises; several give a
// Pareto front); "" is the spec's objective. It sets s's objective to
// the first (FromSpec reads it). Errors: a name given twice, an unknown
// name (bad input, badinput).
func ResolveList(s *spec.Spec, list string) ([]Objective, error) {
	if list == "" {
		o, err := Resolve(s, "")
		return []Objective{o}, err
	}
	var out []Objective
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, badinput.New("--objective %q names %s twice", list, name)
		}
		seen[name] = true
		o, err := Resolve(s, name)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	// The spec's objective is the first one's (FromSpec reads it).
	_, err := Resolve(s, out[0].Name)
	return out, err
}

// Resolve resolves one objective name against s: a built-in (Builtins)
// or one of its metrics, "" for the spec's own, and sets s's objective
// to it. Errors: an unknown name (bad input, badinput).
func Resolve(s *spec.Spec, name string) (Objective, error) {
	if name == "" {
		return FromSpec(s), nil
	}
	if slices.Contains(Builtins, name) {
		s.Objective, s.ObjectiveMaximize = name, false
		return FromSpec(s), nil
	}
	for _, m := range s.Metrics {
		if m.Name == name {
			s.Objective, s.ObjectiveMaximize = name, m.Maximize
			return FromSpec(s), nil
		}
	}
	valid := append([]string(nil), Builtins...)
	for _, m := range s.Metrics {
		valid = append(valid, m.Name)
	}
	return Objective{}, badinput.New("unknown objective %q (valid: %s)", name, strings.Join(valid, ", "))
}
