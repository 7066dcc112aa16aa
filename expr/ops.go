package expr

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EvalError is a run-time error of an expression, named like the Python
// exception it stands for (ZeroDivisionError, TypeError, ValueError,
// IndexError, OverflowError). MemoryError is also this package's own limits:
// a list or str longer than MaxListLen, or an evaluation of more than
// MaxSteps steps. Msg is one line and quotes values through Excerpt.
type EvalError struct {
	Type string // Python exception name
	Msg  string
}

func (e *EvalError) Error() string { return e.Type + ": " + e.Msg }

// NameError is returned when an expression reads a name that is neither
// bound nor a constant.
type NameError struct {
	Name string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("NameError: name '%s' is not defined", Excerpt(e.Name))
}

func errf(typ, format string, a ...any) error {
	return &EvalError{Type: typ, Msg: fmt.Sprintf(format, a...)}
}

var opSym = map[opcode]string{opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opFloorDiv: "//", opMod: "%",
	opPow: "** or pow()", opBitAnd: "&", opBitOr: "|", opBitXor: "^", opShl: "<<", opShr: ">>"}

func isIntLike(v Value) bool { return v.k == KindInt || v.k == KindBool }

func overflow() error {
	return errf("OverflowError", "integer result exceeds 64 bits (gtune ints are int64)")
}

func unsupported(op opcode, a, b Value) error {
	return errf("TypeError", "unsupported operand type(s) for %s: '%s' and '%s'", opSym[op], a.k, b.k)
}

// arith applies a binary arithmetic or bitwise operator with Python
// semantics. Work on lists and strs is charged to f.
func arith(op opcode, a, b Value, f *frame) (Value, error) {
	if isIntLike(a) && isIntLike(b) {
		return intArith(op, a, b)
	}
	if a.isNum() && b.isNum() {
		x, _ := a.Float()
		y, _ := b.Float()
		return floatArith(op, x, y)
	}
	switch op {
	case opAdd:
		if a.k == KindString && b.k == KindString {
			if err := f.build("str concatenation", int64(a.ln)+int64(b.ln)); err != nil {
				return Value{}, err
			}
			return Str(a.Str() + b.Str()), nil
		}
		if a.k == KindList && b.k == KindList {
			x, y := a.List(), b.List()
			if err := f.build("list concatenation", int64(len(x))+int64(len(y))); err != nil {
				return Value{}, err
			}
			out := make([]Value, 0, len(x)+len(y))
			out = append(append(out, x...), y...)
			return List(out), nil
		}
	case opMul:
		if isIntLike(a) && (b.k == KindList || b.k == KindString) {
			a, b = b, a
		}
		if isIntLike(b) && (a.k == KindList || a.k == KindString) {
			n := max(b.i(), 0)
			what, unit := "list repetition", "elements"
			if a.k == KindString {
				what, unit = "str repetition", "bytes"
			}
			if hi, lo := bits.Mul64(uint64(a.ln), uint64(n)); hi != 0 || lo > math.MaxInt64 {
				return Value{}, errf("MemoryError", "%s would have %d × %d %s (the limit is %d)", what, a.ln, n, unit, MaxListLen)
			}
			if err := f.build(what, int64(a.ln)*n); err != nil {
				return Value{}, err
			}
			if a.k == KindString {
				return Str(strings.Repeat(a.Str(), int(n))), nil
			}
			x := a.List()
			if len(x) == 0 {
				return List(nil), nil // [] * 10**18 must not loop 10**18 times
			}
			out := make([]Value, 0, len(x)*int(n))
			for range n {
				out = append(out, x...)
			}
			return List(out), nil
		}
	}
	return Value{}, unsupported(op, a, b)
}

func intArith(op opcode, av, bv Value) (Value, error) {
	a, b := av.i(), bv.i()
	switch op {
	case opAdd:
		s := a + b
		if (a^s)&(b^s) < 0 {
			return Value{}, overflow()
		}
		return Int(s), nil
	case opSub:
		d := a - b
		if (a^b)&(a^d) < 0 {
			return Value{}, overflow()
		}
		return Int(d), nil
	case opMul:
		return mulInt(a, b)
	case opDiv:
		if b == 0 {
			return Value{}, errf("ZeroDivisionError", "division by zero")
		}
		return Float(float64(a) / float64(b)), nil
	case opFloorDiv:
		if b == 0 {
			return Value{}, errf("ZeroDivisionError", "integer division or modulo by zero")
		}
		if a == math.MinInt64 && b == -1 {
			return Value{}, overflow()
		}
		q := a / b
		if a%b != 0 && (a < 0) != (b < 0) {
			q--
		}
		return Int(q), nil
	case opMod:
		if b == 0 {
			return Value{}, errf("ZeroDivisionError", "integer modulo by zero")
		}
		r := a % b
		if r != 0 && (r < 0) != (b < 0) {
			r += b
		}
		return Int(r), nil
	case opPow:
		if b < 0 {
			if a == 0 {
				return Value{}, errf("ZeroDivisionError", "0.0 cannot be raised to a negative power")
			}
			return Float(math.Pow(float64(a), float64(b))), nil
		}
		return powInt(a, b)
	case opBitAnd, opBitOr, opBitXor:
		var r int64
		switch op {
		case opBitAnd:
			r = a & b
		case opBitOr:
			r = a | b
		default:
			r = a ^ b
		}
		if av.k == KindBool && bv.k == KindBool {
			return Bool(r != 0), nil
		}
		return Int(r), nil
	case opShl:
		if b < 0 {
			return Value{}, errf("ValueError", "negative shift count")
		}
		if a == 0 {
			return Int(0), nil
		}
		if b >= 63 || (a<<b)>>b != a {
			return Value{}, overflow()
		}
		return Int(a << b), nil
	case opShr:
		if b < 0 {
			return Value{}, errf("ValueError", "negative shift count")
		}
		if b > 63 {
			b = 63
		}
		return Int(a >> b), nil
	}
	return Value{}, unsupported(op, av, bv)
}

func mulInt(a, b int64) (Value, error) {
	if a == 0 || b == 0 {
		return Int(0), nil
	}
	neg := (a < 0) != (b < 0)
	ua, ub := absU(a), absU(b)
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || (!neg && lo > math.MaxInt64) || (neg && lo > 1<<63) {
		return Value{}, overflow()
	}
	if neg {
		return Int(int64(-lo)), nil
	}
	return Int(int64(lo)), nil
}

func absU(a int64) uint64 {
	if a < 0 {
		return uint64(-a) // also right for MinInt64 (wraps to 1<<63)
	}
	return uint64(a)
}

func powInt(a, b int64) (Value, error) {
	r := int64(1)
	for b > 0 {
		if b&1 == 1 {
			v, err := mulInt(r, a)
			if err != nil {
				return Value{}, err
			}
			r = v.i()
		}
		b >>= 1
		if b > 0 {
			v, err := mulInt(a, a)
			if err != nil {
				return Value{}, err
			}
			a = v.i()
		}
	}
	return Int(r), nil
}

func floatArith(op opcode, x, y float64) (Value, error) {
	switch op {
	case opAdd:
		return Float(x + y), nil
	case opSub:
		return Float(x - y), nil
	case opMul:
		return Float(x * y), nil
	case opDiv:
		if y == 0 {
			return Value{}, errf("ZeroDivisionError", "float division by zero")
		}
		return Float(x / y), nil
	case opFloorDiv:
		if y == 0 {
			return Value{}, errf("ZeroDivisionError", "float floor division by zero")
		}
		d, _ := floatDivmod(x, y)
		return Float(d), nil
	case opMod:
		if y == 0 {
			return Value{}, errf("ZeroDivisionError", "float modulo by zero")
		}
		_, m := floatDivmod(x, y)
		return Float(m), nil
	case opPow:
		if x == 0 && y < 0 {
			return Value{}, errf("ZeroDivisionError", "0.0 cannot be raised to a negative power")
		}
		if x < 0 && y != math.Trunc(y) && !math.IsInf(y, 0) {
			return Value{}, errf("ValueError", "negative number cannot be raised to a fractional power (complex result)")
		}
		r := math.Pow(x, y)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			return Value{}, errf("OverflowError", "(34, 'Numerical result out of range')")
		}
		return Float(r), nil
	}
	return Value{}, errf("TypeError", "unsupported operand type(s) for %s: 'float' and 'float'", opSym[op])
}

// floatDivmod is CPython's float_divmod (Objects/floatobject.c).
func floatDivmod(vx, wx float64) (float64, float64) {
	mod := math.Mod(vx, wx)
	div := (vx - mod) / wx
	if mod != 0 {
		if (wx < 0) != (mod < 0) {
			mod += wx
			div -= 1
		}
	} else {
		mod = math.Copysign(0, wx)
	}
	var floordiv float64
	if div != 0 {
		floordiv = math.Floor(div)
		if div-floordiv > 0.5 {
			floordiv += 1
		}
	} else {
		floordiv = math.Copysign(0, vx/wx)
	}
	return floordiv, mod
}

// cmpNum orders two numbers exactly (an int64 and a float64 are compared
// without rounding the int). ok is false when either is NaN.
func cmpNum(a, b Value) (int, bool) {
	if isIntLike(a) && isIntLike(b) {
		return cmp3(a.i(), b.i()), true
	}
	if a.k == KindFloat && b.k == KindFloat {
		x, y := a.f(), b.f()
		if x != x || y != y {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	if a.k == KindFloat {
		c, ok := cmpIntFloat(b.i(), a.f())
		return -c, ok
	}
	return cmpIntFloat(a.i(), b.f())
}

func cmp3(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpIntFloat(i int64, f float64) (int, bool) {
	if f != f {
		return 0, false
	}
	if f >= 9223372036854775808.0 {
		return -1, true
	}
	if f < -9223372036854775808.0 {
		return 1, true
	}
	t := math.Trunc(f)
	if c := cmp3(i, int64(t)); c != 0 {
		return c, true
	}
	switch frac := f - t; {
	case frac > 0:
		return -1, true
	case frac < 0:
		return 1, true
	}
	return 0, true
}

// order compares a and b for <, <=, >, >=.
func order(sym string, a, b Value, f *frame) (int, bool, error) {
	if a.isNum() && b.isNum() {
		c, ok := cmpNum(a, b)
		return c, ok, nil
	}
	if a.k == KindString && b.k == KindString {
		if err := f.charge(min(a.ln, b.ln)); err != nil {
			return 0, false, err
		}
		return strings.Compare(a.Str(), b.Str()), true, nil
	}
	if a.k == KindList && b.k == KindList {
		x, y := a.List(), b.List()
		if err := f.charge(min(len(x), len(y))); err != nil {
			return 0, false, err
		}
		for i := 0; i < len(x) && i < len(y); i++ {
			eq, err := equal(x[i], y[i], f)
			if err != nil {
				return 0, false, err
			}
			if !eq {
				return order(sym, x[i], y[i], f)
			}
		}
		return cmp3(int64(len(x)), int64(len(y))), true, nil
	}
	return 0, false, errf("TypeError", "'%s' not supported between instances of '%s' and '%s'", sym, a.k, b.k)
}

// equal is Value.Equal with its work on lists and strs charged to f:
// comparing nested lists can visit far more elements than either has.
func equal(a, b Value, f *frame) (bool, error) {
	switch {
	case a.k == KindList && b.k == KindList:
		x, y := a.List(), b.List()
		if len(x) != len(y) {
			return false, nil
		}
		if err := f.charge(len(x)); err != nil {
			return false, err
		}
		for i := range x {
			if eq, err := equal(x[i], y[i], f); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case a.k == KindString && b.k == KindString && a.ln == b.ln:
		if err := f.charge(a.ln); err != nil {
			return false, err
		}
	}
	return a.Equal(b), nil
}

func compare(op cmpOp, a, b Value, f *frame) (bool, error) {
	if isIntLike(a) && isIntLike(b) {
		x, y := a.i(), b.i()
		switch op {
		case cmpEq:
			return x == y, nil
		case cmpNe:
			return x != y, nil
		case cmpLt:
			return x < y, nil
		case cmpLe:
			return x <= y, nil
		case cmpGt:
			return x > y, nil
		case cmpGe:
			return x >= y, nil
		}
	}
	switch op {
	case cmpEq, cmpNe:
		if a.k != b.k || a.k != KindList && a.k != KindString {
			return a.Equal(b) == (op == cmpEq), nil // no work to charge
		}
		eq, err := equal(a, b, f)
		return eq == (op == cmpEq), err
	case cmpIn, cmpNotIn:
		in, err := contains(b, a, f)
		return in == (op == cmpIn), err
	}
	c, ok, err := order(cmpText[op], a, b, f)
	if err != nil || !ok {
		return false, err
	}
	switch op {
	case cmpLt:
		return c < 0, nil
	case cmpLe:
		return c <= 0, nil
	case cmpGt:
		return c > 0, nil
	}
	return c >= 0, nil
}

func contains(container, x Value, f *frame) (bool, error) {
	switch container.k {
	case KindList:
		if err := f.charge(container.ln); err != nil {
			return false, err
		}
		if isIntLike(x) { // the hot x in [1, 2, 4]
			for _, e := range container.List() {
				if isIntLike(e) && e.n == x.n || e.k == KindFloat && e.Equal(x) {
					return true, nil
				}
			}
			return false, nil
		}
		if x.k == KindFloat { // no element needs more than Equal
			for _, e := range container.List() {
				if e.Equal(x) {
					return true, nil
				}
			}
			return false, nil
		}
		for _, e := range container.List() {
			if eq, err := equal(e, x, f); err != nil || eq {
				return eq, err
			}
		}
		return false, nil
	case KindString:
		if x.k != KindString {
			return false, errf("TypeError", "'in <string>' requires string as left operand, not %s", x.k)
		}
		if err := f.charge(container.ln); err != nil {
			return false, err
		}
		return strings.Contains(container.Str(), x.Str()), nil
	}
	return false, errf("TypeError", "argument of type '%s' is not iterable", container.k)
}

func unary(op opcode, a Value) (Value, error) {
	switch op {
	case opNot:
		return Bool(!a.Truthy()), nil
	case opNeg:
		if isIntLike(a) {
			if a.i() == math.MinInt64 {
				return Value{}, overflow()
			}
			return Int(-a.i()), nil
		}
		if a.k == KindFloat {
			return Float(-a.f()), nil
		}
		return Value{}, errf("TypeError", "bad operand type for unary -: '%s'", a.k)
	case opPos:
		if isIntLike(a) {
			return Int(a.i()), nil
		}
		if a.k == KindFloat {
			return a, nil
		}
		return Value{}, errf("TypeError", "bad operand type for unary +: '%s'", a.k)
	case opInvert:
		if isIntLike(a) {
			return Int(^a.i()), nil
		}
		return Value{}, errf("TypeError", "bad operand type for unary ~: '%s'", a.k)
	}
	return Value{}, errf("TypeError", "bad unary operator")
}

func index(c, i Value) (Value, error) {
	if c.k != KindList && c.k != KindString {
		return Value{}, errf("TypeError", "'%s' object is not subscriptable", c.k)
	}
	if !isIntLike(i) {
		return Value{}, errf("TypeError", "%s indices must be integers, not %s", c.k, i.k)
	}
	n := i.i()
	if n < 0 {
		n += int64(c.ln)
	}
	if n < 0 || n >= int64(c.ln) {
		return Value{}, errf("IndexError", "%s index out of range", c.k)
	}
	if c.k == KindString {
		return Str(c.Str()[n : n+1]), nil
	}
	return c.List()[n], nil
}

// iterate gives the items of a list or the characters of a str.
func iterate(v Value, f *frame) ([]Value, error) {
	switch v.k {
	case KindList:
		return v.List(), nil
	case KindString:
		s := v.Str()
		if err := f.build("iteration over a str", int64(utf8.RuneCountInString(s))); err != nil {
			return nil, err
		}
		out := make([]Value, 0, len(s))
		for _, r := range s {
			out = append(out, Str(string(r)))
		}
		return out, nil
	}
	return nil, errf("TypeError", "'%s' object is not iterable", v.k)
}

// callBuiltin runs one of the builtins with evaluated arguments, charging
// its work to f. args is not retained.
func callBuiltin(name string, args []Value, f *frame) (Value, error) {
	nargs := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			if lo == hi {
				return errf("TypeError", "%s() takes exactly %d argument(s) (%d given)", name, lo, len(args))
			}
			return errf("TypeError", "%s() takes %d to %d arguments (%d given)", name, lo, hi, len(args))
		}
		return nil
	}
	switch name {
	case "range":
		if err := nargs(1, 3); err != nil {
			return Value{}, err
		}
		var r [3]int64
		for i, a := range args {
			if !isIntLike(a) {
				return Value{}, errf("TypeError", "'%s' object cannot be interpreted as an integer", a.k)
			}
			r[i] = a.i()
		}
		start, stop, step := int64(0), r[0], int64(1)
		if len(args) >= 2 {
			start, stop = r[0], r[1]
		}
		if len(args) == 3 {
			step = r[2]
			if step == 0 {
				return Value{}, errf("ValueError", "range() arg 3 must not be zero")
			}
		}
		var n uint64
		if step > 0 && stop > start {
			n = (uint64(stop-start)-1)/uint64(step) + 1
		} else if step < 0 && start > stop {
			n = (uint64(start-stop)-1)/(-uint64(step)) + 1
		}
		if n > MaxListLen {
			return Value{}, errf("MemoryError", "range() would have %d elements (the limit is %d)", n, MaxListLen)
		}
		if err := f.charge(int(n)); err != nil {
			return Value{}, err
		}
		out := make([]Value, n)
		for i := range out {
			out[i] = Int(start + int64(i)*step)
		}
		return List(out), nil
	case "min", "max":
		if len(args) == 0 {
			return Value{}, errf("TypeError", "%s expected at least 1 argument, got 0", name)
		}
		items := args
		if len(args) == 1 {
			var err error
			if items, err = iterate(args[0], f); err != nil {
				return Value{}, err
			}
			if len(items) == 0 {
				return Value{}, errf("ValueError", "%s() arg is an empty sequence", name)
			}
			if err := f.charge(len(items)); err != nil {
				return Value{}, err
			}
		}
		best := items[0]
		for _, x := range items[1:] {
			var better bool
			var err error
			if name == "max" {
				better, err = compare(cmpGt, x, best, f)
			} else {
				better, err = compare(cmpLt, x, best, f)
			}
			if err != nil {
				return Value{}, err
			}
			if better {
				best = x
			}
		}
		return best, nil
	case "len":
		if err := nargs(1, 1); err != nil {
			return Value{}, err
		}
		a := args[0]
		if a.k == KindString {
			if err := f.charge(a.ln); err != nil {
				return Value{}, err
			}
			return Int(int64(utf8.RuneCountInString(a.Str()))), nil
		}
		if a.k == KindList {
			return Int(int64(a.ln)), nil
		}
		return Value{}, errf("TypeError", "object of type '%s' has no len()", a.k)
	case "abs":
		if err := nargs(1, 1); err != nil {
			return Value{}, err
		}
		a := args[0]
		if a.k == KindFloat {
			return Float(math.Abs(a.f())), nil
		}
		if isIntLike(a) {
			if a.i() < 0 {
				return unary(opNeg, a)
			}
			return Int(a.i()), nil
		}
		return Value{}, errf("TypeError", "bad operand type for abs(): '%s'", a.k)
	case "int":
		if err := nargs(0, 1); err != nil {
			return Value{}, err
		}
		if len(args) == 0 {
			return Int(0), nil
		}
		a := args[0]
		switch a.k {
		case KindInt, KindBool:
			return Int(a.i()), nil
		case KindFloat:
			f := a.f()
			if f != f {
				return Value{}, errf("ValueError", "cannot convert float NaN to integer")
			}
			if math.IsInf(f, 0) {
				return Value{}, errf("OverflowError", "cannot convert float infinity to integer")
			}
			if f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
				return Value{}, overflow()
			}
			return Int(int64(f)), nil
		case KindString:
			if err := f.charge(a.ln); err != nil {
				return Value{}, err
			}
			s := strings.ReplaceAll(strings.TrimSpace(a.Str()), "_", "")
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return Value{}, errf("ValueError", "invalid literal for int() with base 10: %s", Excerpt(a.String()))
			}
			return Int(n), nil
		}
		return Value{}, errf("TypeError", "int() argument must be a string or a number, not '%s'", a.k)
	case "float":
		if err := nargs(0, 1); err != nil {
			return Value{}, err
		}
		if len(args) == 0 {
			return Float(0), nil
		}
		a := args[0]
		if f, ok := a.Float(); ok {
			return Float(f), nil
		}
		if a.k == KindString {
			if err := f.charge(a.ln); err != nil {
				return Value{}, err
			}
			s := strings.ToLower(strings.TrimSpace(a.Str()))
			switch s {
			case "inf", "+inf", "infinity", "+infinity":
				return Float(math.Inf(1)), nil
			case "-inf", "-infinity":
				return Float(math.Inf(-1)), nil
			case "nan", "+nan", "-nan":
				return Float(math.NaN()), nil
			}
			f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
			if err != nil && !strings.Contains(err.Error(), "range") {
				return Value{}, errf("ValueError", "could not convert string to float: %s", Excerpt(a.String()))
			}
			return Float(f), nil
		}
		return Value{}, errf("TypeError", "float() argument must be a string or a number, not '%s'", a.k)
	case "list":
		if err := nargs(0, 1); err != nil {
			return Value{}, err
		}
		if len(args) == 0 {
			return List(nil), nil
		}
		items, err := iterate(args[0], f)
		if err != nil {
			return Value{}, err
		}
		if err := f.build("list()", int64(len(items))); err != nil {
			return Value{}, err
		}
		return List(append([]Value(nil), items...)), nil
	case "sum":
		if err := nargs(1, 2); err != nil {
			return Value{}, err
		}
		items, err := iterate(args[0], f)
		if err != nil {
			return Value{}, err
		}
		if err := f.charge(len(items)); err != nil {
			return Value{}, err
		}
		acc := Int(0)
		if len(args) == 2 {
			acc = args[1]
			if acc.k == KindString {
				return Value{}, errf("TypeError", "sum() can't sum strings [use ''.join(seq) instead]")
			}
		}
		for _, x := range items {
			if acc, err = arith(opAdd, acc, x, f); err != nil {
				return Value{}, err
			}
		}
		return acc, nil
	case "round":
		if err := nargs(1, 2); err != nil {
			return Value{}, err
		}
		return round(args)
	}
	return Value{}, errf("TypeError", "'%s' is not callable", name)
}

func round(args []Value) (Value, error) {
	x := args[0]
	if !x.isNum() {
		return Value{}, errf("TypeError", "type %s doesn't define __round__ method", x.k)
	}
	if len(args) == 1 {
		if isIntLike(x) {
			return Int(x.i()), nil
		}
		f := x.f()
		if f != f {
			return Value{}, errf("ValueError", "cannot convert float NaN to integer")
		}
		if math.IsInf(f, 0) {
			return Value{}, errf("OverflowError", "cannot convert float infinity to integer")
		}
		r := math.RoundToEven(f)
		if r >= 9223372036854775808.0 || r < -9223372036854775808.0 {
			return Value{}, overflow()
		}
		return Int(int64(r)), nil
	}
	nd := args[1]
	if !isIntLike(nd) {
		return Value{}, errf("TypeError", "'%s' object cannot be interpreted as an integer", nd.k)
	}
	n := nd.i()
	if isIntLike(x) {
		if n >= 0 {
			return Int(x.i()), nil
		}
		if n < -18 {
			return Int(0), nil
		}
		p := int64(math.Pow10(int(-n)))
		v := x.i()
		q, r := v/p, v%p
		if r < 0 {
			q, r = q-1, r+p
		}
		if 2*r > p || (2*r == p && q%2 != 0) {
			q++
		}
		return mulInt(q, p)
	}
	f := x.f()
	if math.IsInf(f, 0) || f != f || f == 0 {
		return Float(f), nil
	}
	if n >= 0 {
		if n > 330 {
			return Float(f), nil
		}
		// strconv rounds the exact binary value half-to-even, as CPython's
		// round() does (both work on the exact decimal expansion).
		r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(n), 64), 64)
		return Float(r), nil
	}
	if n < -330 {
		return Float(math.Copysign(0, f)), nil
	}
	p := math.Pow10(int(-n))
	return Float(math.RoundToEven(f/p) * p), nil
}
