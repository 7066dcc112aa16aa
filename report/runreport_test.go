package report

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

func ev(key string, perf, eff, t, e float64) *store.Evaluation {
	obj := t
	return &store.Evaluation{Key: key, Status: "valid", Objective: &obj,
		Observations: map[string]float64{"time": t, "energy": e},
		Metrics:      map[string]float64{"GFLOP/s": perf, "GFLOP/s/W": eff}}
}

// The hull of a known set: B lies above the line from A to D, C below
// the line from B to D; E and F are beaten in both.
func TestEfficiencyHull(t *testing.T) {
	pts := []*store.Evaluation{
		ev("C", 80, 1.6, 1, 1), ev("A", 100, 1, 1, 1), ev("E", 85, 1.2, 1, 1),
		ev("D", 70, 2.0, 1, 1), ev("F", 60, 1.9, 1, 1), ev("B", 90, 1.5, 1, 1),
	}
	var keys []string
	for _, e := range efficiencyHull(pts, "GFLOP/s", "GFLOP/s/W") {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, ",") != "A,B,D" {
		t.Fatalf("hull %v, want A,B,D", keys)
	}
	if p, e, ok := hullMetrics(pts); !ok || p != "GFLOP/s" || e != "GFLOP/s/W" {
		t.Fatalf("metrics %q %q %v", p, e, ok)
	}
}

// The time × energy front, fastest first, and the best so far: the
// smallest for a minimized objective, the largest for a maximized one.
func TestFrontAndBestSoFar(t *testing.T) {
	pts := []*store.Evaluation{ev("slow-frugal", 0, 0, 3, 1), ev("fast", 0, 0, 1, 3), ev("worse", 0, 0, 3, 3), ev("mid", 0, 0, 2, 2)}
	var keys []string
	for _, e := range timeEnergyFront(pts) {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, ",") != "fast,mid,slow-frugal" {
		t.Fatalf("front %v", keys)
	}
	min := bestSoFarPlot(pts, false, 4, 3)
	max := bestSoFarPlot(pts, true, 4, 3)
	wantMin := "         3 |*   \n           |    \n         1 | ***\n           +----\n            1  4 evaluations\n"
	wantMax := "         3 |    \n           |    \n         3 |****\n           +----\n            1  4 evaluations\n"
	if min != wantMin {
		t.Errorf("minimized:\n%s\nwant\n%s", min, wantMin)
	}
	if max != wantMax {
		t.Errorf("maximized:\n%s\nwant\n%s", max, wantMax)
	}
}

// Hull edge cases by hand: collinear points keep only the ends (the
// middle one is a mix of the two); a duplicate is kept once; one point
// is its own hull; a point faster but less efficient than every other
// opens the hull.
func TestEfficiencyHullCases(t *testing.T) {
	for _, c := range []struct {
		name string
		pts  []*store.Evaluation
		want string
	}{
		{"collinear", []*store.Evaluation{ev("B", 90, 1.5, 1, 1), ev("A", 100, 1, 1, 1), ev("C", 80, 2, 1, 1)}, "A,C"},
		{"duplicates", []*store.Evaluation{ev("A", 100, 1, 1, 1), ev("A2", 100, 1, 1, 1), ev("C", 80, 2, 1, 1)}, "A,C"},
		{"single", []*store.Evaluation{ev("A", 100, 1, 1, 1)}, "A"},
		{"fastest is most efficient", []*store.Evaluation{ev("B", 90, 1.5, 1, 1), ev("A", 100, 2, 1, 1)}, "A"},
	} {
		var keys []string
		for _, e := range efficiencyHull(c.pts, "GFLOP/s", "GFLOP/s/W") {
			keys = append(keys, e.Key)
		}
		if got := strings.Join(keys, ","); got != c.want {
			t.Errorf("%s: hull %s, want %s", c.name, got, c.want)
		}
	}
}

// A front of a maximized rate against a minimized observation: A is the
// fastest, B draws less power, C is beaten by B in both; best rate first.
func TestParetoFrontMaximized(t *testing.T) {
	pts := []*store.Evaluation{ev("C", 80, 0, 1, 1), ev("A", 100, 0, 1, 1), ev("B", 90, 0, 1, 1)}
	for i, p := range []float64{250, 300, 200} {
		pts[i].Observations["power"] = p
	}
	var keys []string
	for _, e := range paretoFront(pts, "GFLOP/s", "power") {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, ",") != "A,B" {
		t.Fatalf("front %v, want A,B", keys)
	}
	if !maximized("GFLOP/s") || !maximized("GFLOPS/W") || maximized("time") || maximized("edp") {
		t.Error("directions")
	}
}
