package expr

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// pythonCases: expression -> repr() of its value, as printed by CPython 3.
var pythonCases = []struct{ src, want string }{
	{"7 // 2", "3"},
	{"-7 // 2", "-4"},
	{"7 // -2", "-4"},
	{"-7 // -2", "3"},
	{"7 % 3", "1"},
	{"-7 % 3", "2"},
	{"7 % -3", "-2"},
	{"-7 % -3", "-1"},
	{"-7.5 // 2", "-4.0"},
	{"7.5 % -2", "-0.5"},
	{"-7.5 % 2", "0.5"},
	{"-0.0 % 5", "0.0"},
	{"5.0 // 0.3", "16.0"},
	{"7 / 2", "3.5"},
	{"6 / 3", "2.0"},
	{"2 ** 10", "1024"},
	{"2 ** -1", "0.5"},
	{"(-2) ** 3", "-8"},
	{"-2 ** 2", "-4"},
	{"2 ** 3 ** 2", "512"},
	{"2.0 ** 0.5", "1.4142135623730951"},
	{"10 ** 18", "1000000000000000000"},
	{"1 + True", "2"},
	{"True + True", "2"},
	{"True * 2.5", "2.5"},
	{"3 * 1.5", "4.5"},
	{"0.1 + 0.2", "0.30000000000000004"},
	{"1e16", "1e+16"},
	{"1e-5", "1e-05"},
	{"1.5e300", "1.5e+300"},
	{"123456789.0", "123456789.0"},
	{"1e6", "1000000.0"},
	{"-0.0", "-0.0"},
	{"2.5", "2.5"},
	{"1/3", "0.3333333333333333"},
	{"32 <= 64 * 4 <= 1024", "True"},
	{"32 <= 64 * 32 <= 1024", "False"},
	{"1 < 2 > 1.5", "True"},
	{"1 == 1.0", "True"},
	{"1 == True", "True"},
	{"2 == True", "False"},
	{"'a' == 1", "False"},
	{"1 < 2 < 3 < 2", "False"},
	{"1 and 2", "2"},
	{"0 and 2", "0"},
	{"0 or 'x'", "'x'"},
	{"'' or []", "[]"},
	{"not 0", "True"},
	{"not [1]", "False"},
	{"3 in [1, 2, 3]", "True"},
	{"4 not in [1, 2, 3]", "True"},
	{"1.0 in [1, 2]", "True"},
	{"'b' in 'abc'", "True"},
	{"[1, 2] + [3]", "[1, 2, 3]"},
	{"[0] * 3", "[0, 0, 0]"},
	{"3 * [1, 2]", "[1, 2, 1, 2, 1, 2]"},
	{"[16*i for i in range(1,9)]", "[16, 32, 48, 64, 80, 96, 112, 128]"},
	{"[2**i for i in range(6)]", "[1, 2, 4, 8, 16, 32]"},
	{"[i for i in range(10) if i % 3 == 0]", "[0, 3, 6, 9]"},
	{"[i*j for i in range(1, 4) for j in range(i)]", "[0, 0, 2, 0, 3, 6]"},
	{"[1, 2, 4, 8, 16] + list(range(32, 1024+1, 32))", "[1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480, 512, 544, 576, 608, 640, 672, 704, 736, 768, 800, 832, 864, 896, 928, 960, 992, 1024]"},
	{"list(range(10, 0, -3))", "[10, 7, 4, 1]"},
	{"list(range(0))", "[]"},
	{"max([3, 9, 2])", "9"},
	{"min(4, 2, 8)", "2"},
	{"max(1, 2.5)", "2.5"},
	{"min([2, 2.0])", "2"},
	{"len([1, 2, 3])", "3"},
	{"len('héllo')", "5"},
	{"abs(-3)", "3"},
	{"abs(-2.5)", "2.5"},
	{"int(3.9)", "3"},
	{"int(-3.9)", "-3"},
	{"int('42')", "42"},
	{"float(3)", "3.0"},
	{"float('1.5')", "1.5"},
	{"sum([1, 2, 3])", "6"},
	{"sum([0.5, 1])", "1.5"},
	{"sum(i for i in range(5))", "10"},
	{"round(2.5)", "2"},
	{"round(3.5)", "4"},
	{"round(-2.5)", "-2"},
	{"round(2.675, 2)", "2.67"},
	{"round(1234, -2)", "1200"},
	{"round(1250, -2)", "1200"},
	{"round(1350, -2)", "1400"},
	{"round(1234.5, -2)", "1200.0"},
	{"'yes' if 1 > 2 else 'no'", "'no'"},
	{"1 if True else 2 if False else 3", "1"},
	{"[10, 20, 30][-1]", "30"},
	{"[10, 20, 30][0]", "10"},
	{"'abc'[1]", "'b'"},
	{"[[1, 2], [3]][0][1]", "2"},
	{"'ab' + 'cd'", "'abcd'"},
	{"'ab' * 2", "'abab'"},
	{"6 & 3", "2"},
	{"6 | 3", "7"},
	{"6 ^ 3", "5"},
	{"1 << 10", "1024"},
	{"-17 >> 2", "-5"},
	{"~5", "-6"},
	{"True & False", "False"},
	{"-(-3)", "3"},
	{"+True", "1"},
	{"1 < 2.5", "True"},
	{"2**62 + (2**62 - 1)", "9223372036854775807"},
	{"9007199254740993 == 9007199254740992.0", "False"},
	{"9007199254740993 > 9007199254740992.0", "True"},
	{"[1, 2] < [1, 3]", "True"},
	{"[1, 2] == [1.0, 2.0]", "True"},
	{"'abc' < 'abd'", "True"},
	{"1e308 * 10", "inf"},
	{"float('inf')", "inf"},
	{"-float('inf')", "-inf"},
	{"0.0 * -1", "-0.0"},
	{"round(0.5)", "0"},
	{"round(1.5)", "2"},
	{"10 % 2.5", "0.0"},
	{"-1 % 1e9", "999999999.0"},
	{"2 ** 0.0", "1.0"},
	{"0 ** 0", "1"},
	{"4 ** 0.5", "2.0"},
	{"[x for x in 'ab']", "['a', 'b']"},
	{"max('abc')", "'c'"},
	{"(1 if 0 else 2)", "2"},
	{"[]", "[]"},
	{"not 1 == 2", "True"},
	{"not 1 in [1]", "False"},
	// short-circuit skips the error on the other side
	{"0 and 1/0", "0"},
	{"1 or 1/0", "1"},
	{"1 if True else 1/0", "1"},
}

func TestPythonSemantics(t *testing.T) {
	for _, c := range pythonCases {
		e, err := Parse(c.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.src, err)
			continue
		}
		v, err := e.Eval(MapEnv{})
		if err != nil {
			t.Errorf("Eval(%q): %v", c.src, err)
			continue
		}
		if got := v.String(); got != c.want {
			t.Errorf("%s = %s, want %s", c.src, got, c.want)
		}
	}
}

func TestEnvAndBind(t *testing.T) {
	env := MapEnv{"x": Int(64), "y": Int(4), "ProblemSize": List([]Value{Int(4096), Int(2048)}), "filter_width": List([]Value{Int(3), Int(15), Int(7)})}
	cases := []struct{ src, want string }{
		{"32 <= x*y <= 1024", "True"},
		{"x % 32 == 0 and y > 8", "False"},
		{"ProblemSize[0] * ProblemSize[-1]", "8388608"},
		{"(ProblemSize[0] + max(filter_width) - 1)", "4110"},
		{"x / y", "16.0"},
		{"x // -5", "-13"},
		{"[v * x for v in filter_width if v > y]", "[960, 448]"},
	}
	for _, c := range cases {
		e := MustParse(c.src)
		v, err := e.Eval(env)
		if err != nil || v.String() != c.want {
			t.Errorf("Eval(%q) = %v, %v; want %s", c.src, v, err, c.want)
		}
		// Bound evaluation: x and y in slots, the rest constant.
		slots := map[string]int{"x": 1, "y": 0}
		b, err := e.Bind(func(n string) (int, bool) { i, ok := slots[n]; return i, ok }, env)
		if err != nil {
			t.Fatalf("Bind(%q): %v", c.src, err)
		}
		v, err = b.Eval([]Value{Int(4), Int(64)})
		if err != nil || v.String() != c.want {
			t.Errorf("Bound(%q) = %v, %v; want %s", c.src, v, err, c.want)
		}
	}
	_, err := MustParse("x + z").Eval(env)
	var ne *NameError
	if !errors.As(err, &ne) || ne.Name != "z" {
		t.Errorf("unknown name: got %v, want NameError for z", err)
	}
	_, err = MustParse("x + z").Bind(func(n string) (int, bool) { return 0, n == "x" }, nil)
	if !errors.As(err, &ne) || ne.Name != "z" {
		t.Errorf("Bind unknown name: got %v, want NameError for z", err)
	}
}

func TestRuntimeErrors(t *testing.T) {
	cases := []struct{ src, typ, msg string }{
		{"1/0", "ZeroDivisionError", "division by zero"},
		{"1//0", "ZeroDivisionError", "integer division or modulo by zero"},
		{"5 % 0", "ZeroDivisionError", "integer modulo by zero"},
		{"1.0/0", "ZeroDivisionError", "float division by zero"},
		{"0 ** -1", "ZeroDivisionError", "0.0 cannot be raised to a negative power"},
		{"[1, 2][2]", "IndexError", "list index out of range"},
		{"'a' + 1", "TypeError", "unsupported operand type(s) for +: 'str' and 'int'"},
		{"1 < 'a'", "TypeError", "'<' not supported between instances of 'int' and 'str'"},
		{"max([])", "ValueError", "max() arg is an empty sequence"},
		{"range(1.5)", "TypeError", "'float' object cannot be interpreted as an integer"},
		{"range(1, 5, 0)", "ValueError", "range() arg 3 must not be zero"},
		{"1 in 5", "TypeError", "argument of type 'int' is not iterable"},
		{"int('x')", "ValueError", "invalid literal for int() with base 10: 'x'"},
		{"len(5)", "TypeError", "object of type 'int' has no len()"},
		{"2 ** 63", "OverflowError", "integer result exceeds 64 bits (gtune ints are int64)"},
		{"(-2) ** 0.5", "ValueError", "negative number cannot be raised to a fractional power (complex result)"},
		{"10.0 ** 400", "OverflowError", "(34, 'Numerical result out of range')"},
		{"5[0]", "TypeError", "'int' object is not subscriptable"},
	}
	for _, c := range cases {
		_, err := MustParse(c.src).Eval(MapEnv{})
		var ee *EvalError
		if !errors.As(err, &ee) {
			t.Errorf("%s: got %v, want %s", c.src, err, c.typ)
			continue
		}
		if ee.Type != c.typ || ee.Msg != c.msg {
			t.Errorf("%s: got %s: %s, want %s: %s", c.src, ee.Type, ee.Msg, c.typ, c.msg)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		src string
		col int
		msg string
	}{
		{"a.b", 2, "attribute access is not supported"},
		{"1 +", 4, "unexpected end of expression"},
		{"(1, 2)", 3, "tuples are not supported"},
		{"foo(1)", 1, `"foo" is not callable (only the builtins range, min, max, len, abs, int, float, list, sum, round can be called)`},
		{"a = 1", 3, "assignment is not supported (use == to compare)"},
		{"[1, 2", 6, `expected "]", got end of expression`},
		{"1 2", 3, "unexpected number 2"},
		{"x + 'abc", 5, "unterminated string literal"},
		{"x $ y", 3, `unexpected character '$'`},
		{"", 1, "empty expression"},
		{"   ", 4, "empty expression"},
		{"max(x) if y", 12, `expected "else", got end of expression`},
		{"é.x", 2, "attribute access is not supported"},
		{"lambda x: x", 1, "lambda is not supported"},
		{"x is None", 3, "'is' is not supported (use ==)"},
		{"01", 1, "leading zeros in decimal integer literals are not permitted"},
		{"[i for 3 in x]", 8, "expected a loop variable name, got number 3"},
		{"x[1:2]", 4, "slices are not supported"},
		{"__import__('os')", 1, `"__import__" is not callable (only the builtins range, min, max, len, abs, int, float, list, sum, round can be called)`},
		{"x.__class__", 2, "attribute access is not supported"},
		{"{1: 2}", 1, "dicts and sets are not supported"},
		{"3x", 2, "invalid number literal"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): got %v, want SyntaxError", c.src, err)
			continue
		}
		if se.Column != c.col || se.Msg != c.msg || se.Source != c.src {
			t.Errorf("Parse(%q): column %d %q, want column %d %q", c.src, se.Column, se.Msg, c.col, c.msg)
		}
	}
	_, err := Parse("a + b.c")
	want := "syntax error at column 6: attribute access is not supported\n    a + b.c\n         ^"
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestNames(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{"block_size_x*block_size_y<=1024", []string{"block_size_x", "block_size_y"}},
		{"[i*n for i in range(m) if i > k]", []string{"k", "m", "n"}},
		{"max(filter_width) + len(x) + max(filter_width)", []string{"filter_width", "x"}},
		{"[i for i in i]", []string{"i"}},
		{"[j for i in range(3) for j in range(i)]", []string{}},
		{"ProblemSize[0]", []string{"ProblemSize"}},
		{"max", []string{"max"}},
		{"1 + 2", []string{}},
		{"[i for i in range(3)] + [i]", []string{"i"}},
	}
	for _, c := range cases {
		got := MustParse(c.src).Names()
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Names(%q) = %v, want %v", c.src, got, c.want)
		}
	}
}

func TestValues(t *testing.T) {
	if !Int(1).Equal(Float(1)) || !Bool(true).Equal(Int(1)) || Str("1").Equal(Int(1)) {
		t.Error("Python == across numeric kinds")
	}
	if Float(math.NaN()).Equal(Float(math.NaN())) {
		t.Error("nan == nan must be False")
	}
	if got := List([]Value{Int(1), Float(2.5), Bool(false), Str("it's")}).String(); got != `[1, 2.5, False, "it's"]` {
		t.Errorf("repr = %s", got)
	}
	if got := Str("a'b\"").String(); got != `'a\'b"'` {
		t.Errorf("repr = %s", got)
	}
	if Str("abc").PyStr() != "abc" || Float(16).PyStr() != "16.0" || Bool(true).PyStr() != "True" {
		t.Error("PyStr")
	}
	if _, ok := Float(3).Int(); ok {
		t.Error("Float.Int must not truncate")
	}
	if f, ok := Bool(true).Float(); !ok || f != 1 {
		t.Error("bool is numeric")
	}
	for _, c := range []struct {
		in   any
		want string
	}{
		{16, "16"}, {int64(-3), "-3"}, {uint8(7), "7"}, {2.5, "2.5"}, {16.0, "16.0"}, {true, "True"}, {"x", "'x'"},
		{[]any{1, 2.0, "a"}, "[1, 2.0, 'a']"},
	} {
		v, err := FromGo(c.in)
		if err != nil || v.String() != c.want {
			t.Errorf("FromGo(%#v) = %v, %v; want %s", c.in, v, err, c.want)
		}
	}
	if _, err := FromGo(nil); err == nil {
		t.Error("FromGo(nil) must fail")
	}
	if _, err := FromGo(map[string]any{}); err == nil {
		t.Error("FromGo(map) must fail")
	}
	if _, err := FromGo(uint64(math.MaxUint64)); err == nil {
		t.Error("FromGo(huge uint) must fail")
	}
}

// The scalar path must not allocate: space construction evaluates
// restrictions millions of times.
func TestScalarNoAlloc(t *testing.T) {
	e := MustParse("(bx*tx + t * 2) * (by*ty + t * 2) * (2+sh) * 4 <= 49152 and t % u == 0 and 32 <= bx*by <= 1024")
	names := e.Names()
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	b, err := e.Bind(func(n string) (int, bool) { i, ok := idx[n]; return i, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]Value, len(names))
	for i := range vals {
		vals[i] = Int(int64(i + 1))
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := b.Truthy(vals); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("scalar evaluation allocates %v times, want 0", allocs)
	}
}

func BenchmarkBoundHotspotRestriction(b *testing.B) {
	e := MustParse("(block_size_x*tile_size_x+ temporal_tiling_factor * 2) * (block_size_y*tile_size_y+ temporal_tiling_factor * 2) * (2+sh_power) * 4 <= 49152")
	names := e.Names()
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	bd, _ := e.Bind(func(n string) (int, bool) { i, ok := idx[n]; return i, ok }, nil)
	vals := []Value{Int(32), Int(4), Int(1), Int(2), Int(3), Int(2)}
	b.ReportAllocs()
	for b.Loop() {
		bd.Truthy(vals)
	}
}

func BenchmarkBoundGemmRestriction(b *testing.B) {
	e := MustParse("KWG % ((MDIMC * NDIMC)/MDIMA) == 0")
	bd, _ := e.Bind(func(n string) (int, bool) {
		return map[string]int{"KWG": 0, "MDIMC": 1, "NDIMC": 2, "MDIMA": 3}[n], true
	}, nil)
	vals := []Value{Int(32), Int(16), Int(8), Int(16)}
	b.ReportAllocs()
	for b.Loop() {
		bd.Truthy(vals)
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		Parse("use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024")
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range pythonCases {
		f.Add(c.src)
	}
	for _, s := range []string{"a.b", "(((", "[i for i in range(3) if", "'\\x4", "1e", "0x", "x[", "not not not", "1 if 2", "max(i for i in x)",
		"range(10**12)", "[0]*10**10", "sum([[0]]*99, [])", "[0 for i in range(99) for j in range(99)]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkExpr(t, src, len(src) <= 200)
	})
}

// FuzzNested repeats fuzzed fragments around a core, up to a little over
// MaxSourceLen: long chains and deep nesting of every kind, which must be
// refused cleanly or parsed, compiled and evaluated without a panic or a
// stack overflow.
func FuzzNested(f *testing.F) {
	for _, s := range []struct {
		prefix, core, suffix string
		n                    uint32
	}{
		{"(", "1", ")", 100_000}, {"[", "", "]", 999}, {"not ", "x", "", 100_000}, {"-(", "1", ")", 500},
		{"a if b else ", "c", "", 80_000}, {"1+", "1", "", 400_000}, {"", "x", "[0]", 1000}, {"abs(", "1", ")", 998},
		{"", "[0", " for a in x", 999}, {"", "x", " < x", 100_000}, {"[", "1", ",]", 1000}, {"2**", "2", "", 5},
		{"", "[i for i in range(2**20)]", " + [0]", 4}, {"sum(", "range(2**22)", ", 0)", 3},
	} {
		f.Add(s.prefix, s.core, s.suffix, s.n)
	}
	f.Fuzz(func(t *testing.T, prefix, core, suffix string, n uint32) {
		k := 0
		if unit := len(prefix) + len(suffix); unit > 0 {
			k = min(int(n%400_000), (MaxSourceLen+64-len(core))/unit)
		}
		src := strings.Repeat(prefix, k) + core + strings.Repeat(suffix, k)
		checkExpr(t, src, true)
	})
}

// checkExpr parses src and, if asked, evaluates it with Eval and with a
// Bound program: whatever src is, there must be no panic, errors must be of
// the documented types and short, an accepted tree must be within MaxDepth,
// and the two evaluations must agree.
func checkExpr(t *testing.T, src string, evaluate bool) {
	e, err := Parse(src)
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%s) error %T, want *SyntaxError", Excerpt(src), err)
		}
		if se.Column < 1 || se.Column > utf8.RuneCountInString(src)+1 {
			t.Fatalf("Parse(%s): column %d out of range", Excerpt(src), se.Column)
		}
		if msg := se.Error(); len(msg) > 1024 {
			t.Fatalf("Parse(%s): error of %d bytes", Excerpt(src), len(msg))
		}
		// The depth of refused input is measured on whatever tokens it has.
		if lx := (&lexer{src: src}); len(src) <= MaxSourceLen && lx.run() == nil && measureDepth(lx.toks) < 0 {
			t.Fatal("negative depth")
		}
		return
	}
	if e.root.h > MaxDepth {
		t.Fatalf("Parse(%s): accepted depth %d", Excerpt(src), e.root.h)
	}
	lx := &lexer{src: src}
	if lx.run() != nil {
		t.Fatalf("Parse(%s) accepted what the lexer refuses", Excerpt(src))
	}
	if d := measureDepth(lx.toks); d != e.root.h {
		t.Fatalf("measureDepth(%s) = %d, parser's depth %d", Excerpt(src), d, e.root.h)
	}
	_ = e.Tree()
	if !evaluate {
		return
	}
	names := e.Names()
	env, vals := MapEnv{}, make([]Value, len(names))
	for i, n := range names {
		env[n] = Int(3)
		vals[i] = Int(3)
	}
	v, err := e.Eval(env)
	b, berr := e.Bind(func(n string) (int, bool) { i, ok := slices.BinarySearch(names, n); return i, ok }, nil)
	if berr != nil {
		t.Fatalf("Bind(%s): %v", Excerpt(src), berr)
	}
	bv, berr := b.Eval(vals)
	for _, err := range []error{err, berr} {
		var ee *EvalError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("Eval(%s) error %T %v, want *EvalError", Excerpt(src), err, err)
		}
		if err != nil && (len(ee.Msg) > 300 || strings.Contains(ee.Msg, "\n")) {
			t.Fatalf("Eval(%s): error %.400q", Excerpt(src), ee.Msg)
		}
	}
	if (err == nil) != (berr == nil) || err != nil && err.Error() != berr.Error() {
		t.Fatalf("%s: Eval gives %v, Bound.Eval %v", Excerpt(src), err, berr)
	}
	if err == nil && v.Kind() != KindList && v.String() != bv.String() {
		t.Fatalf("%s: Eval gives %s, Bound.Eval %s", Excerpt(src), Excerpt(v.String()), Excerpt(bv.String()))
	}
}

func TestGoValue(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want any
	}{
		{Int(16), int64(16)},
		{Float(1.5), 1.5},
		{Bool(true), true},
		{Str("abc"), "abc"},
		{List([]Value{Int(1), Str("x")}), "[1, 'x']"},
	} {
		if got := c.v.GoValue(); got != c.want {
			t.Errorf("%s.GoValue() = %#v, want %#v", c.v, got, c.want)
		}
	}
}

// A membership restriction: the list operand takes the non-scalar path.
func BenchmarkBoundInList(b *testing.B) {
	e := MustParse("x in [1, 2, 4, 8, 16, 32, 64, 128] and y != 'double'")
	bd, _ := e.Bind(func(n string) (int, bool) { return map[string]int{"x": 0, "y": 1}[n], true }, nil)
	vals := []Value{Int(64), Str("float")}
	b.ReportAllocs()
	for b.Loop() {
		bd.Truthy(vals)
	}
}

// A comprehension that depends on a slot: evaluated per call, with locals.
func BenchmarkBoundComprehension(b *testing.B) {
	e := MustParse("sum([i * x for i in range(64) if i % 3 == 0])")
	bd, _ := e.Bind(func(n string) (int, bool) { return 0, n == "x" }, nil)
	vals := []Value{Int(5)}
	b.ReportAllocs()
	for b.Loop() {
		bd.Eval(vals)
	}
}
