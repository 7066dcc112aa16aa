package expr

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// EvalError is a run-time error of an expression, named like the Python
// exception it stands for (ZeroDivisionError, TypeError, ValueError,
// IndexError, OverflowError).
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

func (e *NameError) Error() string { return fmt.Sprintf("NameError: name '%s' is not defined", e.Name) }

func errf(typ, format string, a ...any) error {
	return &EvalError{Type: typ, Msg: fmt.Sprintf(format, a...)}
}

// maxListLen bounds lists built by range, repetition and comprehensions so a
// mistyped expression cannot exhaust memory.
const maxListLen = 1 << 22

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
// semantics.
func arith(op opcode, a, b Value) (Value, error) {
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
			return Str(a.Str() + b.Str()), nil
		}
		if a.k == KindList && b.k == KindList {
			x, y := a.List(), b.List()
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
			if n > 0 && int64(a.ln) > maxListLen/n {
				return Value{}, errf("MemoryError", "repetition result longer than %d", maxListLen)
			}
			if a.k == KindString {
				return Str(strings.Repeat(a.Str(), int(n))), nil
			}
			x := a.List()
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
func order(sym string, a, b Value) (int, bool, error) {
	if a.isNum() && b.isNum() {
		c, ok := cmpNum(a, b)
		return c, ok, nil
	}
	if a.k == KindString && b.k == KindString {
		return strings.Compare(a.Str(), b.Str()), true, nil
	}
	if a.k == KindList && b.k == KindList {
		x, y := a.List(), b.List()
		for i := 0; i < len(x) && i < len(y); i++ {
			if !x[i].Equal(y[i]) {
				return order(sym, x[i], y[i])
			}
		}
		return cmp3(int64(len(x)), int64(len(y))), true, nil
	}
	return 0, false, errf("TypeError", "'%s' not supported between instances of '%s' and '%s'", sym, a.k, b.k)
}

func compare(op cmpOp, a, b Value) (bool, error) {
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
	case cmpEq:
		return a.Equal(b), nil
	case cmpNe:
		return !a.Equal(b), nil
	case cmpIn, cmpNotIn:
		in, err := contains(b, a)
		return in == (op == cmpIn), err
	}
	c, ok, err := order(cmpText[op], a, b)
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

func contains(container, x Value) (bool, error) {
	switch container.k {
	case KindList:
		for _, e := range container.List() {
			if e.Equal(x) {
				return true, nil
			}
		}
		return false, nil
	case KindString:
		if x.k != KindString {
			return false, errf("TypeError", "'in <string>' requires string as left operand, not %s", x.k)
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
func iterate(v Value) ([]Value, error) {
	switch v.k {
	case KindList:
		return v.List(), nil
	case KindString:
		s := v.Str()
		out := make([]Value, 0, len(s))
		for _, r := range s {
			out = append(out, Str(string(r)))
		}
		return out, nil
	}
	return nil, errf("TypeError", "'%s' object is not iterable", v.k)
}

// callBuiltin runs one of the builtins with evaluated arguments. args is not
// retained.
func callBuiltin(name string, args []Value) (Value, error) {
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
		var n int64
		if step > 0 && stop > start {
			n = int64((uint64(stop-start)-1)/uint64(step)) + 1
		} else if step < 0 && start > stop {
			n = int64((uint64(start-stop)-1)/uint64(-step)) + 1
		}
		if n > maxListLen {
			return Value{}, errf("MemoryError", "range() longer than %d", maxListLen)
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
			if items, err = iterate(args[0]); err != nil {
				return Value{}, err
			}
			if len(items) == 0 {
				return Value{}, errf("ValueError", "%s() arg is an empty sequence", name)
			}
		}
		best := items[0]
		for _, x := range items[1:] {
			var better bool
			var err error
			if name == "max" {
				better, err = compare(cmpGt, x, best)
			} else {
				better, err = compare(cmpLt, x, best)
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
			return Int(int64(len([]rune(a.Str())))), nil
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
			s := strings.ReplaceAll(strings.TrimSpace(a.Str()), "_", "")
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return Value{}, errf("ValueError", "invalid literal for int() with base 10: %s", a.String())
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
				return Value{}, errf("ValueError", "could not convert string to float: %s", a.String())
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
		items, err := iterate(args[0])
		if err != nil {
			return Value{}, err
		}
		return List(append([]Value(nil), items...)), nil
	case "sum":
		if err := nargs(1, 2); err != nil {
			return Value{}, err
		}
		items, err := iterate(args[0])
		if err != nil {
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
			if acc, err = arith(opAdd, acc, x); err != nil {
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
