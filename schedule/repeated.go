package schedule

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/stats"
)

// Statistics an order's repeated measurements are summarised by
// (Statistic). On the H100 one launch of a six-kernel plan now and then
// takes three times as long whatever the order (BENCHMARKS.md "Does one
// order have one time?"): the median keeps the typical run, the fastest
// run drops every straggler.
const (
	Median  = "median"
	Fastest = "fastest"
)

// Statistics lists them in the order the help gives them.
var Statistics = []string{Median, Fastest}

// Statistic returns the function of a statistic's name (Median,
// Fastest). Errors: another name.
func Statistic(name string) (func([]float64) float64, error) {
	switch name {
	case Median:
		return measure.Median, nil
	case Fastest:
		return slices.Min[[]float64], nil
	}
	return nil, fmt.Errorf("schedule: statistic %q: want %s or %s", name, Median, Fastest)
}

// Repeated is a ranking made from every order's repeated measurements:
// each order's value is its statistic over its repeats, and Ranking
// places the chosen order among them. Low and High are the 95 %
// interval of its percentile from the repeats' noise: a percentile
// bootstrap that draws each order's repeats again with replacement
// (Resamples times, seeded) and ranks again. SplitHalf is Spearman's
// correlation between the orders' statistics over the first and the
// second half of their repeats (orders with at least two; nil where
// fewer than three orders have, or every half is alike), how well one
// sweep's ranking of the orders predicts another's.
type Repeated struct {
	Ranking
	Statistic        string   `json:"statistic"`
	Repeats          int      `json:"repeats"`        // the fewest of any order
	Low              float64  `json:"percentile_low"` // percent
	High             float64  `json:"percentile_high"`
	Resamples        int      `json:"resamples"`
	SplitHalf        *float64 `json:"split_half,omitempty"`
	SplitHalfRepeats int      `json:"split_half_repeats,omitempty"` // repeats in each half (the fewest)
}

// RankRepeated ranks order chosen (an index into samples) among every
// order, each samples[i] its measured values (ms or J: lower is better),
// by the statistic named stat (Median or Fastest). resamples ≤ 0 takes
// 1,000. Errors: an unknown statistic, fewer than two orders, an order
// without values, chosen out of range, or a value Rank refuses.
func RankRepeated(samples [][]float64, chosen int, stat string, resamples int, seed uint64) (Repeated, error) {
	f, err := Statistic(stat)
	if err != nil {
		return Repeated{}, err
	}
	if len(samples) < 2 {
		return Repeated{}, errors.New("schedule: ranking needs at least two measured orders")
	}
	if chosen < 0 || chosen >= len(samples) {
		return Repeated{}, fmt.Errorf("schedule: order %d of %d", chosen, len(samples))
	}
	if resamples <= 0 {
		resamples = 1000
	}
	fewest := math.MaxInt
	values := make([]float64, len(samples))
	for i, s := range samples {
		if len(s) == 0 {
			return Repeated{}, fmt.Errorf("schedule: order %d has no measurement", i)
		}
		fewest = min(fewest, len(s))
		values[i] = f(s)
	}
	r, err := Rank(values, values[chosen])
	if err != nil {
		return Repeated{}, err
	}
	out := Repeated{Ranking: r, Statistic: stat, Repeats: fewest, Resamples: resamples}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pct := make([]float64, resamples)
	draw := make([]float64, len(samples))
	buf := make([]float64, 0, 64)
	for b := range pct {
		for i, s := range samples {
			buf = buf[:0]
			for range s {
				buf = append(buf, s[rng.IntN(len(s))])
			}
			draw[i] = f(buf)
		}
		rb, err := Rank(draw, draw[chosen])
		if err != nil {
			return Repeated{}, err
		}
		pct[b] = rb.Percentile
	}
	slices.Sort(pct)
	out.Low = pct[int(math.Floor(0.025*float64(resamples)))]
	out.High = pct[min(resamples-1, int(math.Ceil(0.975*float64(resamples)))-1)]
	if rho, n := splitHalf(samples, f); !math.IsNaN(rho) {
		out.SplitHalf, out.SplitHalfRepeats = &rho, n
	}
	return out, nil
}

// splitHalf is Spearman's correlation between f over the first and over
// the second half of each order's values (orders with two or more; the
// halves ⌊n/2⌋ and the rest), and the fewest values in a half; NaN where
// it cannot be computed.
func splitHalf(samples [][]float64, f func([]float64) float64) (float64, int) {
	var a, b []float64
	fewest := math.MaxInt
	for _, s := range samples {
		if len(s) < 2 {
			continue
		}
		h := len(s) / 2
		a = append(a, f(s[:h]))
		b = append(b, f(s[h:]))
		fewest = min(fewest, h)
	}
	rho, err := stats.Spearman(a, b)
	if err != nil {
		return math.NaN(), 0
	}
	return rho, fewest
}
