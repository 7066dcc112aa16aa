package benchmark

import (
	"math"
	"testing"
)

// TestReach checks the evaluations to 95 % of the optimum on hand-made
// curves: the first evaluation whose best is within 1/0.95 of the
// optimum, the median over runs, and censoring when a run never gets
// there.
func TestReach(t *testing.T) {
	inf := math.Inf(1)
	opt := 1.0
	// 1/0.95 = 1.0526...: 1.05 is within, 1.06 is not.
	a := []float64{inf, 2, 1.06, 1.05, 1}  // 4 evaluations
	b := []float64{1.2, 1.0, 1.0, 1.0, 1}  // 2
	c := []float64{inf, inf, 3, 1.1, 1.06} // never
	if m, r := reach(opt, [][]float64{a, b, c}); m != 4 || math.Abs(r-2.0/3) > 1e-12 {
		t.Errorf("reach(a, b, c) = %v, %v; want 4, 2/3", m, r)
	}
	if m, r := reach(opt, [][]float64{a, b}); m != 3 || r != 1 {
		t.Errorf("reach(a, b) = %v, %v; want 3 (mean of 2 and 4), 1", m, r)
	}
	if m, r := reach(opt, [][]float64{a, c, c}); !math.IsInf(m, 1) || math.Abs(r-1.0/3) > 1e-12 {
		t.Errorf("reach(a, c, c) = %v, %v; want +Inf (censored), 1/3", m, r)
	}
}
