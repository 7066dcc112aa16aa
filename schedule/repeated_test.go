package schedule

import (
	"encoding/json"
	"math"
	"testing"
)

// Four orders measured five times each; order 0 straggles once (12 ms
// in a run of 5 ms): by the median it is the best order, by the fastest
// too, while the mean would put it last. Its percentile interval from
// the repeats' noise covers 100 and stays above the others'.
func TestRankRepeated(t *testing.T) {
	samples := [][]float64{
		{5.0, 5.1, 12, 5.0, 5.1},
		{6.0, 6.1, 6.0, 6.2, 6.1},
		{7.0, 7.1, 7.0, 7.2, 7.1},
		{8.0, 8.1, 8.0, 8.2, 8.1},
	}
	for _, stat := range Statistics {
		r, err := RankRepeated(samples, 0, stat, 500, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{Median: 5.1, Fastest: 5.0}[stat]
		if r.Value != want || r.Percentile != 100 || r.N != 4 || r.Repeats != 5 || r.Resamples != 500 || r.Statistic != stat {
			t.Fatalf("%s: %+v", stat, r)
		}
		// A resample of order 0 can draw the straggler three times of
		// five (its median then 12 ms, the worst): the interval's low end
		// may fall, its high end is 100.
		if r.High != 100 || r.Low > r.High || r.Low < 0 {
			t.Fatalf("%s: interval [%v, %v]", stat, r.Low, r.High)
		}
		// Halves (2 and 3 repeats): the four orders keep their ranking
		// except order 0 by median of its second half {12, 5.0, 5.1}: 5.1.
		if r.SplitHalf == nil || *r.SplitHalf != 1 || r.SplitHalfRepeats != 2 {
			t.Fatalf("%s: split half %v (%d)", stat, r.SplitHalf, r.SplitHalfRepeats)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	}
	// The worst order is at 0; only order 0's straggler, drawn three
	// times, can put one order (a third of the others) below it.
	r, _ := RankRepeated(samples, 3, Median, 200, 1)
	if r.Percentile != 0 || r.Low != 0 || math.Abs(r.High-100.0/3) > 1e-9 {
		t.Fatalf("worst: %+v", r)
	}
	// Two orders that differ by noise alone: the interval spans most of
	// the range.
	noisy := [][]float64{{5, 6, 5, 6, 5, 6}, {6, 5, 6, 5, 6, 5}, {5.5, 5.5, 5.5, 5.5, 5.5, 5.5}}
	r, _ = RankRepeated(noisy, 0, Median, 1000, 2)
	if r.Low > 25 || r.High < 75 {
		t.Fatalf("noise alone: [%v, %v]", r.Low, r.High)
	}
	for _, bad := range []struct {
		samples [][]float64
		chosen  int
		stat    string
	}{
		{samples, 0, "mean"},
		{samples[:1], 0, Median},
		{samples, 4, Median},
		{[][]float64{{1}, {}}, 0, Median},
	} {
		if _, err := RankRepeated(bad.samples, bad.chosen, bad.stat, 10, 1); err == nil {
			t.Errorf("%v %d %s: no error", bad.samples, bad.chosen, bad.stat)
		}
	}
	if math.IsNaN(r.Percentile) {
		t.Fatal("NaN percentile")
	}
}
