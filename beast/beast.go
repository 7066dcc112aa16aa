// Package beast defines search spaces the way the BEAST autotuner does
// (autotuning-gemm-energy-beast.md, section 2.3): iterators whose bounds
// and steps are expressions of the iterators before them, pruned by
// filters that discard configurations and may read device constants.
//
// An iterator is a range [start : stop : step] (both ends inclusive, step
// 1 when left out, stop may be INF) or a set {v1, v2, ...}. A filter is an
// expression (package expr, Python syntax) that discards a configuration
// when true. Enumeration is lazy and depth-first; a filter is checked as
// soon as the iterators it reads are bound, and earlier by interval
// arithmetic over the iterators still to come (space.CompileInterval).
// A range with stop INF must be closed by the filters: New proves, by
// interval arithmetic, that some filter discards every value beyond
// Horizon for any values of the other iterators, and refuses the space,
// naming the iterator, otherwise. During enumeration the same test, made
// with the actual values of the iterators bound before, ends the loop at
// the first value from which every larger value is discarded.
package beast

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// Horizon is how far an unbounded (INF) range is proved closed: some filter
// must discard every value >= Horizon.
const Horizon = 1 << 24

// Iterator is one dimension of the search space.
type Iterator struct {
	Name string
	// A range: Start, Stop and Step are expressions over constants and
	// the iterators declared before; Stop may be "INF"; Step "" means 1.
	Start, Stop, Step string
	// A set: the values, in order (Start, Stop, Step are then unused).
	Values []expr.Value
}

// Range makes a range iterator [start : stop : step] (step "" for 1).
func Range(name, start, stop, step string) Iterator {
	return Iterator{Name: name, Start: start, Stop: stop, Step: step}
}

// Set makes a set iterator {values...}.
func Set(name string, values ...expr.Value) Iterator {
	return Iterator{Name: name, Values: values}
}

// Filter discards every configuration for which Discard is truthy.
type Filter struct {
	Name    string // for messages
	Discard string
}

type iter struct {
	Iterator
	start, stop, step *expr.Bound
	inf               bool
	istart, istop     *space.IntervalExpr
	istartOK, istopOK bool
	numeric           bool
	setLo, setHi      float64
	deps              []int // slots read by start/stop/step
}

type filter struct {
	Filter
	b     *expr.Bound
	iv    *space.IntervalExpr
	ivOK  bool
	slots []int // iterator slots read, ascending
	last  int   // level at which it is complete
}

// Space is a declared search space; it holds no configurations and is
// safe for concurrent use.
type Space struct {
	iters   []iter
	filters []filter
	consts  expr.Env
	order   []int   // binding order: slots by level
	levelOf []int   // slot -> level
	full    [][]int // per level: filters complete there
	ahead   [][]int // per level: filters read there but complete later
	closing [][]int // per level: filters that may close an INF range there
}

// New checks a declaration: unique names; bounds reading only constants
// and earlier iterators; filters reading only iterators and constants;
// every INF range closed by some filter (see Horizon). consts may be nil.
// Errors name the iterator or filter and what is wrong.
func New(iters []Iterator, filters []Filter, consts expr.Env) (*Space, error) {
	if len(iters) == 0 {
		return nil, fmt.Errorf("beast: no iterators")
	}
	if consts == nil {
		consts = expr.MapEnv{}
	}
	s := &Space{consts: consts}
	slot := make(map[string]int, len(iters))
	numeric := make([]bool, len(iters))
	for i, it := range iters {
		if it.Name == "" {
			return nil, fmt.Errorf("beast: iterator %d has no name", i+1)
		}
		if _, dup := slot[it.Name]; dup {
			return nil, fmt.Errorf("beast: duplicate iterator %q", it.Name)
		}
		if _, ok := consts.Lookup(it.Name); ok {
			return nil, fmt.Errorf("beast: iterator %q has the name of a constant", it.Name)
		}
		x := iter{Iterator: it, numeric: true}
		earlier := func(name string) (int, bool) { j, ok := slot[name]; return j, ok }
		if it.Values != nil {
			if len(it.Values) == 0 {
				return nil, fmt.Errorf("beast: iterator %q: empty set", it.Name)
			}
			x.setLo, x.setHi = math.Inf(1), math.Inf(-1)
			for _, v := range it.Values {
				f, ok := v.Float()
				if !ok || v.Kind() == expr.KindString {
					x.numeric = false
					continue
				}
				x.setLo, x.setHi = min(x.setLo, f), max(x.setHi, f)
			}
		} else {
			step := it.Step
			if strings.TrimSpace(step) == "" {
				step = "1"
			}
			var err error
			comp := func(what, src string) (*expr.Bound, *expr.Expr, error) {
				e, err := expr.Parse(src)
				if err != nil {
					return nil, nil, fmt.Errorf("beast: iterator %q %s %q: %v", it.Name, what, src, err)
				}
				for _, n := range e.Names() {
					if j, ok := slot[n]; ok {
						x.deps = append(x.deps, j)
					} else if _, ok := consts.Lookup(n); !ok {
						return nil, nil, fmt.Errorf("beast: iterator %q %s %q reads %q, which is neither an earlier iterator nor a constant", it.Name, what, src, n)
					}
				}
				b, err := e.Bind(earlier, consts)
				if err != nil {
					return nil, nil, fmt.Errorf("beast: iterator %q %s %q: %v", it.Name, what, src, err)
				}
				return b, e, nil
			}
			var e *expr.Expr
			if x.start, e, err = comp("start", it.Start); err != nil {
				return nil, err
			}
			x.istart, x.istartOK = space.CompileInterval(e, slot, numeric, consts)
			if strings.TrimSpace(it.Stop) == "INF" {
				x.inf = true
			} else {
				if x.stop, e, err = comp("stop", it.Stop); err != nil {
					return nil, err
				}
				x.istop, x.istopOK = space.CompileInterval(e, slot, numeric, consts)
			}
			if x.step, _, err = comp("step", step); err != nil {
				return nil, err
			}
		}
		slot[it.Name] = i
		numeric[i] = x.numeric
		s.iters = append(s.iters, x)
	}
	// Binding order: finite iterators whose bounds read no iterator first
	// (a set, or a range of constants: they never depend on the others, and
	// filters reading them become checkable early), then the rest as
	// declared.
	for i, x := range s.iters {
		if !x.inf && len(x.deps) == 0 {
			s.order = append(s.order, i)
		}
	}
	for i, x := range s.iters {
		if x.inf || len(x.deps) > 0 {
			s.order = append(s.order, i)
		}
	}
	s.levelOf = make([]int, len(s.iters))
	for l, i := range s.order {
		s.levelOf[i] = l
	}
	n := len(s.iters)
	s.full, s.ahead, s.closing = make([][]int, n), make([][]int, n), make([][]int, n)
	for k, f := range filters {
		e, err := expr.Parse(f.Discard)
		if err != nil {
			return nil, fmt.Errorf("beast: filter %s %q: %v", f.Name, f.Discard, err)
		}
		x := filter{Filter: f, last: -1}
		for _, nm := range e.Names() {
			if j, ok := slot[nm]; ok {
				x.slots = append(x.slots, j)
				x.last = max(x.last, s.levelOf[j])
			} else if _, ok := consts.Lookup(nm); !ok {
				return nil, fmt.Errorf("beast: filter %s %q reads %q, which is neither an iterator nor a constant", f.Name, f.Discard, nm)
			}
		}
		if x.b, err = e.Bind(func(nm string) (int, bool) { j, ok := slot[nm]; return j, ok }, consts); err != nil {
			return nil, fmt.Errorf("beast: filter %s %q: %v", f.Name, f.Discard, err)
		}
		x.iv, x.ivOK = space.CompileInterval(e, slot, numeric, consts)
		if x.last < 0 {
			t, err := x.b.Truthy(nil)
			if err != nil {
				return nil, fmt.Errorf("beast: filter %s %q: %v", f.Name, f.Discard, err)
			}
			if t {
				x.last = 0 // discards everything: checked at the first level
			} else {
				continue
			}
		}
		s.filters = append(s.filters, x)
		k = len(s.filters) - 1
		s.full[x.last] = append(s.full[x.last], k)
		if x.ivOK {
			for l := range n {
				if l >= x.last {
					break
				}
				if slices.Contains(x.slots, s.order[l]) {
					s.ahead[l] = append(s.ahead[l], k)
				}
				// A filter may close an INF range through later
				// iterators whose bounds depend on it (z = [x : 2*x]).
				if s.iters[s.order[l]].inf {
					s.closing[l] = append(s.closing[l], k)
				}
			}
			if s.iters[s.order[x.last]].inf {
				s.closing[x.last] = append(s.closing[x.last], k)
			}
		}
	}
	// Every INF range must be closed whatever the other iterators hold.
	lo, hi := make([]float64, n), make([]float64, n)
	for l, i := range s.order {
		if !s.iters[i].inf {
			continue
		}
		for j := range lo {
			lo[j], hi[j] = math.Inf(-1), math.Inf(1)
		}
		s.propagate(lo, hi, 0, i, Horizon)
		if !s.closes(l, lo, hi) {
			x := s.iters[i]
			return nil, fmt.Errorf("beast: iterator %q = [%s : INF : %s] is unbounded: no filter discards all its values from %d on; add a filter that bounds it", x.Name, x.Start, stepText(x.Step), Horizon)
		}
	}
	return s, nil
}

func stepText(s string) string {
	if strings.TrimSpace(s) == "" {
		return "1"
	}
	return s
}

// propagate sets the intervals of the iterators at levels >= from (the
// ones before are set by the caller) from their ranges or sets; the
// iterator at slot pin, if any, gets [at, +Inf) instead.
func (s *Space) propagate(lo, hi []float64, from, pin int, at float64) {
	for _, i := range s.order[from:] {
		x := &s.iters[i]
		switch {
		case i == pin:
			lo[i], hi[i] = at, math.Inf(1)
		case x.Values != nil:
			if x.numeric {
				lo[i], hi[i] = x.setLo, x.setHi
			} else {
				lo[i], hi[i] = math.Inf(-1), math.Inf(1)
			}
		default:
			lo[i], hi[i] = math.Inf(-1), math.Inf(1)
			sl, sh, ok1 := x.istart.Eval(lo, hi)
			if !x.istartOK || !ok1 {
				continue
			}
			if x.inf {
				lo[i] = sl // an INF range only grows (a negative step gives no values)
				continue
			}
			tl, th, ok2 := x.istop.Eval(lo, hi)
			if !x.istopOK || !ok2 {
				continue
			}
			lo[i], hi[i] = min(sl, tl), max(sh, th)
		}
	}
}

// closes reports whether some closing filter of level l is certainly true
// with the given intervals.
func (s *Space) closes(l int, lo, hi []float64) bool {
	for _, k := range s.closing[l] {
		if s.filters[k].iv.Truth(lo, hi) == 1 {
			return true
		}
	}
	return false
}

// Names gives the iterator names in declared order.
func (s *Space) Names() []string {
	out := make([]string, len(s.iters))
	for i, x := range s.iters {
		out[i] = x.Name
	}
	return out
}

// Each calls yield with every configuration that no filter discards: the
// values in declared iterator order (ints for ranges). The slice is reused:
// copy it to keep it. Iterators are bound in the order described at New
// (finite constant ones first), each range in its own direction. yield
// returning false stops the enumeration. Errors: a bound, step or filter
// whose evaluation fails, or a bound or step that is not an int, or a
// zero step, naming the iterator or filter and the values bound so far.
func (s *Space) Each(yield func(cfg []expr.Value) bool) error {
	n := len(s.iters)
	e := &walker{s: s, vals: make([]expr.Value, n), lo: make([]float64, n), hi: make([]float64, n),
		tlo: make([]float64, n), thi: make([]float64, n), yield: yield}
	e.walk(0)
	return e.err
}

// Count gives the number of configurations Each yields.
func (s *Space) Count() (int, error) {
	n, _, err := s.Collect(false)
	return n, err
}

// Collect counts the configurations Each yields and, with keep, gives
// them too (copies, in Each's order; nil without keep). Errors: Each's.
func (s *Space) Collect(keep bool) (n int, cfgs [][]expr.Value, err error) {
	err = s.Each(func(cfg []expr.Value) bool {
		n++
		if keep {
			cfgs = append(cfgs, append([]expr.Value(nil), cfg...))
		}
		return true
	})
	return n, cfgs, err
}

type walker struct {
	s        *Space
	vals     []expr.Value
	lo, hi   []float64 // points for bound iterators
	tlo, thi []float64 // scratch for propagated intervals
	yield    func([]expr.Value) bool
	err      error
	stopped  bool
}

func (w *walker) bound(l int) string {
	var b strings.Builder
	b.WriteByte('{')
	slots := slices.Clone(w.s.order[:l+1])
	slices.Sort(slots)
	for k, i := range slots {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", w.s.iters[i].Name, w.vals[i].String())
	}
	b.WriteByte('}')
	return b.String()
}

func (w *walker) intOf(b *expr.Bound, l int, what string) (int64, bool) {
	x := w.s.iters[w.s.order[l]]
	v, err := b.Eval(w.vals)
	if err == nil {
		if n, ok := v.Int(); ok {
			return n, true
		}
		err = fmt.Errorf("%s is not an int", v.String())
	}
	w.err = fmt.Errorf("beast: iterator %q %s at %s: %v", x.Name, what, w.bound(l-1), err)
	return 0, false
}

func (w *walker) walk(l int) {
	s := w.s
	if l == len(s.order) {
		if !w.yield(w.vals) {
			w.stopped = true
		}
		return
	}
	i := s.order[l]
	x := &s.iters[i]
	if x.Values != nil {
		for _, v := range x.Values {
			if !w.try(l, i, v) {
				return
			}
		}
		return
	}
	start, ok := w.intOf(x.start, l, "start")
	if !ok {
		return
	}
	step, ok := w.intOf(x.step, l, "step")
	if !ok {
		return
	}
	if step == 0 {
		w.err = fmt.Errorf("beast: iterator %q step is 0 at %s", x.Name, w.bound(l-1))
		return
	}
	if x.inf {
		if step < 0 {
			return
		}
		for v := start; ; v += step {
			if v >= Horizon*2 {
				w.err = fmt.Errorf("beast: iterator %q passed %d without a filter closing it at %s", x.Name, 2*Horizon, w.bound(l-1))
				return
			}
			copy(w.tlo, w.lo)
			copy(w.thi, w.hi)
			s.propagate(w.tlo, w.thi, l, i, float64(v))
			if s.closes(l, w.tlo, w.thi) {
				return
			}
			if !w.try(l, i, expr.Int(v)) {
				return
			}
		}
	}
	stop, ok := w.intOf(x.stop, l, "stop")
	if !ok {
		return
	}
	for v := start; (step > 0 && v <= stop) || (step < 0 && v >= stop); v += step {
		if !w.try(l, i, expr.Int(v)) {
			return
		}
	}
}

// try binds slot i at level l to v, checks the filters and descends; false
// ends the enumeration (error or yield stop).
func (w *walker) try(l, i int, v expr.Value) bool {
	s := w.s
	w.vals[i] = v
	f, ok := v.Float()
	if !ok || v.Kind() == expr.KindString {
		f = math.NaN()
	}
	w.lo[i], w.hi[i] = f, f
	for _, k := range s.full[l] {
		t, err := s.filters[k].b.Truthy(w.vals)
		if err != nil {
			w.err = fmt.Errorf("beast: filter %s %q failed at %s: %v", s.filters[k].Name, s.filters[k].Discard, w.bound(l), err)
			return false
		}
		if t {
			return true
		}
	}
	if len(s.ahead[l]) > 0 {
		copy(w.tlo, w.lo)
		copy(w.thi, w.hi)
		s.propagate(w.tlo, w.thi, l+1, -1, 0)
		for _, k := range s.ahead[l] {
			if s.filters[k].iv.Truth(w.tlo, w.thi) == 1 {
				return true
			}
		}
	}
	w.walk(l + 1)
	return w.err == nil && !w.stopped
}
