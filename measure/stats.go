// Package measure turns raw observations from a backend into the statistics
// gtune records: per-configuration time statistics (ms) and the derived
// energy quantities (J, W, J·s).
package measure

import (
	"math"
	"sort"
)

// Stats summarises repeated timings of one configuration. All fields are in
// the unit of the input (gtune uses milliseconds).
type Stats struct {
	N      int
	Mean   float64
	Median float64
	Min    float64
	Max    float64
	Std    float64 // sample standard deviation (n−1); 0 for n < 2
}

// Summarize computes Stats over xs. Non-finite values are ignored; an empty
// input gives the zero Stats.
func Summarize(xs []float64) Stats {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Stats{}
	}
	sort.Float64s(v)
	s := Stats{N: len(v), Min: v[0], Max: v[len(v)-1]}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	s.Mean = sum / float64(len(v))
	if len(v)%2 == 1 {
		s.Median = v[len(v)/2]
	} else {
		s.Median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	if len(v) > 1 {
		ss := 0.0
		for _, x := range v {
			d := x - s.Mean
			ss += d * d
		}
		s.Std = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}

// CV is the coefficient of variation Std/Mean (0 when Mean is 0).
func (s Stats) CV() float64 {
	if s.Mean == 0 {
		return 0
	}
	return s.Std / s.Mean
}
