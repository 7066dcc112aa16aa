package space

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/expr"
)

// decimal gives 9 parameters p0..p8 of the values 1..10 (10^9 raw
// configurations, the size of the user report).
func decimal(n int) []Param {
	var params []Param
	for i := range n {
		params = append(params, Param{fmt.Sprintf("p%d", i), ints(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)})
	}
	return params
}

func asTooLarge(t *testing.T, err error) *TooLargeError {
	t.Helper()
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("error %v (%T), want *TooLargeError", err, err)
	}
	return tl
}

// A 10^9 product with no restriction is refused before anything in
// proportion to it is allocated (8 GB of codes), by Build and by
// BuildBruteForce, with the exact raw count.
func TestTooLargeRefusedUpFront(t *testing.T) {
	params := decimal(9)
	for name, build := range map[string]func([]Param, []Restriction, expr.Env) (*Space, error){
		"Build": Build, "BuildBruteForce": BuildBruteForce,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		s, err := build(params, nil, nil)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if s != nil {
			t.Fatalf("%s: got a space of %d", name, s.Len())
		}
		tl := asTooLarge(t, err)
		if tl.RawCount != 1e9 || tl.AtLeast != 1e9 || tl.Limit != DefaultMaxConfigurations {
			t.Errorf("%s: %+v, want RawCount = AtLeast = 1e9, Limit %d", name, *tl, DefaultMaxConfigurations)
		}
		want := "space: search space too large: 1,000,000,000 raw configurations, of which at least 1,000,000,000 are valid, " +
			"more than the limit of 16,777,216; add restrictions, use fewer parameter values, or raise the limit"
		if err.Error() != want {
			t.Errorf("%s: message\n%s\nwant\n%s", name, err, want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s allocated %d bytes to refuse the space, want under 1 MiB", name, alloc)
		}
		if elapsed > time.Second {
			t.Errorf("%s took %v to refuse the space", name, elapsed)
		}
		t.Logf("%s: refused in %v", name, elapsed)
	}
}

// Tabulated restrictions that exclude little prove the space too large up
// front too: exactly when they are independent, by Bonferroni's bound when
// they share parameters.
func TestTooLargeLowerBound(t *testing.T) {
	params := decimal(9)
	cases := []struct {
		rs      []string
		atLeast float64
	}{
		// a*b <= 50: 10 values of p1 for p0 <= 5, then 8, 7, 6, 5, 5.
		{[]string{"p0*p1 <= 50"}, 81e7},
		// Independent: 81 × 81 pairs.
		{[]string{"p0*p1 <= 50", "p2*p3 <= 50"}, 81 * 81e5},
		// Sharing p1: 1000 − 2 × 190 excluded triples = 620 (699 valid).
		{[]string{"p0*p1 <= 50", "p1*p2 <= 50"}, 620e6},
		// A constant restriction that is true removes nothing.
		{[]string{"N > 1"}, 1e9},
		// One parameter restricted to 4 of its values.
		{[]string{"p0 <= 4"}, 4e8},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := BuildContext(context.Background(), params, restr(c.rs...), expr.MapEnv{"N": expr.Int(4)}, BuildOptions{})
		tl := asTooLarge(t, err)
		if tl.AtLeast != c.atLeast || tl.RawCount != 1e9 {
			t.Errorf("%v: AtLeast %v RawCount %v, want %v and 1e9", c.rs, tl.AtLeast, tl.RawCount, c.atLeast)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%v: took %v to refuse", c.rs, d)
		}
	}
	// 4^40 raw, nothing restricted but p0: the bound is exact beyond 2^64
	// and AtLeast stays below the truth, 3·4^39.
	var big []Param
	for i := range 40 {
		big = append(big, Param{fmt.Sprintf("q%d", i), ints(0, 1, 2, 3)})
	}
	_, err := Build(big, restr("q0 != 2"), nil)
	tl := asTooLarge(t, err)
	if want := 3 * math.Pow(4, 39); tl.AtLeast > want || tl.AtLeast < want*(1-1e-15) {
		t.Errorf("4^40 space: AtLeast %v, want 3·4^39 = %v", tl.AtLeast, want)
	}
	if !strings.Contains(err.Error(), "1.209e+24 raw configurations, of which at least 9.067e+23 are valid") {
		t.Errorf("message %s", err)
	}
}

// The limit applies to the valid configurations, however they are found:
// exactly the count builds (the same space as without the limit), one
// less is refused. 4,005 valid of 10^4 for a restriction too large to
// tabulate (refused by the enumeration at limit+1); 4,860 of 8,100 for a
// tabulated one (refused up front with the exact count).
func TestLimitBoundary(t *testing.T) {
	cases := []struct {
		params  []Param
		rs      []Restriction
		n       int
		upFront bool
	}{
		// x_i = p_i − 1 in 0..9 summing to at most 16: C(20, 4) = 4845,
		// less 4 × C(10, 4) = 840 with some x_i >= 10.
		{decimal(4), restr("p0 + p1 + p2 + p3 <= 20"), 4005, false},
		// a <= 10: 90 values of b; a in 11..90: 100 − a, 3,960 in all.
		{[]Param{{"a", intRange(1, 90)}, {"b", intRange(1, 90)}}, restr("a + b <= 100"), 4860, true},
	}
	for _, c := range cases {
		ref, err := Build(c.params, c.rs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Len() != c.n {
			t.Fatalf("%s: Len %d, want %d", c.rs[0].Expr.Source(), ref.Len(), c.n)
		}
		for _, bf := range []bool{false, true} {
			build := BuildContext
			if bf {
				build = BuildBruteForceContext
			}
			name := fmt.Sprintf("%s (brute force %v)", c.rs[0].Expr.Source(), bf)
			s, err := build(context.Background(), c.params, c.rs, nil, BuildOptions{MaxConfigurations: c.n})
			if err != nil {
				t.Fatalf("%s: limit %d: %v", name, c.n, err)
			}
			if s.Len() != c.n || !slices.Equal(s.codes, ref.codes) {
				t.Errorf("%s: limit %d: Len %d, or codes differ from Build's", name, c.n, s.Len())
			}
			for _, limit := range []int{c.n - 1, 1000, 1} {
				_, err = build(context.Background(), c.params, c.rs, nil, BuildOptions{MaxConfigurations: limit, LimitName: "--max-configs"})
				tl := asTooLarge(t, err)
				want := float64(limit + 1)
				if c.upFront && !bf {
					want = float64(c.n)
				}
				if tl.Limit != limit || tl.AtLeast != want || tl.RawCount != ref.RawCount() {
					t.Errorf("%s: limit %d: %+v, want AtLeast %v", name, limit, *tl, want)
				}
				if !strings.HasSuffix(err.Error(), "or raise the limit (--max-configs)") || !strings.Contains(err.Error(), groupInt(float64(limit))) {
					t.Errorf("%s: message %s", name, err)
				}
			}
		}
	}
}

func intRange(lo, hi int64) []expr.Value {
	var out []expr.Value
	for x := lo; x <= hi; x++ {
		out = append(out, expr.Int(x))
	}
	return out
}

func TestBuildOptionsLimit(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{0, DefaultMaxConfigurations}, {-1, math.MaxInt32}, {math.MaxInt, math.MaxInt32}, {1, 1}, {5000, 5000},
	} {
		if got := (BuildOptions{MaxConfigurations: c.in}).limit(); got != c.want {
			t.Errorf("MaxConfigurations %d: limit %d, want %d", c.in, got, c.want)
		}
	}
}

// Cancelling the context stops a long construction promptly, whether it
// keeps every configuration (the limit raised to 2^26, far above what
// 50 ms finds, so that only the context stops it, and a failing check
// cannot exhaust the machine's memory) or searches a huge space that
// keeps few, and whether by Build or by brute force.
func TestBuildContextCancel(t *testing.T) {
	cases := []struct {
		name string
		rs   []Restriction
		bf   bool
	}{
		{"keeps all", restr("p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7 + p8 >= 9"), false},
		{"keeps 1/1009", restr("(p0*3 + p1*5 + p2*7 + p3*11 + p4*13 + p5*17 + p6*19 + p7*23 + p8*29) % 1009 == 3"), false},
		{"tabulated, keeps 3.6%", restr("p0*p1 <= 10", "p2 + p3 < 7", "p4 % p5 != 3"), false},
		{"brute force", restr("(p0*3 + p1*5 + p2*7 + p3*11 + p4*13 + p5*17 + p6*19 + p7*23 + p8*29) % 1009 == 3"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			build := BuildContext
			if c.bf {
				build = BuildBruteForceContext
			}
			type result struct {
				s   *Space
				err error
				at  time.Time
			}
			done := make(chan result, 1)
			go func() {
				s, err := build(ctx, decimal(9), c.rs, nil, BuildOptions{MaxConfigurations: 1 << 26})
				done <- result{s, err, time.Now()}
			}()
			select {
			case r := <-done:
				t.Fatalf("returned before cancellation: %v", r.err)
			case <-time.After(50 * time.Millisecond):
			}
			cancelled := time.Now()
			cancel()
			select {
			case r := <-done:
				lag := r.at.Sub(cancelled)
				if r.s != nil || !errors.Is(r.err, context.Canceled) {
					t.Fatalf("got %v, %v; want context.Canceled", r.s, r.err)
				}
				if lag > 2*time.Second {
					t.Errorf("returned %v after cancellation", lag)
				}
				t.Logf("returned %v after cancellation: %v", lag, r.err)
			case <-time.After(10 * time.Second):
				t.Fatal("still running 10 s after cancellation")
			}
		})
	}
}

// A deadline stops it the same way, with context.DeadlineExceeded.
func TestBuildContextDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := BuildContext(ctx, decimal(9), restr("(p0 + p1*p2 + p3*p4*p5 + p6*p7*p8) % 97 == 0"), nil, BuildOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v for a 30 ms deadline", d)
	}
}

// A context cancelled before the call returns at once, before validating
// or tabulating anything.
func TestBuildContextAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	many := make([]string, 200)
	for i := range many {
		many[i] = fmt.Sprintf("p%d * p%d != %d", i%9, (i+1)%9, i%50)
	}
	for _, bf := range []bool{false, true} {
		build := BuildContext
		if bf {
			build = BuildBruteForceContext
		}
		start := time.Now()
		s, err := build(ctx, decimal(9), restr(many...), nil, BuildOptions{})
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("brute force %v: took %v", bf, d)
		}
		if s != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("brute force %v: got %v, %v; want context.Canceled", bf, s, err)
		}
	}
}

// Building with 3,000 restrictions tabulated takes 2.7 s uncancelled
// (tabulation, then thousands of table checks per node); cancellation is
// seen in the up-front loops and the search alike.
func TestCancelDuringTabulation(t *testing.T) {
	params := []Param{{"a", intRange(1, 90)}, {"b", intRange(1, 90)}}
	many := make([]string, 3000)
	for i := range many {
		many[i] = fmt.Sprintf("(a * b + %d) %% 7 != 0 or a + b > %d", i, i%150)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := BuildContext(ctx, params, restr(many...), nil, BuildOptions{})
	d := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if d > 2*time.Second {
		t.Errorf("returned %v after the start, cancelled at 20 ms", d)
	}
	t.Logf("returned %v after the start, cancelled at 20 ms", d)
}

// Codes of more than one word are sorted by radixSortRows: the same order
// as a comparison sort, on random rows with bytes set in every word.
func TestRadixSortRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, w := range []int{2, 3} {
		for _, n := range []int{0, 1, 2, 255, 256, 20000} {
			a := make([]uint64, n*w)
			for i := range a {
				a[i] = rng.Uint64() >> rng.IntN(64)
			}
			want := make([][]uint64, n)
			for i := range want {
				want[i] = slices.Clone(a[i*w : (i+1)*w])
			}
			slices.SortFunc(want, slices.Compare)
			if !radixSortRows(a, w, newPoller(context.Background())) {
				t.Fatal("stopped")
			}
			for i := range want {
				if !slices.Equal(a[i*w:(i+1)*w], want[i]) {
					t.Fatalf("w %d n %d: row %d is %x, want %x", w, n, i, a[i*w:(i+1)*w], want[i])
				}
			}
		}
	}
}

// A space of two-word codes (40 parameters of 4 values: 80 bits) bound in
// an order other than the spec's: 8 free parameters spread over both
// words, 49,152 valid configurations in itertools.product order.
func TestTwoWordSpaceOrder(t *testing.T) {
	var params []Param
	var srcs []string
	free := []int{0, 1, 2, 3, 36, 37, 38, 39}
	for i := range 40 {
		params = append(params, Param{fmt.Sprintf("p%d", i), ints(0, 1, 2, 3)})
		if !slices.Contains(free, i) {
			srcs = append(srcs, fmt.Sprintf("p%d == %d", i, i%4))
		}
	}
	srcs = append(srcs, "p0 + p39 != 3")
	s, err := Build(params, restr(srcs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.words != 2 {
		t.Fatalf("%d words, want 2", s.words)
	}
	var want []string
	for f := range 1 << 16 {
		v := make([]int, 40)
		for i := range v {
			v[i] = i % 4
		}
		for k, p := range free {
			v[p] = f >> (2 * (7 - k)) & 3 // p0 slowest
		}
		if v[0]+v[39] == 3 {
			continue
		}
		parts := make([]string, 40)
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		want = append(want, strings.Join(parts, ","))
	}
	if s.Len() != len(want) || len(want) != 49152 {
		t.Fatalf("Len %d, want %d (49152)", s.Len(), len(want))
	}
	for i, k := range want {
		if s.Key(i) != k {
			t.Fatalf("configuration %d is %s, want %s", i, s.Key(i), k)
		}
	}
}

// The sort stops on cancellation between chunks.
func TestRadixSortStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := make([]uint64, 1<<17)
	for i := range a {
		a[i] = uint64(len(a) - i)
	}
	if radixSort(a, newPoller(ctx)) || radixSortRows(a, 2, newPoller(ctx)) {
		t.Error("sorted despite a cancelled context")
	}
}

// Limits must not change the spaces under them: every restriction of
// TestIntervalPruningMatchesBruteForce, built with the limit at its exact
// count, gives Build's codes; at one less, Build and brute force both
// refuse.
func TestLimitKeepsSpaces(t *testing.T) {
	params := []Param{
		{"a", ints(-8, -3, -1, 0, 1, 2, 3, 5, 8, 13, 21, 34)},
		{"b", ints(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)},
		{"d", ints(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"e", []expr.Value{expr.Bool(false), expr.Bool(true)}},
	}
	for _, src := range []string{"a*b*d <= 96", "32 <= b*(d+1) <= 256 and a >= 0", "b % (d + 1) == 0 and a * a < 100", "a*b <= 40", "e or d > 3"} {
		rs := restr(src)
		ref, err := Build(params, rs, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := ref.Len()
		s, err := BuildContext(context.Background(), params, rs, nil, BuildOptions{MaxConfigurations: n})
		if err != nil || !slices.Equal(s.codes, ref.codes) {
			t.Errorf("%s: limit %d: %v, or codes differ", src, n, err)
		}
		for _, bf := range []bool{false, true} {
			build := BuildContext
			if bf {
				build = BuildBruteForceContext
			}
			_, err := build(context.Background(), params, rs, nil, BuildOptions{MaxConfigurations: n - 1})
			// Build's bound is exact for one tabulated restriction; brute
			// force finds limit+1 = n.
			if tl := asTooLarge(t, err); tl.AtLeast != float64(n) {
				t.Errorf("%s: brute force %v: AtLeast %v, want %d", src, bf, tl.AtLeast, n)
			}
		}
	}
}

func TestGroupInt(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 16777216: "16,777,216", 1e9: "1,000,000,000", 1e20: "1e+20", 1.5: "1.5"} {
		if got := groupInt(x); got != want {
			t.Errorf("groupInt(%v) = %s, want %s", x, got, want)
		}
	}
}
