package measure

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{4, 1, 3, 2, math.NaN()})
	if s.N != 4 || s.Mean != 2.5 || s.Median != 2.5 || s.Min != 1 || s.Max != 4 {
		t.Fatalf("got %+v", s)
	}
	// sample sd of 1,2,3,4 = sqrt(5/3)
	if math.Abs(s.Std-math.Sqrt(5.0/3.0)) > 1e-12 {
		t.Fatalf("std %v", s.Std)
	}
	odd := Summarize([]float64{5, 1, 9})
	if odd.Median != 5 || odd.Mean != 5 {
		t.Fatalf("got %+v", odd)
	}
	if z := Summarize(nil); z.N != 0 || z.Mean != 0 {
		t.Fatalf("empty: %+v", z)
	}
	if one := Summarize([]float64{3}); one.Std != 0 || one.CV() != 0 {
		t.Fatalf("one: %+v", one)
	}
}
