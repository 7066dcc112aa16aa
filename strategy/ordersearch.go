package strategy

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/stats"
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
// objective; stop when none does. Where every order is measured several
// times (tune --repeat N), a move is taken only when its repeats differ
// from the current order's (Mann-Whitney U, p below hyperparameter
// alpha, default 0.05; 1 takes any move that lowers the median): on the
// H100 one order's time varies by a CV of 9 to 37 % from run to run
// (BENCHMARKS.md "Does one order have one time?"), and accepting noise
// walks away from good orders. Every other parameter of the space stays
// at its first configuration's value. Needs a space with the parameter
// order (gtune tune WORKLOAD --orders).
type orderSearch struct {
	*occGreedy
}

func newOrderSearch(o Options) (Strategy, error) {
	const name = "order_search"
	start := ""
	alpha := 0.05
	for k, v := range o.Params {
		switch k {
		case "start":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("strategy %s: start must be a launch order, kernel names joined by %q; got %v", name, OrderSeparator, v)
			}
			start = s
		case "alpha":
			a, _, _ := (&hyper{strategy: name, p: o.Params}).number("alpha")
			if !(a > 0 && a <= 1) {
				return nil, fmt.Errorf("strategy %s: alpha must be a significance level in (0, 1] (1: any move that lowers the median); got %v", name, v)
			}
			alpha = a
		default:
			return nil, fmt.Errorf("strategy %s has no hyperparameter %q (valid: start, alpha)", name, k)
		}
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
	g := &occGreedy{name: name, memo: map[int]float64{}, samples: map[int][]float64{}}
	better := func(next, cur int, w, v float64) bool {
		if !(w < v) {
			return false
		}
		a, b := g.samples[next], g.samples[cur]
		if alpha >= 1 || len(a) < 2 || len(b) < 2 {
			return true
		}
		p, err := stats.UTest(a, b)
		return err == nil && p < alpha
	}
	body := func(measure func(int) float64) int {
		return orderLocalSearch(strings.Split(start, OrderSeparator), index, measure, better)
	}
	g.next, g.stop = iter.Pull(g.procedure(body))
	return orderSearch{g}, nil
}

// orderLocalSearch is the search of order_search: first-improvement over
// insertion moves (kernel i taken out and put back at position j), from
// start, until no move is better (better(next, cur, its value, the
// current value), both space indexes). It returns the space index of the
// order it stops at.
func orderLocalSearch(start []string, index func([]string) int, measure func(int) float64, better func(next, cur int, w, v float64) bool) int {
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
				if w := measureAt(index(next), measure); index(next) >= 0 && better(index(next), index(cur), w, v) {
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
