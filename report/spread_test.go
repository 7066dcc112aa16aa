package report

import (
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// Section 3 of the GEMM energy paper on a set worked by hand: the hull
// F(100, 1.0) B(90, 1.5) D(70, 2.0) L(50, 1.2) K(80, 0.6), with I(75, 1.3)
// and J(85, 1.1) inside. The line at F's efficiency 1.0 meets the hull
// at performance 60 (on L–K) and 100: 100/60 − 1 = 2/3 longer; the line
// at D's performance 70 meets it at efficiency 0.8 (on L–K) and 2.0:
// 2.0/0.8 − 1 = 1.5 more energy. Faster than D: I, K, J, B, F; more
// efficient than F: B, D, L, I, J; both: I, J, B.
func TestSweepHull(t *testing.T) {
	pts := []*store.Evaluation{
		ev("I", 75, 1.3, 1, 1), ev("F", 100, 1.0, 1, 1), ev("K", 80, 0.6, 1, 1), ev("D", 70, 2.0, 1, 1),
		ev("J", 85, 1.1, 1, 1), ev("L", 50, 1.2, 1, 1), ev("B", 90, 1.5, 1, 1),
	}
	h := analyseHull(pts, "GFLOP/s", "GFLOP/s/W")
	keys := func(es []*store.Evaluation) string {
		var k []string
		for _, e := range es {
			k = append(k, e.Key)
		}
		return strings.Join(k, ",")
	}
	if keys(h.Upper) != "F,B,D,L" || keys(h.Lower) != "K" || h.Fastest.Key != "F" || h.Frugal.Key != "D" {
		t.Fatalf("upper %s, lower %s, fastest %s, frugal %s; want F,B,D,L and K, F, D", keys(h.Upper), keys(h.Lower), h.Fastest.Key, h.Frugal.Key)
	}
	if math.Abs(h.SlowerAtSameEfficiency-2.0/3) > 1e-12 || math.Abs(h.MoreEnergyAtSameSpeed-1.5) > 1e-12 {
		t.Errorf("spread: %v slower at the same efficiency, %v more energy at the same speed; want 2/3, 1.5", h.SlowerAtSameEfficiency, h.MoreEnergyAtSameSpeed)
	}
	if h.Right != 5 || h.Above != 5 || h.UpperRight != 3 || h.Of != 7 {
		t.Errorf("quadrants: right %d, above %d, both %d of %d; want 5, 5, 3 of 7", h.Right, h.Above, h.UpperRight, h.Of)
	}
	// One configuration: its own hull, no spread, no quadrant.
	one := analyseHull(pts[1:2], "GFLOP/s", "GFLOP/s/W")
	if keys(one.Upper) != "F" || len(one.Lower) != 0 || one.SlowerAtSameEfficiency != 0 || one.MoreEnergyAtSameSpeed != 0 || one.Right+one.Above != 0 {
		t.Errorf("one point: %+v", one)
	}
}
