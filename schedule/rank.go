package schedule

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
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
	// others is the number of orders Value was compared with.
	others int
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
	r.others = int(others)
	r.FromBest = value/r.Best - 1
	r.OverMedian = r.Median / value
	r.OverWorst = r.Worst / value
	return r, nil
}

// Sample is the place of a ranking made on a sample of the orders: the
// orders there are (Orders, n! for n kernels) and the 95 % interval of
// the percentile over all of them (Low, High, percent).
type Sample struct {
	Orders    int     `json:"orders"`
	Low, High float64 // percent
}

// SampledFrom returns the Sample of r when its N measured orders are a
// uniform random sample of orders launch orders, or nil when they are
// all of them (N ≥ orders: the percentile is exact). The interval is
// Clopper and Pearson's exact 95 % interval for a binomial share: of the
// N−1 other sampled orders (N when r's own order is not among them),
// Percentile/100 of them are worse. It answers the question of the
// issue's Table 4 for the eight-kernel set (symbiotic-scheduling-
// concurrent-kernels.md, Table 4: the percentile of 40,320 orders, of
// which a sample is measured).
func (r Ranking) SampledFrom(orders int) *Sample {
	if r.N >= orders {
		return nil
	}
	n := float64(r.others)
	k := r.Percentile / 100 * n
	s := &Sample{Orders: orders, Low: 0, High: 100}
	if k > 0 {
		s.Low = 100 * distuv.Beta{Alpha: k, Beta: n - k + 1}.Quantile(0.025)
	}
	if k < n {
		s.High = 100 * distuv.Beta{Alpha: k + 1, Beta: n - k}.Quantile(0.975)
	}
	return s
}
