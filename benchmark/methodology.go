package benchmark

import (
	"github.com/gtune/gtune/measure"
	"math"
	"sort"
)

// The performance score of the AutoTuningAssociation methodology
// (Willemsen, Schoonhoven, Filipovič, Tørring, van Nieuwpoort & van
// Werkhoven, "A Methodology for Comparing Optimization Algorithms for
// Auto-Tuning", Future Generation Computer Systems 159, 2024; software:
// autotuning_methodology, baseline.py RandomSearchCalculatedBaseline,
// searchspace_statistics.py cutoff_point, visualize_experiments.py
// get_strategies_aggregated_performance):
//
//   - the baseline is random search without replacement, calculated, not
//     simulated: after M evaluations its best is the valid value at the
//     expected rank of the best of M draws from the N valid values, which
//     is (N+1)/(M+1) (rank 1 the optimum; the package computes the
//     0-based index round(M(N+1)/(M+1)) into the values sorted worst
//     first, which is this rank less one: we use the exact rank);
//   - a strategy's curve is standardised against it:
//     s(M) = (random(M) − strategy(M)) / (random(M) − optimum), 1 at the
//     optimum, 0 as good as random search, negative when worse;
//   - the score is the mean of s(M) over M in [M_start, M_end), where M_p
//     is the number of evaluations random search needs to reach the value
//     optimum + (1 − p)·(median − optimum): p = 0.5 (halfway from the
//     median to the optimum) for the start and p = 0.96 for the end
//     (cutoff_percentile_start, cutoff_percentile), median of the valid
//     values.
//
// The methodology's curves are over time or evaluations; here they are
// over evaluations (invalid configurations count), and a strategy's curve
// is its best-so-far time averaged over the runs.

// Default cutoffs of the window.
const (
	CutoffStart = 0.5
	CutoffEnd   = 0.96
)

// ExpectedBestRank is the expected rank (1 = best) of the best of m
// distinct draws, uniformly without replacement, from n ranked values:
// (n+1)/(m+1) (the expected minimum of a uniform m-subset of {1..n}).
func ExpectedBestRank(n, m int) float64 {
	return float64(n+1) / float64(m+1)
}

// RandomBaseline is the methodology's calculated random-search curve: the
// value of sorted (ascending, valid values) at rank
// round(ExpectedBestRank(n, m)).
func RandomBaseline(sorted []float64, m int) float64 {
	n := len(sorted)
	if m >= n {
		return sorted[0]
	}
	r := int(math.Round(ExpectedBestRank(n, max(m, 1))))
	r = min(max(r, 1), n)
	return sorted[r-1]
}

// ExpectedRandomBest is the exact expected best (minimum) value of m
// draws without replacement from sorted (ascending): the sum over ranks r
// of sorted[r−1]·C(n−r, m−1)/C(n, m), the order-statistic distribution of
// the minimum. Computed with a running ratio, O(n).
func ExpectedRandomBest(sorted []float64, m int) float64 {
	n := len(sorted)
	if m <= 0 {
		return math.NaN()
	}
	if m >= n {
		return sorted[0]
	}
	// p_1 = m/n; p_{r+1} = p_r·(n−r−m+1)/(n−r).
	p := float64(m) / float64(n)
	e := 0.0
	for r := 1; r <= n-m+1; r++ {
		e += sorted[r-1] * p
		p *= float64(n-r-m+1) / float64(n-r)
	}
	return e
}

// CutoffEvals is the number of evaluations random search (RandomBaseline)
// needs to reach optimum + (1 − p)·(median − optimum).
func CutoffEvals(sorted []float64, p float64) int {
	target := sorted[0] + (1-p)*(measure.Median(sorted)-sorted[0])
	// The largest rank whose value reaches the target.
	c := sort.Search(len(sorted), func(i int) bool { return sorted[i] > target })
	// Smallest m with round((n+1)/(m+1)) <= c.
	n := len(sorted)
	m := 1
	for m < n && int(math.Round(ExpectedBestRank(n, m))) > c {
		m++
	}
	return m
}

// Window gives the evaluations [start, end) the score averages over;
// end > start.
func Window(sorted []float64) (int, int) {
	s, e := CutoffEvals(sorted, CutoffStart), CutoffEvals(sorted, CutoffEnd)
	if e <= s {
		e = s + 1
	}
	return s, e
}

// Score is the methodology's performance score of a curve: curve[m−1] is
// the strategy's (mean) best value after m evaluations, defined at least
// up to the end of the window. Evaluations where random search already
// stands at the optimum are left out (their standardised value is
// undefined); NaN when none remain.
func Score(sorted []float64, curve []float64) float64 {
	s, e := Window(sorted)
	opt := sorted[0]
	sum, k := 0.0, 0
	for m := s; m < e && m <= len(curve); m++ {
		r := RandomBaseline(sorted, m)
		if r <= opt {
			continue
		}
		sum += (r - curve[m-1]) / (r - opt)
		k++
	}
	if k == 0 {
		return math.NaN()
	}
	return sum / float64(k)
}

// RandomFraction is the exact expected fraction of the optimum that
// random search reaches in m evaluations of p: m configurations drawn
// uniformly without replacement from the p.Space.Len() configurations
// searched (valid and invalid alike, as a random strategy draws them),
// its value optimum/best valid time drawn, 0 when none is valid. With N
// configurations and valid times v_1 ≤ … ≤ v_V, the best drawn is v_r
// with probability C(N−r, m−1)/C(N, m), so the expectation is
// Σ_r (v_1/v_r)·C(N−r, m−1)/C(N, m), by the running ratio of
// ExpectedRandomBest. It is the baseline of issue 35's "share of random
// search's gap closed" (GapClosed).
func (p *Problem) RandomFraction(m int) float64 {
	n, v := p.Space.Len(), len(p.Sorted)
	if m <= 0 || v == 0 {
		return 0
	}
	if m >= n {
		return 1
	}
	opt := p.Sorted[0]
	prob := float64(m) / float64(n) // P(best drawn is rank 1)
	e := 0.0
	for r := 1; r <= v && r <= n-m+1; r++ {
		e += opt / p.Sorted[r-1] * prob
		prob *= float64(n-r-m+1) / float64(n-r)
	}
	return e
}

// GapClosed is the share of random search's gap to the optimum that a
// mean fraction of the optimum f closes: (f − fr)/(1 − fr), fr the
// random search's (RandomFraction); 1 at the optimum, 0 as good as
// random search, negative below it; NaN where random search itself
// reaches the optimum (fr = 1: no gap).
func GapClosed(f, fr float64) float64 {
	if fr >= 1 {
		return math.NaN()
	}
	return (f - fr) / (1 - fr)
}
