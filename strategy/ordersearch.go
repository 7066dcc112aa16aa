package strategy

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/gtune/gtune/space"
)

// OrderParam and OrderSeparator are the launch-order parameter of a
// workload's combined space (package workload: OrderParam, whose values
// are kernel names joined by OrderSeparator), repeated here so that
// strategies do not depend on the workload package.
const (
	OrderParam     = "order"
	OrderSeparator = ">"
)

func init() {
	Register("order_search", Needs{Orders: true}, newOrderSearch)
}

// order_search refines a launch order by measurement: the symbiotic
// order of symbiotic-scheduling-concurrent-kernels.md (Figure 1), or any
// other, is a model's guess; on a GPU whose block scheduler or kernels
// the model does not describe, a few measured orders around it do
// better. It is a first-improvement local search over permutations:
// from the start order (hyperparameter start, kernel names joined by
// ">": the order gtune schedule prints; default the written order), try
// moving one kernel to another position (n·(n−1) insertion moves, each
// measured at most once) and take the first move that lowers the
// objective; stop when none does. Every other parameter of the space
// stays at its first configuration's value. Needs a space with the
// parameter order (gtune tune WORKLOAD --orders).
type orderSearch struct {
	*occGreedy
}

func newOrderSearch(o Options) (Strategy, error) {
	const name = "order_search"
	start := ""
	for k, v := range o.Params {
		if k != "start" {
			return nil, fmt.Errorf("strategy %s has no hyperparameter %q (valid: start)", name, k)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("strategy %s: start must be a launch order, kernel names joined by %q; got %v", name, OrderSeparator, v)
		}
		start = s
	}
	param := slices.IndexFunc(o.Space.Params(), func(p space.Param) bool { return p.Name == OrderParam })
	if param < 0 {
		return nil, fmt.Errorf("strategy %s searches launch orders: the space needs the parameter %s (gtune tune WORKLOAD --orders)", name, OrderParam)
	}
	valueOf := map[string]int32{}
	for j, v := range o.Space.Params()[param].Values {
		valueOf[v.Str()] = int32(j)
	}
	base := o.Space.Indexes(0)
	first := strings.Split(o.Space.Params()[param].Values[0].Str(), OrderSeparator)
	if start == "" {
		start = strings.Join(first, OrderSeparator)
	}
	if _, ok := valueOf[start]; !ok {
		return nil, fmt.Errorf("strategy %s: start %q is not a launch order of the workload's kernels (%s)", name, start, strings.Join(first, ", "))
	}
	index := func(order []string) int {
		ix := slices.Clone(base)
		ix[param] = valueOf[strings.Join(order, OrderSeparator)]
		i, ok := o.Space.IndexOf(ix)
		if !ok {
			return -1
		}
		return i
	}
	g := &occGreedy{name: name, memo: map[int]float64{}}
	body := func(measure func(int) float64) int {
		return orderLocalSearch(strings.Split(start, OrderSeparator), index, measure)
	}
	g.next, g.stop = iter.Pull(g.procedure(body))
	return orderSearch{g}, nil
}

// orderLocalSearch is the search of order_search: first-improvement over
// insertion moves (kernel i taken out and put back at position j), from
// start, until no move lowers the measured value. It returns the space
// index of the order it stops at.
func orderLocalSearch(start []string, index func([]string) int, measure func(int) float64) int {
	cur := start
	v := measureAt(index(cur), measure)
	for {
		improved := false
		n := len(cur)
	moves:
		for i := range n {
			for j := range n {
				if i == j {
					continue
				}
				next := slices.Delete(slices.Clone(cur), i, i+1)
				next = slices.Insert(next, j, cur[i])
				if w := measureAt(index(next), measure); w < v {
					cur, v, improved = next, w, true
					break moves
				}
			}
		}
		if !improved {
			return index(cur)
		}
	}
}
