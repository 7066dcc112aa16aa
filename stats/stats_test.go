package stats

import (
	"math"
	"slices"
	"testing"
)

// MedianCI against the binomial table: n = 10 at 95 % is [x(2), x(9)]
// with coverage 1 − 2·11/1024; n = 6 reaches it only with the range
// (1 − 2/64); n = 5 cannot (1 − 2/32 < 0.95: Short).
func TestMedianCI(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // unsorted on purpose
		}
		return xs
	}
	for _, c := range []struct {
		n              int
		lo, hi, median float64
		level          float64
		short          bool
	}{
		{10, 2, 9, 5.5, 1 - 22.0/1024, false},
		{6, 1, 6, 3.5, 1 - 2.0/64, false},
		{5, 1, 5, 3, 1 - 2.0/32, true},
		{1, 1, 1, 1, 0, true},
		{30, 10, 21, 15.5, 0, false}, // level checked below
	} {
		iv, err := MedianCI(seq(c.n), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if iv.Lo != c.lo || iv.Hi != c.hi || iv.Median != c.median || iv.Short != c.short || (c.level > 0 && math.Abs(iv.Level-c.level) > 1e-12) {
			t.Errorf("n=%d: %+v; want [%v, %v] median %v level %v short %v", c.n, iv, c.lo, c.hi, c.median, c.level, c.short)
		}
		if !iv.Short && iv.Level < 0.95 {
			t.Errorf("n=%d: level %v below the one asked", c.n, iv.Level)
		}
	}
	for _, bad := range [][]float64{nil, {1, math.NaN()}, {math.Inf(1)}} {
		if _, err := MedianCI(bad, 0.95); err == nil {
			t.Errorf("MedianCI(%v): no error", bad)
		}
	}
	if _, err := MedianCI([]float64{1, 2}, 1); err == nil {
		t.Error("level 1: no error")
	}
}

// UTest's exact p-values by counting arrangements: {1,2,3} against
// {4,5,6} is the most extreme of C(6,3) = 20 (p = 2/20); {1..5} against
// {6..10} of 252 (p = 2/252); {1,3,5} against {2,4,6} has U = 3 with
// P(U ≤ 3) = 7/20. Identical samples differ in nothing (p = 1); the test
// is symmetric.
func TestUTest(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		p    float64
	}{
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.1},
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{[]float64{1, 3, 5}, []float64{2, 4, 6}, 0.7},
		{[]float64{2, 2, 2}, []float64{2, 2, 2}, 1},
	} {
		p, err := UTest(c.a, c.b)
		if err != nil || math.Abs(p-c.p) > 1e-12 {
			t.Errorf("UTest(%v, %v) = %v, %v; want %v", c.a, c.b, p, err, c.p)
		}
		q, _ := UTest(c.b, c.a)
		if math.Abs(p-q) > 1e-12 {
			t.Errorf("UTest is not symmetric: %v and %v", p, q)
		}
	}
	// With ties, the normal approximation: two clearly apart samples of
	// 20 are significant, two interleaved ones are not.
	var lo, hi, mix []float64
	for i := range 20 {
		lo = append(lo, float64(i/2))
		hi = append(hi, float64(100+i/2))
		mix = append(mix, float64(i/2))
	}
	if p, _ := UTest(lo, hi); p > 1e-6 {
		t.Errorf("apart: p = %v", p)
	}
	if p, _ := UTest(lo, mix); p < 0.99 {
		t.Errorf("the same values: p = %v", p)
	}
	if _, err := UTest(nil, []float64{1}); err == nil {
		t.Error("an empty sample: no error")
	}
}

// Spearman's correlation against values worked by hand: ties take the
// mean rank, a monotone pair is 1, a reversed one −1.
func TestSpearman(t *testing.T) {
	rho, err := Spearman([]float64{1, 2, 3, 4, 5}, []float64{5, 6, 7, 8, 7})
	// Ranks of y: 1, 2, 3.5, 5, 3.5; Σdxdy = 8, Σdx² = 10, Σdy² = 9.5.
	if err != nil || math.Abs(rho-8/math.Sqrt(95)) > 1e-12 {
		t.Fatalf("rho %v, %v", rho, err)
	}
	if r, _ := Spearman([]float64{1, 2, 3, 4}, []float64{10, 100, 1000, 1e4}); r != 1 {
		t.Fatalf("monotone: %v", r)
	}
	if r, _ := Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); r != -1 {
		t.Fatalf("reversed: %v", r)
	}
	for _, c := range [][2][]float64{
		{{1, 2}, {1, 2}},
		{{1, 2, 3}, {1, 2}},
		{{1, 1, 1}, {1, 2, 3}},
		{{1, math.NaN(), 3}, {1, 2, 3}},
	} {
		if _, err := Spearman(c[0], c[1]); err == nil {
			t.Errorf("%v: no error", c)
		}
	}
	if got := Ranks([]float64{3, 1, 3, 2}); !slices.Equal(got, []float64{3.5, 1, 3.5, 2}) {
		t.Fatalf("ranks %v", got)
	}
}
