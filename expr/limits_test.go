package expr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkShortError checks that a limit's error is short: one line of
// message, and an Error() that does not echo a long input.
func checkShortError(t *testing.T, src string, err error) {
	t.Helper()
	msg := err.Error()
	var se *SyntaxError
	var ee *EvalError
	switch {
	case errors.As(err, &se):
		msg = se.Msg
		if len(err.Error()) > 400 {
			t.Errorf("%s: Error() is %d bytes long: %.200q", Excerpt(src), len(err.Error()), err.Error())
		}
	case errors.As(err, &ee):
		msg = ee.Msg
	}
	if strings.Contains(msg, "\n") || len(msg) > 200 {
		t.Errorf("%s: message not one short line: %q", Excerpt(src), msg)
	}
}

func syntaxError(t *testing.T, src string, err error) *SyntaxError {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse(%s): got %v, want a *SyntaxError", Excerpt(src), err)
	}
	if se.Column < 1 || se.Column > utf8.RuneCountInString(src)+1 {
		t.Errorf("Parse(%s): column %d out of range", Excerpt(src), se.Column)
	}
	checkShortError(t, src, err)
	return se
}

func depthMsg(d int) string {
	return fmt.Sprintf("expression nested too deeply: depth %d (the limit is %d)", d, MaxDepth)
}

// The user report: a sum of 400,000 terms ended gtune with a fatal stack
// overflow. It is refused in well under a second, at the operator that
// reaches the limit.
func TestLongSumRefused(t *testing.T) {
	for _, term := range []string{"1", "x"} {
		src := strings.Repeat(term+"+", 399_999) + term
		start := time.Now()
		_, err := Parse(src)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Parse of 400,000 terms took %v", d)
		}
		se := syntaxError(t, src, err)
		if se.Msg != depthMsg(400_000) || se.Column != 2*MaxDepth {
			t.Errorf("400,000 terms of %s: column %d %q, want column %d %q", term, se.Column, se.Msg, 2*MaxDepth, depthMsg(400_000))
		}
	}
}

// A chain of MaxDepth operands is accepted and evaluates; one more is not.
func TestChainAtLimit(t *testing.T) {
	e, err := Parse(strings.Repeat("1+", MaxDepth-1) + "1")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := e.Eval(MapEnv{}); err != nil || v.String() != strconv.Itoa(MaxDepth) {
		t.Errorf("sum of %d ones = %v, %v", MaxDepth, v, err)
	}
	e = MustParse(strings.Repeat("x+", MaxDepth-1) + "x")
	b, err := e.Bind(func(string) (int, bool) { return 0, true }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.Eval([]Value{Int(3)}); err != nil || v.String() != strconv.Itoa(3*MaxDepth) {
		t.Errorf("sum of %d x = %v, %v", MaxDepth, v, err)
	}
	if tr := e.Tree(); tr.Op != "+" || len(tr.Kids) != 2 {
		t.Errorf("Tree() = %+v", tr)
	}
	src := strings.Repeat("x+", MaxDepth) + "x"
	_, err = Parse(src)
	if se := syntaxError(t, src, err); se.Msg != depthMsg(MaxDepth+1) {
		t.Errorf("%d terms: %q, want %q", MaxDepth+1, se.Msg, depthMsg(MaxDepth+1))
	}
}

// nested is an expression shape repeated n times, with its depth and the
// value it evaluates to when accepted.
type nested struct {
	name  string
	src   func(n int) string
	depth func(n int) int
	want  func(n int) string
	big   int // a count that is far too deep but fits in MaxSourceLen
}

func rep(s string, n int) string { return strings.Repeat(s, n) }

var nestedShapes = []nested{
	{"parentheses", func(n int) string { return rep("(", n) + "7" + rep(")", n) },
		func(n int) int { return n + 1 }, func(int) string { return "7" }, 100_000},
	{"brackets", func(n int) string { return rep("[", n) + rep("]", n) },
		func(n int) int { return n }, func(n int) string { return rep("[", n) + rep("]", n) }, 100_000},
	{"not", func(n int) string { return rep("not ", n) + "1" },
		func(n int) int { return n + 1 }, func(n int) string { return map[bool]string{true: "True", false: "False"}[n%2 == 0] }, 100_000},
	{"unary minus", func(n int) string { return rep("-", n) + "1" },
		func(n int) int { return n + 1 }, func(n int) string { return map[bool]string{true: "1", false: "-1"}[n%2 == 0] }, 100_000},
	{"negated parentheses", func(n int) string { return rep("-(", n) + "1" + rep(")", n) },
		func(n int) int { return 2*n + 1 }, func(n int) string { return map[bool]string{true: "1", false: "-1"}[n%2 == 0] }, 100_000},
	// 12 bytes a level: 1 MiB holds 87,000.
	{"conditional", func(n int) string { return rep("a if b else ", n) + "c" },
		func(n int) int { return n + 1 }, func(int) string { return "2" }, 80_000},
	{"power", func(n int) string { return rep("1**", n) + "1" },
		func(n int) int { return n + 1 }, func(int) string { return "1" }, 100_000},
	{"index", func(n int) string { return "deep" + rep("[0]", n) },
		func(n int) int { return n + 1 }, func(int) string { return "5" }, 100_000},
	{"and", func(n int) string { return rep("1 and ", n) + "2" },
		func(n int) int { return n + 1 }, func(int) string { return "2" }, 100_000},
	{"calls", func(n int) string { return rep("abs(", n) + "-3" + rep(")", n) },
		func(n int) int { return n + 2 }, func(int) string { return "3" }, 100_000},
	{"comprehension clauses", func(n int) string { return "[0" + rep(" for a in x", n) + "]" },
		func(n int) int { return n + 1 }, func(int) string { return "[0]" }, 90_000},
	{"brackets and parentheses", func(n int) string { return rep("[(", n) + "1" + rep(")]", n) },
		func(n int) int { return 2*n + 1 }, func(n int) string { return rep("[", n) + "1" + rep("]", n) }, 100_000},
}

// Deeply nested input of every shape is refused with its depth, and the
// deepest accepted one parses, compiles and evaluates right.
func TestDeepNesting(t *testing.T) {
	// deep[0][0]...[0], as deep as accepted, is 5.
	deep := Int(5)
	for range MaxDepth - 1 {
		deep = List([]Value{deep})
	}
	env := MapEnv{"a": Int(1), "b": Int(0), "c": Int(2), "x": List([]Value{Int(1)}), "deep": deep}
	for _, s := range nestedShapes {
		src := s.src(s.big)
		start := time.Now()
		_, err := Parse(src)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: Parse took %v", s.name, d)
		}
		if se := syntaxError(t, src, err); se.Msg != depthMsg(s.depth(s.big)) {
			t.Errorf("%s ×%d: %q, want %q", s.name, s.big, se.Msg, depthMsg(s.depth(s.big)))
		}

		n := 1
		for s.depth(n+1) <= MaxDepth {
			n++
		}
		src = s.src(n)
		e, err := Parse(src)
		if err != nil {
			t.Errorf("%s ×%d (depth %d): %v", s.name, n, s.depth(n), Excerpt(err.Error()))
			continue
		}
		if e.root.h != s.depth(n) {
			t.Errorf("%s ×%d: depth %d, want %d", s.name, n, e.root.h, s.depth(n))
		}
		v, err := e.Eval(env)
		if want := s.want(n); err != nil || v.String() != want {
			t.Errorf("%s ×%d = %s, %v; want %s", s.name, n, Excerpt(v.String()), err, Excerpt(want))
		}
		_ = e.Tree()

		src = s.src(n + 1)
		_, err = Parse(src)
		if se := syntaxError(t, src, err); se.Msg != depthMsg(s.depth(n+1)) {
			t.Errorf("%s ×%d: %q, want %q", s.name, n+1, se.Msg, depthMsg(s.depth(n+1)))
		}
	}
}

// A chained comparison is one node at any length.
func TestLongComparisonChain(t *testing.T) {
	src := rep("x < ", 100_000) + "9"
	v, err := MustParse(src).Eval(MapEnv{"x": Int(1)})
	if err != nil || v.String() != "False" {
		t.Errorf("x < x < ... < 9 = %v, %v", v, err)
	}
}

func TestSourceTooLong(t *testing.T) {
	e, err := Parse(rep(" ", MaxSourceLen-1) + "1")
	if err != nil {
		t.Fatalf("source of MaxSourceLen bytes: %v", Excerpt(err.Error()))
	}
	if v, _ := e.Eval(MapEnv{}); v.String() != "1" {
		t.Errorf("got %v", v)
	}
	for _, src := range []string{rep(" ", MaxSourceLen) + "1", rep("é", MaxSourceLen/2+1)} {
		_, err := Parse(src)
		se := syntaxError(t, src, err)
		want := fmt.Sprintf("expression too long: %d bytes (the limit is %d)", len(src), MaxSourceLen)
		col := utf8.RuneCountInString(src[:MaxSourceLen]) + 1
		if se.Msg != want || se.Column != col {
			t.Errorf("column %d %q, want column %d %q", se.Column, se.Msg, col, want)
		}
	}
}

// Literal lists of real specs' sizes (and far beyond) are fine.
func TestLongLiteralList(t *testing.T) {
	for _, n := range []int{10_000, 100_000} {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			fmt.Fprintf(&b, "%d, ", i)
		}
		b.WriteString("]")
		e, err := Parse(b.String())
		if err != nil {
			t.Fatalf("list of %d: %v", n, Excerpt(err.Error()))
		}
		v, err := e.Eval(MapEnv{})
		if err != nil || len(v.List()) != n || v.List()[n-1].String() != strconv.Itoa(n-1) {
			t.Errorf("list of %d: %d elements, %v", n, len(v.List()), err)
		}
		s, err := MustParse("sum(" + b.String() + ")").Eval(MapEnv{})
		if want := strconv.Itoa(n * (n - 1) / 2); err != nil || s.String() != want {
			t.Errorf("sum of list of %d = %v, %v; want %s", n, s, err, want)
		}
	}
}

// Evaluation limits: sizes are refused before anything is built, and work
// that nesting or repetition would multiply is cut at MaxSteps.
func TestEvalLimits(t *testing.T) {
	steps := fmt.Sprintf("steps so far (elements built or visited, comprehension iterations); the limit is %d", MaxSteps)
	big := List(make([]Value, MaxListLen+1))
	for i := range big.List() {
		big.List()[i] = Int(0)
	}
	cases := []struct{ src, msg string }{
		{"range(10**12)", "range() would have 1000000000000 elements (the limit is 4194304)"},
		{"range(-2**62*2, 2**62-1+2**62)", "range() would have 18446744073709551615 elements (the limit is 4194304)"},
		{"[0]*10**10", "list repetition would have 10000000000 elements (the limit is 4194304)"},
		{"'ab'*10**10", "str repetition would have 20000000000 bytes (the limit is 4194304)"},
		{"[0, 1]*2**62", "list repetition would have 2 × 4611686018427387904 elements (the limit is 4194304)"},
		{"[0]*2**21 + [0]*2**21 + [1]", "list concatenation would have 4194305 elements (the limit is 4194304)"},
		{"'a'*2**22 + 'b'", "str concatenation would have 4194305 bytes (the limit is 4194304)"},
		{"list(big)", "list() would have 4194305 elements (the limit is 4194304)"},
		{"[0 for i in big]", "list comprehension would have more than 4194304 elements (the limit is 4194304)"},
		{"[0 for i in range(2**22) for j in range(2**22) if 0]", steps},
		{"sum([[0]]*2**22, [])", steps},
		{"[[i]*2**22 for i in range(100)]", steps},
		{"[[0]*2**22]*2**22 == [[0]*2**22]*2**22", steps},
		{"[big] * 2**20 < [big] * 2**20", steps},
		{"sum([sum(range(i)) for i in range(2**22)])", steps},
		{"len([s for i in range(2**20) for s in 'ab'*2**10 if 0])", steps},
		{"2 ** 10**18", "integer result exceeds 64 bits (gtune ints are int64)"},
	}
	for _, c := range cases {
		start := time.Now()
		e, err := Parse(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		_, err = e.Eval(MapEnv{"big": big})
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: took %v", c.src, d)
		}
		var ee *EvalError
		if !errors.As(err, &ee) {
			t.Errorf("%s: got %v, want an EvalError", c.src, err)
			continue
		}
		if c.msg == steps && !strings.HasPrefix(ee.Msg, "evaluation too costly: ") {
			t.Errorf("%s: %s: %s, want MemoryError: evaluation too costly: ...", c.src, ee.Type, ee.Msg)
		}
		if !strings.HasSuffix(ee.Msg, c.msg) {
			t.Errorf("%s: %s: %s, want ...%s", c.src, ee.Type, ee.Msg, c.msg)
		}
		checkShortError(t, c.src, err)
	}
}

// Large but legitimate evaluations stay within the limits.
func TestEvalWithinLimits(t *testing.T) {
	cases := []struct{ src, want string }{
		{"len(range(2**22))", "4194304"},
		{"len([16*i for i in range(2**22)])", "4194304"},
		{"len([i for i in range(3*10**6) if i % 1000 == 0])", "3000"},
		{"sum([i for i in range(1, 2**20) if 2**20 % i == 0])", "1048575"},
		{"len('ab'*2**21)", "4194304"},
		{"len([0]*2**21 + [1]*2**21)", "4194304"},
		{"[] * 10**18", "[]"},
		{"'' * 10**18", "''"},
	}
	for _, c := range cases {
		v, err := MustParse(c.src).Eval(MapEnv{})
		if err != nil || v.String() != c.want {
			t.Errorf("%s = %v, %v; want %s", c.src, v, err, c.want)
		}
	}
}

// Constant folding shares one budget per compilation: a hundred expensive
// constants cost Parse one budget, not a hundred.
func TestFoldBudget(t *testing.T) {
	src := "[" + rep("len(range(2**22)), ", 100) + "x]"
	start := time.Now()
	e, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Eval(MapEnv{"x": Int(1)})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.HasPrefix(ee.Msg, "evaluation too costly") {
		t.Errorf("got %v, want the MaxSteps MemoryError", err)
	}
}

// Outside comprehensions, small lists take the frameless path, which does
// not allocate; a larger one reruns with a frame and gives the same answer.
func TestFramelessRetry(t *testing.T) {
	for _, c := range []struct {
		n      int
		allocs float64
	}{{8, 0}, {freeSteps, 0}, {5000, 1}} {
		l := make([]Value, c.n)
		for i := range l {
			l[i] = Int(int64(i))
		}
		e := MustParse("x in l and len(l) > 2")
		b, err := e.Bind(func(n string) (int, bool) { return 0, n == "x" }, MapEnv{"l": List(l)})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []int64{int64(c.n - 1), int64(c.n)} {
			ok, err := b.Truthy([]Value{Int(x)})
			if err != nil || ok != (x < int64(c.n)) {
				t.Errorf("%d in list of %d = %v, %v", x, c.n, ok, err)
			}
		}
		vals := []Value{Int(3)}
		if a := testing.AllocsPerRun(100, func() { b.Truthy(vals) }); a > c.allocs {
			t.Errorf("list of %d: %v allocations per evaluation, want at most %v", c.n, a, c.allocs)
		}
	}
}

func TestExcerpt(t *testing.T) {
	for _, s := range []string{"", "abc", rep("x", ExcerptLen), rep("é", ExcerptLen)} {
		if got := Excerpt(s); got != s {
			t.Errorf("Excerpt(%q) = %q, want it unchanged", s, got)
		}
	}
	for _, c := range []struct {
		src  string
		head string
	}{
		{rep("1+", 400_000) + "1", "1+1+1+"},
		{rep("x", ExcerptLen+1), "xxxxxx"},
		{rep("é", 1000), "éééééé"},
		{"a\nb" + rep(" ", 100), "a\nb"},
	} {
		got := Excerpt(c.src)
		n := utf8.RuneCountInString(c.src)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > ExcerptLen || !strings.HasPrefix(got, c.head) ||
			!strings.HasSuffix(got, fmt.Sprintf("…(%d characters)", n)) {
			t.Errorf("Excerpt(%s) = %q (%d characters)", c.head, got, utf8.RuneCountInString(got))
		}
	}
	if got := Excerpt(rep("1+", 40) + "1"); got != "1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+…(81 characters)" {
		t.Errorf("Excerpt = %q", got)
	}
}

// A syntax error in a long source shows a window around the column, with
// the caret under the offending character.
func TestSyntaxErrorWindow(t *testing.T) {
	for _, c := range []struct {
		src  string
		bad  rune
		want string
	}{
		{rep("x + ", 100) + "$" + rep(" + x", 100), '$', ""},
		{"$" + rep(" + x", 100), '$', ""},
		{rep("x + ", 100) + "$", '$', ""},
		{"x +\n\t$", '$', "syntax error at column 6: unexpected character '$'\n    x +  $\n         ^"},
	} {
		_, err := Parse(c.src)
		se := syntaxError(t, c.src, err)
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != 3 {
			t.Fatalf("%q: Error() has %d lines", Excerpt(c.src), len(lines))
		}
		window, caret := []rune(lines[1][4:]), strings.Index(lines[2], "^")-4
		if caret < 0 || caret >= len(window) || window[caret] != c.bad || len(window) > ExcerptLen+2 {
			t.Errorf("%q: caret at %d under %q", Excerpt(c.src), caret, lines[1])
		}
		if c.want != "" && err.Error() != c.want {
			t.Errorf("Error() = %q, want %q", err.Error(), c.want)
		}
		_ = se
	}
}

// Messages that quote names, literals or values quote an excerpt.
func TestLongTokensExcerpted(t *testing.T) {
	long := rep("y", 100_000)
	for _, src := range []string{
		long + "(1)",
		"1 " + long,
		rep("9", 100_000),
		long + "'s'",
		"(" + long + ", 2)",
	} {
		_, err := Parse(src)
		syntaxError(t, src, err)
	}
	_, err := MustParse(long).Eval(MapEnv{})
	var ne *NameError
	if !errors.As(err, &ne) || ne.Name != long || len(err.Error()) > 200 {
		t.Errorf("NameError: %.300v", err)
	}
	for _, src := range []string{"int('1' * 100000 + 'x')", "float('x' * 100000)"} {
		_, err := MustParse(src).Eval(MapEnv{})
		checkShortError(t, src, err)
	}
}

// measureDepth, which reports the depth of refused input, agrees with the
// parser on every accepted expression (FuzzParse checks it further).
func TestMeasureDepth(t *testing.T) {
	srcs := []string{
		"1", "(1)", "((x))", "[]", "[[]]", "[1, (2), [3]]", "-2**-x**2", "not a == b", "a if b else c if d else e",
		"(a if b else c) if d else e", "x[0][1]", "f(x)[0]", "max()", "max(1, (2))", "sum(i for i in x if i)",
		"[i*j for i in range(3) if i for j in x if j if not j]", "a < b < c", "not a in b", "a not in b < c",
		"[x for x in (a if b else c)]", "[1,]", "max(1,)", "-a.real" /* invalid */, "1 + 2 * 3 ** 4 // 5 - 6",
		"a or b and not c", "[a if b else c for x in y]", "'a' 'b' + 'c'", "x[i for i in y]", /* invalid */
	}
	for _, c := range pythonCases {
		srcs = append(srcs, c.src)
	}
	for _, s := range nestedShapes {
		srcs = append(srcs, s.src(5))
	}
	for _, src := range srcs {
		lx := &lexer{src: src}
		if lx.run() != nil {
			continue
		}
		got := measureDepth(lx.toks)
		root, err := parse(src)
		if err != nil {
			continue
		}
		if got != root.h {
			t.Errorf("measureDepth(%q) = %d, parser's depth %d", src, got, root.h)
		}
	}
}

// A comprehension folded into a constant leaves nothing that needs a frame.
func TestFoldedComprehensionNoAlloc(t *testing.T) {
	e := MustParse("x in [2**i for i in range(10)] and x > 1")
	b, err := e.Bind(func(n string) (int, bool) { return 0, n == "x" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := []Value{Int(64)}
	if ok, err := b.Truthy(vals); !ok || err != nil {
		t.Errorf("64 in powers of 2: %v, %v", ok, err)
	}
	if a := testing.AllocsPerRun(100, func() { b.Truthy(vals) }); a != 0 {
		t.Errorf("%v allocations per evaluation, want 0", a)
	}
	// One that reads x is evaluated each time, with a frame.
	e = MustParse("sum([i * x for i in range(4)])")
	b, _ = e.Bind(func(n string) (int, bool) { return 0, n == "x" }, nil)
	if v, err := b.Eval([]Value{Int(2)}); err != nil || v.String() != "12" {
		t.Errorf("sum = %v, %v", v, err)
	}
}
