package space

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
)

func ints(xs ...int64) []expr.Value {
	out := make([]expr.Value, len(xs))
	for i, x := range xs {
		out[i] = expr.Int(x)
	}
	return out
}

func restr(srcs ...string) []Restriction {
	out := make([]Restriction, len(srcs))
	for i, s := range srcs {
		out[i] = Restriction{Expr: expr.MustParse(s), Source: fmt.Sprintf("Conditions[%d]", i)}
	}
	return out
}

func TestSmallSpace(t *testing.T) {
	params := []Param{{"a", ints(1, 2, 3, 4)}, {"b", ints(1, 2, 4, 8)}}
	s, err := Build(params, restr("a*b <= 8"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// a=1: 4 values of b, a=2: 3, a=3: 2, a=4: 2.
	if s.Len() != 11 || s.RawCount() != 16 {
		t.Fatalf("Len %d RawCount %v, want 11 and 16", s.Len(), s.RawCount())
	}
	// itertools.product order: a slowest.
	wantKeys := []string{"1,1", "1,2", "1,4", "1,8", "2,1", "2,2", "2,4", "3,1", "3,2", "4,1", "4,2"}
	for i, k := range wantKeys {
		if got := s.Key(i); got != k {
			t.Errorf("Key(%d) = %s, want %s", i, got, k)
		}
		if j, ok := s.Lookup(k); !ok || j != i {
			t.Errorf("Lookup(%s) = %d, %v; want %d", k, j, ok, i)
		}
		if j, ok := s.IndexOf(s.Indexes(i)); !ok || j != i {
			t.Errorf("IndexOf(Indexes(%d)) = %d, %v", i, j, ok)
		}
	}
	for _, k := range []string{"3,4", "1", "1,2,3", "5,1", "", "1,2,"} {
		if _, ok := s.Lookup(k); ok {
			t.Errorf("Lookup(%q) found a configuration", k)
		}
	}
	if _, ok := s.IndexOf([]int32{2, 3}); ok { // 3*8 > 8
		t.Error("IndexOf of an invalid configuration")
	}
	if _, ok := s.IndexOf([]int32{0, 9}); ok {
		t.Error("IndexOf out of range")
	}
	v := s.Values(8)
	if v[0].String() != "3" || v[1].String() != "2" {
		t.Errorf("Values(8) = %v", v)
	}
	ix, ok := s.IndexesOf([]expr.Value{expr.Float(2), expr.Int(4)})
	if !ok || ix[0] != 1 || ix[1] != 2 {
		t.Errorf("IndexesOf(2.0, 4) = %v %v", ix, ok)
	}
}

func TestKeyFormatting(t *testing.T) {
	params := []Param{
		{"x", []expr.Value{expr.Float(1.5), expr.Float(16)}},
		{"f", []expr.Value{expr.Bool(true), expr.Bool(false)}},
		{"s", []expr.Value{expr.Str("ab"), expr.Str("c")}},
	}
	s, err := Build(params, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 8 || s.Key(0) != "1.5,True,ab" || s.Key(7) != "16.0,False,c" {
		t.Errorf("Len %d, keys %s .. %s", s.Len(), s.Key(0), s.Key(7))
	}
	if i, ok := s.Lookup("16.0,True,c"); !ok || i != 5 {
		t.Errorf("Lookup = %d, %v; want 5", i, ok)
	}
	// Values containing the separator: keys are looked up whole.
	s2, err := Build([]Param{{"s", []expr.Value{expr.Str("a,b"), expr.Str("c")}}, {"n", ints(1, 2)}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if i, ok := s2.Lookup("a,b,2"); !ok || i != 1 {
		t.Errorf("Lookup(a,b,2) = %d, %v; want 1", i, ok)
	}
}

// Build must agree with a brute-force product filtered by Eval.
func TestAgainstBruteForce(t *testing.T) {
	params := []Param{
		{"bx", ints(16, 32, 48, 64, 128)},
		{"by", ints(1, 2, 4, 8, 16)},
		{"tx", ints(1, 2, 3, 4)},
		{"pad", ints(0, 1)},
		{"sh", ints(0, 1)},
	}
	rs := restr("pad==0 or bx % 32 != 0", "32 <= bx*by <= 256", "sh == 0 or (bx*tx + K) * by < 2048", "pad == 0 or sh != 0")
	consts := expr.MapEnv{"K": expr.Int(14)}
	s, err := Build(params, rs, consts)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var rec func(d int, env expr.MapEnv, key []string)
	rec = func(d int, env expr.MapEnv, key []string) {
		if d == len(params) {
			for _, r := range rs {
				v, err := r.Expr.Eval(env)
				if err != nil {
					t.Fatal(err)
				}
				if !v.Truthy() {
					return
				}
			}
			want = append(want, strings.Join(key, ","))
			return
		}
		for _, v := range params[d].Values {
			env[params[d].Name] = v
			rec(d+1, env, append(key, v.PyStr()))
		}
	}
	rec(0, expr.MapEnv{"K": expr.Int(14)}, nil)
	if s.Len() != len(want) || len(want) == 0 || len(want) == 400 {
		t.Fatalf("Len %d, brute force %d", s.Len(), len(want))
	}
	for i, k := range want {
		if s.Key(i) != k {
			t.Fatalf("configuration %d: %s, brute force %s", i, s.Key(i), k)
		}
	}
}

func TestConstantRestriction(t *testing.T) {
	params := []Param{{"a", ints(1, 2)}}
	s, err := Build(params, restr("N > 10"), expr.MapEnv{"N": expr.Int(4)})
	if err != nil || s.Len() != 0 {
		t.Errorf("false constant restriction: Len %v, %v", s, err)
	}
	s, err = Build(params, restr("N > 1"), expr.MapEnv{"N": expr.Int(4)})
	if err != nil || s.Len() != 2 {
		t.Errorf("true constant restriction: %v", err)
	}
}

// 4^40 raw configurations: the mixed-radix code does not fit in 64 bits.
func TestHugeRawCount(t *testing.T) {
	var params []Param
	var srcs []string
	for i := range 40 {
		params = append(params, Param{fmt.Sprintf("p%d", i), ints(0, 1, 2, 3)})
		if i > 0 {
			srcs = append(srcs, fmt.Sprintf("p%d == %d", i, i%4))
		}
	}
	s, err := Build(params, restr(srcs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 4 || s.RawCount() != 1208925819614629174706176.0 {
		t.Fatalf("Len %d RawCount %g", s.Len(), s.RawCount())
	}
	for i := range 4 {
		if j, ok := s.Lookup(s.Key(i)); !ok || j != i {
			t.Errorf("Lookup(Key(%d)) = %d, %v", i, j, ok)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		params []Param
		rs     []Restriction
		want   string
	}{
		{nil, nil, "space: no tunable parameters"},
		{[]Param{{"a", ints(1)}, {"a", ints(2)}}, nil, `space: duplicate tunable parameter "a"`},
		{[]Param{{"a", nil}}, nil, `space: tunable parameter "a" has no values`},
		{[]Param{{"a", ints(1, 2)}}, restr("a > b"), `space: restriction Conditions[0] ("a > b") reads "b", which is neither a tunable parameter nor a constant`},
		{[]Param{{"a", ints(2, 1, 0)}, {"b", ints(4)}}, restr("b // a > 1"), `space: restriction Conditions[0] ("b // a > 1") failed at {a=0, b=4}: ZeroDivisionError: integer division or modulo by zero`},
		{[]Param{{"a", ints(2, 0)}}, restr("1 / a"), `space: restriction Conditions[0] ("1 / a") failed at {a=0}: ZeroDivisionError: division by zero`},
	}
	for _, c := range cases {
		_, err := Build(c.params, c.rs, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// A subset keeps the chosen configurations, once each, in the space's
// order, and finds only those.
func TestSubset(t *testing.T) {
	params := []Param{{"a", ints(1, 2, 3, 4)}, {"b", ints(1, 2, 4, 8)}}
	s, err := Build(params, restr("a*b <= 8"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subset([]int{9, 0, 4, 9, 6})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1,1", "2,1", "2,4", "4,1"}
	if sub.Len() != len(want) {
		t.Fatalf("Len %d, want %d", sub.Len(), len(want))
	}
	for i, k := range want {
		if got := sub.Key(i); got != k {
			t.Errorf("Key(%d) = %s, want %s", i, got, k)
		}
		if j, ok := sub.Lookup(k); !ok || j != i {
			t.Errorf("Lookup(%s) = %d, %v; want %d", k, j, ok, i)
		}
	}
	if _, ok := sub.Lookup("1,2"); ok {
		t.Error("Lookup found a configuration left out of the subset")
	}
	if sub.RawCount() != 16 || len(sub.Params()) != 2 {
		t.Errorf("RawCount %v, %d parameters", sub.RawCount(), len(sub.Params()))
	}
	if _, err := s.Subset([]int{11}); err == nil {
		t.Error("a number out of range: no error")
	}
	if e, err := s.Subset(nil); err != nil || e.Len() != 0 {
		t.Errorf("empty subset: %v, %v", e, err)
	}
}
