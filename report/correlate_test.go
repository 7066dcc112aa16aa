package report

import (
	"math"
	"testing"
)

// Known coefficients: y = 2x is 1 and 1; y = (5, 6, 7, 8, 7) against
// x = 1..5 has Pearson 6/sqrt(52) = 0.832050 and Spearman (ranks 1, 2,
// 3.5, 5, 3.5) 8/sqrt(95) = 0.820783; a falling one is −1; a constant
// quantity, the target itself and a quantity with two points left are
// left out; NaN pairs are skipped.
func TestCorrelate(t *testing.T) {
	nan := math.NaN()
	ys := []float64{2, 4, 6, 8, 10}
	cs := Correlate("y", ys, map[string][]float64{
		"y":        ys,
		"double":   {1, 2, 3, 4, 5},
		"tied":     {5, 6, 7, 8, 7},
		"falling":  {9, 7, 5, 3, 1},
		"constant": {3, 3, 3, 3, 3},
		"sparse":   {1, nan, nan, nan, 2},
		"holes":    {1, nan, 3, nan, 5},
	})
	want := map[string][2]float64{"double": {1, 1}, "tied": {6 / math.Sqrt(52), 8 / math.Sqrt(95)}, "falling": {-1, -1}, "holes": {1, 1}}
	if len(cs) != len(want) {
		t.Fatalf("%d coefficients, want %d: %+v", len(cs), len(want), cs)
	}
	for _, c := range cs {
		w, ok := want[c.Quantity]
		if !ok || math.Abs(c.Pearson-w[0]) > 1e-9 || math.Abs(c.Spearman-w[1]) > 1e-9 {
			t.Errorf("%s: Pearson %.6f Spearman %.6f, want %v", c.Quantity, c.Pearson, c.Spearman, w)
		}
	}
	if cs[len(cs)-1].Quantity != "tied" || cs[0].Quantity != "double" || cs[0].N != 5 {
		t.Errorf("order (strongest first, ties by name): %+v", cs)
	}
	for _, c := range cs {
		if c.Quantity == "holes" && c.N != 3 {
			t.Errorf("holes: n %d, want 3", c.N)
		}
	}
}
