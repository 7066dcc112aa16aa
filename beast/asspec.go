package beast

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// Texts are the declared search spaces gtune ships as text, by name: what
// a spec's Gtune.DeclaredSpace names (its device limits then read from
// the spec's constants, DeviceConstants' names), as Declared gives them
// for a device of the device database.
var Texts = map[string]string{"dgemm": DGEMMText}

// AsParams writes the space as tunable parameters and restrictions, as a
// spec's ConfigurationSpace would (package space builds the same
// configurations Each yields): each iterator a parameter whose values are
// those it takes in the enumeration, ascending; each range iterator the
// restriction that it lies between its bounds on its step's grid,
// (x − start) % step == 0 and start ≤ x ≤ stop (reversed for a negative
// step; no stop for INF), its bounds and step read from the other
// parameters as declared; each filter the restriction that it does not
// discard. Source names the iterator or filter. Errors: Each's, or a
// space with no configuration.
func (s *Space) AsParams(name string) ([]space.Param, []space.Restriction, error) {
	seen := make([][]expr.Value, len(s.iters))
	n := 0
	err := s.Each(func(cfg []expr.Value) bool {
		n++
		for i, v := range cfg {
			if !slices.ContainsFunc(seen[i], v.Equal) {
				seen[i] = append(seen[i], v)
			}
		}
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("beast: the declared space %s has no configuration", name)
	}
	params := make([]space.Param, len(s.iters))
	var rs []space.Restriction
	add := func(src, what string) error {
		e, err := expr.Parse(src)
		if err != nil {
			return fmt.Errorf("beast: %s %s: %v", name, what, err)
		}
		rs = append(rs, space.Restriction{Expr: e, Source: "declared space " + name + ", " + what})
		return nil
	}
	for i, it := range s.iters {
		vals := seen[i]
		slices.SortStableFunc(vals, func(a, b expr.Value) int {
			x, _ := a.Float()
			y, _ := b.Float()
			return cmp.Compare(x, y)
		})
		params[i] = space.Param{Name: it.Name, Values: vals}
		if it.Values != nil {
			continue // a set: its values are the parameter's
		}
		step := strings.TrimSpace(it.Step)
		if step == "" {
			step = "1"
		}
		x, lo, st := it.Name, "("+it.Start+")", "("+step+")"
		up := fmt.Sprintf("%s >= %s", x, lo)
		down := fmt.Sprintf("%s <= %s", x, lo)
		if !it.inf {
			up += fmt.Sprintf(" and %s <= (%s)", x, it.Stop)
			down += fmt.Sprintf(" and %s >= (%s)", x, it.Stop)
		}
		src := fmt.Sprintf("(%s - %s) %% %s == 0 and (%s > 0 and %s or %s < 0 and %s)", x, lo, st, st, up, st, down)
		if err := add(src, "iterator "+x); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range s.filters {
		if err := add("not ("+f.Discard+")", "filter "+f.Name); err != nil {
			return nil, nil, err
		}
	}
	return params, rs, nil
}
