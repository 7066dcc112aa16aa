package objective

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Hand-computed fronts of two scores: a single point; duplicates (both
// kept, in input order); collinear points on a falling line (all on the
// front); a point equal in one score and worse in the other (dominated).
func TestParetoFrontCases(t *testing.T) {
	pt := func(id int, a, b float64) Point { return Point{ID: id, Scores: []float64{a, b}} }
	for _, c := range []struct {
		name string
		ps   []Point
		want []int
	}{
		{"single", []Point{pt(7, 1, 1)}, []int{7}},
		{"duplicates", []Point{pt(0, 2, 2), pt(1, 1, 3), pt(2, 2, 2), pt(3, 3, 3)}, []int{1, 0, 2}},
		{"collinear", []Point{pt(0, 3, 1), pt(1, 1, 3), pt(2, 2, 2)}, []int{1, 2, 0}},
		{"equal in one score", []Point{pt(0, 1, 2), pt(1, 1, 3), pt(2, 2, 1), pt(3, 3, 1)}, []int{0, 2}},
		{"empty", nil, nil},
	} {
		if got := ParetoFront(c.ps); !slices.Equal(got, c.want) {
			t.Errorf("%s: front %v, want %v", c.name, got, c.want)
		}
		if got := paretoFrontAll(c.ps); !slices.Equal(got, c.want) {
			t.Errorf("%s, every pair: front %v, want %v", c.name, got, c.want)
		}
	}
}

// The two-score sweep gives the same front, in the same order, as
// comparing every pair, on random points with many ties.
func TestParetoFrontSweepAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + r.IntN(60)
		ps := make([]Point, n)
		for i := range ps {
			ps[i] = Point{ID: i, Scores: []float64{float64(r.IntN(8)), float64(r.IntN(8))}}
		}
		fast, ok := paretoFront2(ps)
		if all := paretoFrontAll(ps); !ok || !slices.Equal(fast, all) {
			t.Fatalf("trial %d: sweep %v, every pair %v", trial, fast, all)
		}
	}
}
