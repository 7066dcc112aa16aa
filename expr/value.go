package expr

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Kind is the Python type of a Value.
type Kind uint8

// The kinds of values. The zero Value has KindInvalid; no expression ever
// produces one.
const (
	KindInvalid Kind = iota
	KindInt          // Python int, held as int64 (see package doc on overflow)
	KindFloat        // Python float (IEEE 754 binary64)
	KindBool         // Python bool; numeric (0/1) in arithmetic and comparisons
	KindString       // Python str
	KindList         // Python list (immutable here: no operation mutates one)
)

// String gives the Python type name ("int", "float", "bool", "str", "list").
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	case KindString:
		return "str"
	case KindList:
		return "list"
	}
	return "invalid"
}

// Value is one Python value. It is 32 bytes, compared and copied by value,
// and needs no allocation for ints, floats and bools: n holds the int64 or
// the float64 bits, p/ln the data and length of a string or list. Lists are
// never mutated after construction, so sharing their backing array is safe.
type Value struct {
	k  Kind
	n  uint64
	p  unsafe.Pointer
	ln int
}

// Int makes a Python int.
func Int(i int64) Value { return Value{k: KindInt, n: uint64(i)} }

// Float makes a Python float.
func Float(f float64) Value { return Value{k: KindFloat, n: math.Float64bits(f)} }

// Bool makes a Python bool.
func Bool(b bool) Value {
	if b {
		return Value{k: KindBool, n: 1}
	}
	return Value{k: KindBool}
}

// Str makes a Python str.
func Str(s string) Value {
	return Value{k: KindString, p: unsafe.Pointer(unsafe.StringData(s)), ln: len(s)}
}

// List makes a Python list. The slice is kept, not copied: the caller must
// not modify it afterwards.
func List(vs []Value) Value {
	return Value{k: KindList, p: unsafe.Pointer(unsafe.SliceData(vs)), ln: len(vs)}
}

// Kind gives the value's type.
func (v Value) Kind() Kind { return v.k }

// Int gives the value of an int or bool (True is 1). ok is false for every
// other kind, floats included: a float is never silently truncated.
func (v Value) Int() (int64, bool) {
	if v.k == KindInt || v.k == KindBool {
		return int64(v.n), true
	}
	return 0, false
}

// Float gives the value of any numeric kind (int, float, bool) as float64.
func (v Value) Float() (float64, bool) {
	switch v.k {
	case KindFloat:
		return math.Float64frombits(v.n), true
	case KindInt, KindBool:
		return float64(int64(v.n)), true
	}
	return 0, false
}

// Truthy is Python's truth value: non-zero numbers, non-empty strings and
// lists, True.
func (v Value) Truthy() bool {
	switch v.k {
	case KindInt, KindBool:
		return v.n != 0
	case KindFloat:
		return math.Float64frombits(v.n) != 0
	case KindString, KindList:
		return v.ln != 0
	}
	return false
}

// List gives the elements of a list (nil for other kinds). The slice is
// shared: do not modify it.
func (v Value) List() []Value {
	if v.k != KindList || v.ln == 0 {
		return nil
	}
	return unsafe.Slice((*Value)(v.p), v.ln)
}

// Str gives the contents of a str ("" for other kinds).
func (v Value) Str() string {
	if v.k != KindString || v.ln == 0 {
		return ""
	}
	return unsafe.String((*byte)(v.p), v.ln)
}

func (v Value) isNum() bool { return v.k == KindInt || v.k == KindFloat || v.k == KindBool }
func (v Value) f() float64  { return math.Float64frombits(v.n) }
func (v Value) i() int64    { return int64(v.n) }

// String is Python's repr(): 16, 1.5, 1e+16, True, 'abc', [1, 2.0, 'x'].
func (v Value) String() string {
	switch v.k {
	case KindInt:
		return strconv.FormatInt(v.i(), 10)
	case KindFloat:
		return formatFloat(v.f())
	case KindBool:
		if v.n != 0 {
			return "True"
		}
		return "False"
	case KindString:
		return quote(v.Str())
	case KindList:
		var b strings.Builder
		b.WriteByte('[')
		for i, e := range v.List() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.String())
		}
		b.WriteByte(']')
		return b.String()
	}
	return "<invalid>"
}

// PyStr is Python's str(): like String but a str is given without quotes.
// It is what Kernel Tuner writes into cache keys.
func (v Value) PyStr() string {
	if v.k == KindString {
		return v.Str()
	}
	return v.String()
}

// GoValue gives the value as a plain Go value, for JSON and the results
// database: int64, float64, bool or string; a list as its String().
func (v Value) GoValue() any {
	switch v.k {
	case KindInt:
		return v.i()
	case KindFloat:
		return v.f()
	case KindBool:
		return v.Truthy()
	case KindString:
		return v.Str()
	}
	return v.String()
}

// Equal is Python's ==: numbers compare by value across int, float and bool
// (1 == 1.0 == True), strings by contents, lists element-wise; values of
// other mixed kinds are unequal.
func (v Value) Equal(w Value) bool {
	if v.isNum() && w.isNum() {
		if (v.k == KindInt || v.k == KindBool) && (w.k == KindInt || w.k == KindBool) {
			return v.n == w.n
		}
		c, ok := cmpNum(v, w)
		return ok && c == 0
	}
	if v.k != w.k {
		return false
	}
	switch v.k {
	case KindString:
		return v.Str() == w.Str()
	case KindList:
		a, b := v.List(), w.List()
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !a[i].Equal(b[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// formatFloat writes f as Python's repr does: the shortest digits that
// round-trip, in positional notation when the decimal exponent is in
// [-4, 16), else in exponent notation with at least two exponent digits.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	epos := strings.IndexByte(s, 'e')
	mant, exp := s[:epos], s[epos+1:]
	e, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if e >= -4 && e < 16 {
		if e < 0 {
			out = "0." + strings.Repeat("0", -e-1) + digits
		} else if len(digits) <= e+1 {
			out = digits + strings.Repeat("0", e+1-len(digits)) + ".0"
		} else {
			out = digits[:e+1] + "." + digits[e+1:]
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if e < 0 {
			sign, e = "-", -e
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, e)
	}
	if neg {
		return "-" + out
	}
	return out
}

// quote is Python's repr of a str: single quotes unless the string holds a
// single quote and no double quote.
func quote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// FromGo converts a value decoded from JSON or YAML: bool; any Go integer
// type; float32/float64; json.Number (an int when it parses as one, else a
// float); string; []any (recursively). A float64 is kept a float even when
// integral — decode JSON with UseNumber to keep the file's 16 an int. nil,
// maps and other types are an error.
func FromGo(x any) (Value, error) {
	switch t := x.(type) {
	case Value:
		return t, nil
	case bool:
		return Bool(t), nil
	case int:
		return Int(int64(t)), nil
	case int8:
		return Int(int64(t)), nil
	case int16:
		return Int(int64(t)), nil
	case int32:
		return Int(int64(t)), nil
	case int64:
		return Int(t), nil
	case uint:
		return fromUint(uint64(t))
	case uint8:
		return Int(int64(t)), nil
	case uint16:
		return Int(int64(t)), nil
	case uint32:
		return Int(int64(t)), nil
	case uint64:
		return fromUint(t)
	case float32:
		return Float(float64(t)), nil
	case float64:
		return Float(t), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return Int(i), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return Value{}, fmt.Errorf("expr: number %q out of range", string(t))
		}
		return Float(f), nil
	case string:
		return Str(t), nil
	case []any:
		out := make([]Value, len(t))
		for i, e := range t {
			v, err := FromGo(e)
			if err != nil {
				return Value{}, err
			}
			out[i] = v
		}
		return List(out), nil
	case []Value:
		return List(t), nil
	case nil:
		return Value{}, fmt.Errorf("expr: null has no Python value here")
	}
	return Value{}, fmt.Errorf("expr: cannot convert %T to a Python value", x)
}

func fromUint(u uint64) (Value, error) {
	if u > math.MaxInt64 {
		return Value{}, fmt.Errorf("expr: integer %d exceeds 64-bit signed range", u)
	}
	return Int(int64(u)), nil
}
