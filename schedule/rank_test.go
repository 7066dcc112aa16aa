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
	want := Ranking{N: 5, Best: 2, Median: 3, Worst: 5, Value: 3, Percentile: 62.5, FromBest: 0.5, OverMedian: 1, OverWorst: 5.0 / 3}
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
