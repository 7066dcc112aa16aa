package space

import (
	"testing"

	"github.com/gtune/gtune/expr"
)

func floats(xs ...float64) []expr.Value {
	out := make([]expr.Value, len(xs))
	for i, x := range xs {
		out[i] = expr.Float(x)
	}
	return out
}

// Restrictions reading four parameters of 12 values each (20,736 raw
// combinations, above tabLimit) are checked by interval forward checking
// before they are complete; whatever the operators, Build must give
// exactly the brute-force space, in the same order.
func TestIntervalPruningMatchesBruteForce(t *testing.T) {
	params := []Param{
		{"a", ints(-8, -3, -1, 0, 1, 2, 3, 5, 8, 13, 21, 34)},
		{"b", ints(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)},
		{"c", floats(-2.5, -1, -0.5, 0.1, 0.2, 0.3, 0.5, 1, 1.5, 2, 4.25, 8)},
		{"d", ints(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"e", []expr.Value{expr.Bool(false), expr.Bool(true)}},
	}
	for _, src := range []string{
		"a*b*d <= 96",
		"32 <= b*(d+1) <= 256 and a >= 0",
		"(a + b) * (d + 2) * (2 + e) <= 300",
		"a*c + b/4 - d < 3.5",
		"0.1 + 0.2 <= c * 1 + d - d",
		"b // (d + 1) >= 3 or c > 1",
		"b % (d + 1) == 0 and a * a < 100",
		"not (a > 5 and b > 16) and min(a, d) * max(b, 4) < 40",
		"abs(a - d) * b <= 48",
		"(b if e else d) * a > 10",
		"int(c * 3) + a >= d",
		"b / a > 2",
		"a * b != 24 and d != 3",
		"a ** 2 + d < 50 and b * d > 8",
		"-a * b <= d * 4 - 10",
	} {
		rs := restr(src)
		s, err := Build(params, rs, nil)
		ref, rerr := BuildBruteForce(params, rs, nil)
		if (err != nil) != (rerr != nil) {
			t.Errorf("%s: Build error %v, brute force error %v", src, err, rerr)
			continue
		}
		if err != nil {
			continue
		}
		if s.Len() != ref.Len() || ref.Len() == 0 || ref.Len() == 41472 {
			t.Errorf("%s: Build %d configurations, brute force %d", src, s.Len(), ref.Len())
			continue
		}
		for i := range ref.Len() {
			if s.Key(i) != ref.Key(i) {
				t.Errorf("%s: configuration %d is %s, brute force %s", src, i, s.Key(i), ref.Key(i))
				break
			}
		}
	}
}

// Tabulated restrictions with exact projections: the last level tries only
// values that complete a valid configuration, and the whole space matches
// brute force.
func TestForwardCheckingPrunesExactly(t *testing.T) {
	params := []Param{
		{"x", ints(1, 2, 4, 8, 16, 32, 64)},
		{"y", ints(1, 2, 4, 8, 16, 32)},
		{"t", ints(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)},
		{"u", ints(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)},
	}
	rs := restr("32 <= x*y <= 256", "t % u == 0")
	var tried []int
	statsHook = func(_ []int, t []int) { tried = t }
	defer func() { statsHook = nil }()
	s, err := Build(params, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := BuildBruteForce(params, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	// x*y in [32, 256]: 2^(i+j) with i <= 6, j <= 5, i+j in 5..8: 6+6+5+4 =
	// 21 pairs; t % u == 0: 27 pairs (divisor counts of
	// 1..10: 1+2+2+3+2+4+2+4+3+4).
	if s.Len() != 21*27 || ref.Len() != 21*27 {
		t.Fatalf("Len %d, brute force %d, want %d", s.Len(), ref.Len(), 21*27)
	}
	for i := range s.Len() {
		if s.Key(i) != ref.Key(i) {
			t.Fatalf("configuration %d: %s, brute force %s", i, s.Key(i), ref.Key(i))
		}
	}
	if tried[len(tried)-1] != s.Len() {
		t.Errorf("last level tried %d values for %d valid configurations (per level %v)", tried[len(tried)-1], s.Len(), tried)
	}
}
