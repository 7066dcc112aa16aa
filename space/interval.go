package space

import (
	"math"

	"github.com/gtune/gtune/expr"
)

// Interval forward checking: a restriction is evaluated over intervals,
// bound parameters as points and unbound ones as [min, max] of their
// values, and a prefix is pruned when the result is certainly falsy. The
// enclosure is sound for Python semantics: +, -, * and / of int or float
// operands are monotone after IEEE rounding, so evaluating the corners
// with the same float64 operations bounds every result; a result that is
// not an integer below 2^53 is widened by a few ulps to cover the int and
// float paths alike. Operators it does not model (**, bit operations,
// in, indexing, lists, strings, most calls) give "unknown", and a
// divisor interval holding 0 gives "unknown" too, so a prefix whose
// completion would raise an error is never pruned on that account.

type ival struct {
	lo, hi float64
	top    bool // unknown: any value, of any kind
}

var topI = ival{top: true}

func point(x float64) ival { return ival{lo: x, hi: x} }

// ifn evaluates an interval expression given the current interval of each
// parameter (by spec position).
type ifn func(lo, hi []float64) ival

const exact = 1 << 53

// widen covers rounding differences for results that are not small
// integers.
func widen(v ival) ival {
	// Fast path: both ends integers of magnitude below 2^53 (the float64
	// to int64 conversion is exact there, and NaN fails the range test).
	if v.lo > -exact && v.hi < exact && v.lo == float64(int64(v.lo)) && v.hi == float64(int64(v.hi)) {
		return v
	}
	if v.top || math.IsNaN(v.lo) || math.IsNaN(v.hi) {
		return topI
	}
	return ival{lo: v.lo - 4*ulp(v.lo), hi: v.hi + 4*ulp(v.hi)}
}

func ulp(x float64) float64 {
	x = math.Abs(x)
	if math.IsInf(x, 0) {
		return 0
	}
	return math.Nextafter(x, math.Inf(1)) - x
}

// truth: 0 certainly falsy, 1 certainly truthy, 2 unknown.
func truth(v ival) int {
	switch {
	case v.top:
		return 2
	case v.lo == 0 && v.hi == 0:
		return 0
	case v.lo > 0 || v.hi < 0:
		return 1
	}
	return 2
}

func union(a, b ival) ival {
	if a.top || b.top {
		return topI
	}
	return ival{lo: min(a.lo, b.lo), hi: max(a.hi, b.hi)}
}

func boolI(t int) ival {
	switch t {
	case 0:
		return point(0)
	case 1:
		return point(1)
	}
	return ival{lo: 0, hi: 1}
}

func corners(f func(a, b float64) float64, x, y ival) ival {
	c := [4]float64{f(x.lo, y.lo), f(x.lo, y.hi), f(x.hi, y.lo), f(x.hi, y.hi)}
	v := ival{lo: c[0], hi: c[0]}
	for _, z := range c[1:] {
		if math.IsNaN(z) {
			return topI
		}
		v.lo, v.hi = min(v.lo, z), max(v.hi, z)
	}
	return widen(v)
}

// compileInterval builds the interval evaluator of a restriction's syntax
// tree; ok is false when nothing useful can be said (the root is unknown
// whatever the parameters). pos maps parameter names to spec positions,
// numeric says whether a parameter's values are all numbers (so its
// [min, max] encloses it).
func compileInterval(n *expr.Node, pos map[string]int, numeric []bool, consts expr.Env) (ifn, bool) {
	f, known := icomp(n, pos, numeric, consts)
	return f, known
}

func numVal(v expr.Value) (float64, bool) {
	switch v.Kind() {
	case expr.KindInt, expr.KindBool, expr.KindFloat:
		f, _ := v.Float()
		if math.IsNaN(f) {
			return 0, false
		}
		if i, ok := v.Int(); ok && (i >= exact || i <= -exact) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

func constI(v ival) ifn { return func(_, _ []float64) ival { return v } }

// icomp compiles n; known is false when the result is always topI.
func icomp(n *expr.Node, pos map[string]int, numeric []bool, consts expr.Env) (ifn, bool) {
	unknown := constI(topI)
	sub := func(k *expr.Node) (ifn, bool) { return icomp(k, pos, numeric, consts) }
	switch n.Op {
	case "const":
		if f, ok := numVal(n.Value); ok {
			return constI(point(f)), true
		}
		return unknown, false
	case "name":
		if p, ok := pos[n.Name]; ok {
			if !numeric[p] {
				return unknown, false
			}
			return func(lo, hi []float64) ival { return ival{lo: lo[p], hi: hi[p]} }, true
		}
		if consts != nil {
			if v, ok := consts.Lookup(n.Name); ok {
				if f, ok := numVal(v); ok {
					return constI(point(f)), true
				}
			}
		}
		return unknown, false
	case "neg", "pos", "not":
		x, ok := sub(n.Kids[0])
		if !ok {
			if n.Op == "not" {
				return constI(boolI(2)), true
			}
			return unknown, false
		}
		switch n.Op {
		case "neg":
			return func(lo, hi []float64) ival {
				v := x(lo, hi)
				if v.top {
					return v
				}
				return ival{lo: -v.hi, hi: -v.lo}
			}, true
		case "pos":
			return x, true
		}
		return func(lo, hi []float64) ival {
			t := truth(x(lo, hi))
			if t == 2 {
				return boolI(2)
			}
			return boolI(1 - t)
		}, true
	case "and", "or":
		l, _ := sub(n.Kids[0])
		r, _ := sub(n.Kids[1])
		isAnd := n.Op == "and"
		return func(lo, hi []float64) ival {
			a := l(lo, hi)
			switch truth(a) {
			case 0:
				if isAnd {
					return a
				}
				return r(lo, hi)
			case 1:
				if isAnd {
					return r(lo, hi)
				}
				return a
			}
			return union(a, r(lo, hi))
		}, true
	case "cond":
		th, _ := sub(n.Kids[0])
		c, _ := sub(n.Kids[1])
		el, _ := sub(n.Kids[2])
		return func(lo, hi []float64) ival {
			switch truth(c(lo, hi)) {
			case 0:
				return el(lo, hi)
			case 1:
				return th(lo, hi)
			}
			return union(th(lo, hi), el(lo, hi))
		}, true
	case "+", "-", "*", "/", "//", "%":
		l, okl := sub(n.Kids[0])
		r, okr := sub(n.Kids[1])
		if !okl || !okr {
			return unknown, false
		}
		return binI(n.Op, l, r), true
	case "compare":
		fs := make([]ifn, len(n.Kids))
		for i, k := range n.Kids {
			fs[i], _ = sub(k)
		}
		ops := n.Cmps
		return func(lo, hi []float64) ival {
			a := fs[0](lo, hi)
			res := 1
			for i, op := range ops {
				b := fs[i+1](lo, hi)
				t := cmpI(op, a, b)
				if t == 0 {
					return boolI(0)
				}
				if t == 2 {
					res = 2
				}
				a = b
			}
			return boolI(res)
		}, true
	case "call":
		fs := make([]ifn, len(n.Kids))
		for i, k := range n.Kids {
			var ok bool
			if fs[i], ok = sub(k); !ok {
				return unknown, false
			}
		}
		switch {
		case (n.Name == "min" || n.Name == "max") && len(fs) >= 2:
			isMin := n.Name == "min"
			return func(lo, hi []float64) ival {
				v := fs[0](lo, hi)
				for _, f := range fs[1:] {
					w := f(lo, hi)
					if v.top || w.top {
						return topI
					}
					if isMin {
						v = ival{lo: min(v.lo, w.lo), hi: min(v.hi, w.hi)}
					} else {
						v = ival{lo: max(v.lo, w.lo), hi: max(v.hi, w.hi)}
					}
				}
				return v
			}, true
		case n.Name == "abs" && len(fs) == 1:
			return func(lo, hi []float64) ival {
				v := fs[0](lo, hi)
				switch {
				case v.top:
					return v
				case v.lo >= 0:
					return v
				case v.hi <= 0:
					return ival{lo: -v.hi, hi: -v.lo}
				}
				return ival{lo: 0, hi: max(-v.lo, v.hi)}
			}, true
		case (n.Name == "int" || n.Name == "float") && len(fs) == 1:
			trunc := n.Name == "int"
			return func(lo, hi []float64) ival {
				v := fs[0](lo, hi)
				if v.top || !trunc {
					return v
				}
				return ival{lo: math.Trunc(v.lo), hi: math.Trunc(v.hi)}
			}, true
		}
	}
	return unknown, false
}

func binI(op string, l, r ifn) ifn {
	switch op {
	case "+":
		return func(lo, hi []float64) ival {
			a, b := l(lo, hi), r(lo, hi)
			if a.top || b.top {
				return topI
			}
			return widen(ival{lo: a.lo + b.lo, hi: a.hi + b.hi})
		}
	case "-":
		return func(lo, hi []float64) ival {
			a, b := l(lo, hi), r(lo, hi)
			if a.top || b.top {
				return topI
			}
			return widen(ival{lo: a.lo - b.hi, hi: a.hi - b.lo})
		}
	case "*":
		return func(lo, hi []float64) ival {
			a, b := l(lo, hi), r(lo, hi)
			if a.top || b.top {
				return topI
			}
			if a.lo >= 0 && b.lo >= 0 {
				return widen(ival{lo: a.lo * b.lo, hi: a.hi * b.hi})
			}
			return corners(func(x, y float64) float64 { return x * y }, a, b)
		}
	case "/", "//":
		floor := op == "//"
		return func(lo, hi []float64) ival {
			a, b := l(lo, hi), r(lo, hi)
			if a.top || b.top || (b.lo <= 0 && b.hi >= 0) {
				return topI
			}
			q := corners(func(x, y float64) float64 { return x / y }, a, b)
			if q.top {
				return q
			}
			// Division by a non-integer result is always widened.
			q = ival{lo: q.lo - 4*ulp(q.lo), hi: q.hi + 4*ulp(q.hi)}
			if floor {
				q = ival{lo: math.Floor(q.lo), hi: math.Floor(q.hi)}
			}
			return q
		}
	}
	// %: Python's remainder takes the divisor's sign and is smaller in
	// magnitude; a non-negative dividend below a positive divisor is
	// returned unchanged.
	return func(lo, hi []float64) ival {
		a, b := l(lo, hi), r(lo, hi)
		if a.top || b.top || (b.lo <= 0 && b.hi >= 0) {
			return topI
		}
		if a.lo == a.hi && b.lo == b.hi {
			r := math.Mod(a.lo, b.lo)
			if r != 0 && (r < 0) != (b.lo < 0) {
				r += b.lo
			}
			return widen(point(r))
		}
		if b.lo > 0 {
			if a.lo >= 0 && a.hi < b.lo {
				return a
			}
			if a.lo >= 0 {
				return ival{lo: 0, hi: min(a.hi, b.hi)}
			}
			return ival{lo: 0, hi: b.hi}
		}
		return ival{lo: b.lo, hi: 0}
	}
}

// cmpI gives the truth of a op b: 0 certainly false, 1 certainly true, 2
// unknown.
func cmpI(op string, a, b ival) int {
	if a.top || b.top {
		return 2
	}
	switch op {
	case "<":
		return tri(a.hi < b.lo, a.lo >= b.hi)
	case "<=":
		return tri(a.hi <= b.lo, a.lo > b.hi)
	case ">":
		return tri(a.lo > b.hi, a.hi <= b.lo)
	case ">=":
		return tri(a.lo >= b.hi, a.hi < b.lo)
	case "==":
		return tri(a.lo == a.hi && b.lo == b.hi && a.lo == b.lo, a.hi < b.lo || b.hi < a.lo)
	case "!=":
		return tri(a.hi < b.lo || b.hi < a.lo, a.lo == a.hi && b.lo == b.hi && a.lo == b.lo)
	}
	return 2
}

func tri(yes, no bool) int {
	switch {
	case yes:
		return 1
	case no:
		return 0
	}
	return 2
}

// IntervalExpr is an expression compiled for interval evaluation (see the
// comment at the top of interval.go): given an enclosing interval for each
// name, it gives an interval enclosing every value the expression can
// take, or reports that it cannot say. Used by package beast to prove
// that a filter discards every value of an unbounded iterator beyond a
// point.
type IntervalExpr struct{ f ifn }

// CompileInterval compiles e. slot maps a name to its index in the lo and
// hi slices given to Eval; numeric[i] says whether slot i only ever holds
// numbers (int, float or bool) — a name that is not numeric makes every
// expression reading it unknown. Other names are looked up in consts.
// ok is false when the expression is unknown whatever the intervals.
func CompileInterval(e *expr.Expr, slot map[string]int, numeric []bool, consts expr.Env) (*IntervalExpr, bool) {
	f, ok := compileInterval(e.Tree(), slot, numeric, consts)
	return &IntervalExpr{f}, ok
}

// Eval gives [l, h] enclosing the expression's value when name i lies in
// [lo[i], hi[i]] (infinite ends allowed; an int interval holds ints only);
// known is false when no enclosure could be computed.
func (x *IntervalExpr) Eval(lo, hi []float64) (l, h float64, known bool) {
	v := x.f(lo, hi)
	return v.lo, v.hi, !v.top
}

// Truth gives 0 when the expression is certainly falsy, 1 when certainly
// truthy, 2 when it may be either.
func (x *IntervalExpr) Truth(lo, hi []float64) int { return truth(x.f(lo, hi)) }
