// Package stats states what repeated measurements of one configuration
// support, after benchstat (golang.org/x/perf/benchstat): a sample per
// configuration, a distribution-free interval for its median, and a
// test of whether two samples differ, each with its method named, and a
// flag where the sample is too small for the claim.
//
// No distribution is assumed: GPU times are skewed and have stragglers
// (BENCHMARKS.md "Does one order have one time?"), so a mean and a
// t-interval would mislead.
package stats

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Interval is a confidence interval of a median.
type Interval struct {
	Median, Lo, Hi float64
	// Level is the confidence the interval achieves (0..1), at least the
	// level asked unless Short.
	Level float64
	// Short: the sample is too small for the level asked; the interval
	// is the sample's range, at the Level it achieves.
	Short  bool
	Method string
}

// MedianMethod names MedianCI's method.
const MedianMethod = "order statistics (binomial, distribution-free)"

// MedianCI is the median of xs and the narrowest interval [x(j), x(k)]
// of its order statistics, symmetric in rank, that covers the
// population median with probability at least level (0 < level < 1):
// P(j ≤ B < k) for B ~ Binomial(n, 1/2) (Conover, Practical
// Nonparametric Statistics, §3.2). With n = 10 at 0.95 it is
// [x(2), x(9)] at 0.9785; n below 6 cannot reach 0.95 (Short). Errors: no
// value, a value that is not finite, a level outside (0, 1).
func MedianCI(xs []float64, level float64) (Interval, error) {
	if !(level > 0 && level < 1) {
		return Interval{}, fmt.Errorf("stats: confidence level %v: want one in (0, 1)", level)
	}
	v, err := sorted(xs)
	if err != nil {
		return Interval{}, err
	}
	n := len(v)
	iv := Interval{Median: median(v), Method: MedianMethod}
	// cdf[i] = P(B ≤ i).
	cdf := make([]float64, n+1)
	acc := 0.0
	for i := 0; i <= n; i++ {
		acc += math.Exp(logChoose(n, i) - float64(n)*math.Ln2)
		cdf[i] = acc
	}
	// Ranks j and k = n+1-j (1-based): coverage P(j ≤ B ≤ n−j) =
	// 1 − 2·P(B ≤ j−1). The largest j that reaches the level.
	best := 0
	for j := 1; j <= (n+1)/2; j++ {
		if 1-2*cdf[j-1] >= level {
			best = j
		}
	}
	if best == 0 {
		iv.Lo, iv.Hi, iv.Short = v[0], v[n-1], true
		iv.Level = 1 - 2*cdf[0]
		if n == 1 {
			iv.Level = 0
		}
		return iv, nil
	}
	iv.Lo, iv.Hi = v[best-1], v[n-best]
	iv.Level = 1 - 2*cdf[best-1]
	return iv, nil
}

// UMethod names UTest's method.
const UMethod = "Mann-Whitney U, two-sided (exact without ties, else normal with tie correction)"

// UTest is the two-sided p-value of the Mann-Whitney U test that samples a
// and b come from one distribution (benchstat's test): exact from the
// U distribution where there is no tie and both samples have at most 50
// values, else the normal approximation with the tie correction and a
// continuity correction. Errors: an empty sample, a value that is not
// finite.
func UTest(a, b []float64) (float64, error) {
	x, err := sorted(a)
	if err != nil {
		return 0, err
	}
	y, err := sorted(b)
	if err != nil {
		return 0, err
	}
	n1, n2 := len(x), len(y)
	// Ranks of the pooled sample, ties averaged; U of a.
	type obs struct {
		v     float64
		fromA bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	slices.SortStableFunc(all, func(p, q obs) int { return cmp.Compare(p.v, q.v) })
	rankSumA, tieTerm := 0.0, 0.0
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].fromA {
				rankSumA += r
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j
	}
	u := rankSumA - float64(n1*(n1+1))/2
	if !ties && n1 <= 50 && n2 <= 50 {
		return exactU(n1, n2, u), nil
	}
	n := float64(n1 + n2)
	mean := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sd == 0 {
		return 1, nil // every value the same
	}
	z := (math.Abs(u-mean) - 0.5) / sd
	if z < 0 {
		z = 0
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2)), nil
}

// exactU is the two-sided p-value of U = u for samples of n1 and n2
// without ties: 2·P(U ≤ min(u, n1·n2 − u)), from the count of the
// arrangements of each U (the recurrence c(m, n, k) = c(m−1, n, k−n) +
// c(m, n−1, k)).
func exactU(n1, n2 int, u float64) float64 {
	max := n1 * n2
	// c[n][k] for the current m, over n = 0..n2.
	prev := make([][]float64, n2+1)
	for n := range prev {
		prev[n] = make([]float64, max+1)
		prev[n][0] = 1 // m = 0: one arrangement, U = 0
	}
	for m := 1; m <= n1; m++ {
		cur := make([][]float64, n2+1)
		for n := 0; n <= n2; n++ {
			cur[n] = make([]float64, max+1)
			for k := 0; k <= m*n; k++ {
				v := 0.0
				if k-n >= 0 {
					v += prev[n][k-n]
				}
				if n > 0 {
					v += cur[n-1][k]
				}
				cur[n][k] = v
			}
		}
		prev = cur
	}
	c := prev[n2]
	total := math.Exp(logChoose(n1+n2, n1))
	lo := math.Min(u, float64(max)-u)
	tail := 0.0
	for k := 0; float64(k) <= lo+1e-9; k++ {
		tail += c[k]
	}
	return math.Min(1, 2*tail/total)
}

var errEmpty = errors.New("stats: no value")

// sorted copies xs in ascending order. Errors: none, or a value that is
// not finite.
func sorted(xs []float64) ([]float64, error) {
	if len(xs) == 0 {
		return nil, errEmpty
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("stats: %v is not a finite value", x)
		}
	}
	v := slices.Clone(xs)
	slices.Sort(v)
	return v, nil
}

func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// Ranks returns the ranks of xs (1 the smallest), ties given the mean of
// the ranks they span.
func Ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && xs[idx[j]] == xs[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

// Spearman is Spearman's rank correlation of paired samples x and y: the
// Pearson correlation of their ranks (Ranks, ties averaged), in [−1, 1].
// Errors: lengths that differ, fewer than three pairs, a value that is
// not finite, or a sample whose values are all equal (no ranking).
func Spearman(x, y []float64) (float64, error) {
	if len(x) != len(y) {
		return 0, fmt.Errorf("stats: Spearman of %d and %d values", len(x), len(y))
	}
	if len(x) < 3 {
		return 0, fmt.Errorf("stats: Spearman of %d pairs: at least 3 are needed", len(x))
	}
	for _, v := range append(slices.Clone(x), y...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("stats: Spearman of a value that is not finite (%v)", v)
		}
	}
	rx, ry := Ranks(x), Ranks(y)
	if stat.Variance(rx, nil) == 0 || stat.Variance(ry, nil) == 0 {
		return 0, fmt.Errorf("stats: Spearman of a sample whose values are all equal")
	}
	return stat.Correlation(rx, ry, nil), nil
}
