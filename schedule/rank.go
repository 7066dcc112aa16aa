package schedule

import (
	"errors"
	"math"
	"slices"
)

// Ranking places one launch order among every order measured, in the
// columns of symbiotic-scheduling-concurrent-kernels.md, Table 4. Values
// are the objective (time, ms, or energy, J: lower is better).
type Ranking struct {
	N                   int     // orders measured
	Best, Median, Worst float64 // over the N orders
	Value               float64 // the ranked order's
	// Percentile is the share of the other orders that are worse, ties
	// counted half, in percent: 100 for the best order, 0 for the worst
	// (the paper's "percentile rank").
	Percentile float64
	// FromBest is Value/Best − 1 (the paper's "deviation from optimal").
	FromBest float64
	// OverMedian and OverWorst are Median/Value and Worst/Value (its
	// "performance gain" or "energy improvement" over the median and the
	// worst order).
	OverMedian, OverWorst float64
}

// Rank ranks value among values (every order's measurement, value's
// own included or not: it is compared with the others). Errors: fewer
// than two values, or a value that is not a positive number.
func Rank(values []float64, value float64) (Ranking, error) {
	if len(values) < 2 {
		return Ranking{}, errors.New("schedule: ranking needs at least two measured orders")
	}
	for _, v := range append([]float64{value}, values...) {
		if !(v > 0) || math.IsInf(v, 0) {
			return Ranking{}, errors.New("schedule: a measured value is not a positive number")
		}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	r := Ranking{N: len(s), Best: s[0], Worst: s[len(s)-1], Value: value}
	if n := len(s); n%2 == 1 {
		r.Median = s[n/2]
	} else {
		r.Median = (s[n/2-1] + s[n/2]) / 2
	}
	worse, ties, self := 0.0, 0.0, false
	for _, v := range s {
		switch {
		case v > value:
			worse++
		case v == value && !self:
			self = true // the ranked order's own measurement
		case v == value:
			ties++
		}
	}
	others := float64(len(s) - 1)
	if !self {
		others = float64(len(s))
	}
	r.Percentile = 100 * (worse + ties/2) / others
	r.FromBest = value/r.Best - 1
	r.OverMedian = r.Median / value
	r.OverWorst = r.Worst / value
	return r, nil
}
