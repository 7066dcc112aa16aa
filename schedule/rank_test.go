package schedule

import (
	"math"
	"testing"
)

// Five orders measured 2, 3, 3, 4, 5 ms; the ranked one is the first 3:
// of the four others, 4 and 5 are worse and one 3 ties (half): 62.5th
// percentile; 50 % from the best; median 3 (×1), worst 5 (×5/3).
func TestRank(t *testing.T) {
	r, err := Rank([]float64{4, 3, 5, 2, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := Ranking{N: 5, Best: 2, Median: 3, Worst: 5, Value: 3, Percentile: 62.5, FromBest: 0.5, OverMedian: 1, OverWorst: 5.0 / 3, others: 4}
	if math.Abs(r.OverWorst-want.OverWorst) > 1e-12 {
		t.Fatalf("over worst %g", r.OverWorst)
	}
	r.OverWorst = want.OverWorst
	if r != want {
		t.Errorf("ranking %+v, want %+v", r, want)
	}
	best, _ := Rank([]float64{4, 3, 5, 2}, 2)
	worst, _ := Rank([]float64{4, 3, 5, 2}, 5)
	if best.Percentile != 100 || worst.Percentile != 0 || best.Median != 3.5 {
		t.Errorf("best %g, worst %g percentile, median %g", best.Percentile, worst.Percentile, best.Median)
	}
	// A value not among the measured ones is compared with all of them.
	out, _ := Rank([]float64{4, 3, 5, 2}, 2.5)
	if out.Percentile != 75 {
		t.Errorf("unmeasured value: percentile %g, want 75", out.Percentile)
	}
	if _, err := Rank([]float64{1}, 1); err == nil {
		t.Error("one order: no error")
	}
}

// Clopper-Pearson 95 % intervals of known shares: 99 of 100 others worse
// gives (94.554, 99.975) %; all 100 gives (0.025^(1/100), 1) = (96.378,
// 100) %; none of 100 gives (0, 3.622) %. All orders measured: no sample.
func TestSampledFrom(t *testing.T) {
	values := func(worse, better int) []float64 {
		v := []float64{5}
		for range worse {
			v = append(v, 9)
		}
		for range better {
			v = append(v, 1)
		}
		return v
	}
	for _, c := range []struct {
		worse, better int
		low, high     float64
	}{{99, 1, 94.554, 99.975}, {100, 0, 96.378, 100}, {0, 100, 0, 3.622}} {
		r, err := Rank(values(c.worse, c.better), 5)
		if err != nil {
			t.Fatal(err)
		}
		s := r.SampledFrom(40320)
		if s == nil || s.Orders != 40320 || math.Abs(s.Low-c.low) > 0.001 || math.Abs(s.High-c.high) > 0.001 {
			t.Errorf("%d of 100 worse: sample %+v, want (%g, %g)", c.worse, s, c.low, c.high)
		}
	}
	r, _ := Rank([]float64{1, 2, 3}, 2)
	if s := r.SampledFrom(3); s != nil {
		t.Errorf("every order measured: sample %+v", s)
	}
}
