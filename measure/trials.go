package measure

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// Median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return quantileSorted(sorted(xs), 0.5)
}

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

func quantileSorted(s []float64, q float64) float64 {
	n := len(s)
	if n%2 == 1 && q == 0.5 {
		return s[n/2]
	}
	if q == 0.5 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	i := int(math.Floor(q * float64(n-1)))
	return s[min(max(i, 0), n-1)]
}

// BootstrapCI is the percentile-bootstrap confidence interval of the
// median of xs at level (e.g. 0.95): resamples resamples of len(xs)
// values drawn with replacement by a PCG generator seeded with seed, the
// median of each, and the (1−level)/2 and (1+level)/2 order statistics of
// those medians (indices ⌊r·(1−level)/2⌋ and ⌈r·(1+level)/2⌉ − 1). The
// same inputs give the same bounds. With 5 or fewer values the interval
// is [min, max] (a resample's median equals the smallest value with
// probability ≥ 5.8 %), which makes early stopping on few trials
// conservative. No values: (0, 0).
func BootstrapCI(xs []float64, resamples int, level float64, seed uint64) (lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	if resamples <= 0 {
		resamples = 2000
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	a := (1 - level) / 2
	li := min(max(int(math.Floor(float64(resamples)*a)), 0), resamples-1)
	hi2 := min(max(int(math.Ceil(float64(resamples)*(1-a)))-1, 0), resamples-1)
	if n%2 == 1 {
		return bootstrapOdd(xs, resamples, r, li, hi2)
	}
	return bootstrapEven(xs, resamples, r, li, hi2)
}

// bootstrapSorted is the definition: the median of each resample by
// sorting it, the order statistics li and hi of the medians by sorting
// them.
func bootstrapSorted(xs []float64, resamples int, r *rand.Rand, li, hi int) (float64, float64) {
	n := len(xs)
	meds := make([]float64, resamples)
	buf := make([]float64, n)
	for k := range meds {
		for i := range buf {
			buf[i] = xs[r.IntN(n)]
		}
		sort.Float64s(buf)
		meds[k] = quantileSorted(buf, 0.5)
	}
	sort.Float64s(meds)
	return meds[li], meds[hi]
}

// bootstrapOdd is BootstrapCI for an odd number of values, with the same
// draws and the same result, without sorting: a resample's median is one
// of the values, the (n/2+1)-th smallest of those drawn, found by
// counting draws per rank; the order statistics of the medians are found
// by counting medians per rank. This is the timing path of every
// measured configuration (7 timed runs by default), where sorting 2,000
// resamples cost a quarter of a millisecond.
func bootstrapOdd(xs []float64, resamples int, r *rand.Rand, li, hi int) (float64, float64) {
	n := len(xs)
	order, rank := ranks(xs)
	drawn := make([]int, n)   // draws per rank in one resample
	medians := make([]int, n) // resample medians per rank
	for range resamples {
		clear(drawn)
		for range n {
			drawn[rank[r.IntN(n)]]++
		}
		c := 0
		for k, d := range drawn {
			if c += d; c > n/2 {
				medians[k]++
				break
			}
		}
	}
	at := func(q int) float64 { // the q-th smallest median, 0-based
		c := 0
		for k, m := range medians {
			if c += m; c > q {
				return xs[order[k]]
			}
		}
		return xs[order[n-1]]
	}
	return at(li), at(hi)
}

// ranks gives order (order[rank] = index into xs, ties in index order)
// and its inverse rank[index].
func ranks(xs []float64) (order, rank []int) {
	order = make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return xs[order[a]] < xs[order[b]] })
	rank = make([]int, len(xs))
	for k, i := range order {
		rank[i] = k
	}
	return order, rank
}

// bootstrapEven is BootstrapCI for an even number of values, with the
// same draws and the same result as bootstrapSorted: a resample's median
// is the mean of its (n/2)-th and (n/2+1)-th smallest values, found by
// counting draws per rank instead of sorting the resample; the medians are
// then sorted as the definition does. Replays take this path: Kernel
// Tuner caches record 32 (or 7) launch times, and sorting every resample
// of every replayed entry made a replay of 100 configurations 20 times
// slower than reading the cache.
func bootstrapEven(xs []float64, resamples int, r *rand.Rand, li, hi int) (float64, float64) {
	n := len(xs)
	order, rank := ranks(xs)
	drawn := make([]int, n)
	meds := make([]float64, resamples)
	for m := range meds {
		clear(drawn)
		for range n {
			drawn[rank[r.IntN(n)]]++
		}
		// The values at sorted positions n/2-1 and n/2.
		lo, hi := -1, -1
		c := 0
		for k, d := range drawn {
			c += d
			if lo < 0 && c > n/2-1 {
				lo = k
			}
			if c > n/2 {
				hi = k
				break
			}
		}
		meds[m] = (xs[order[lo]] + xs[order[hi]]) / 2
	}
	sort.Float64s(meds)
	return meds[li], meds[hi]
}

// Protocol is how a configuration's energy is measured (part 2 of the
// "trustworthy energy measurement" issue). Zero fields take the defaults
// of DefaultProtocol.
type Protocol struct {
	MaxTrials int     // trials at most (5)
	MinTrials int     // trials before early stopping may apply (3)
	Target    float64 // stop once the CI half-width / median is below this (0.01)
	CVFlag    float64 // flag a configuration whose coefficient of variation exceeds this (0.02)
	Level     float64 // confidence level (0.95)
	Resamples int     // bootstrap resamples (2000)
	Seed      uint64  // bootstrap seed (1)

	Warmup       bool          // warm up until the temperature is steady first
	WarmupSlope  float64       // steady: |slope| below this, °C/s (0.25)
	WarmupWindow time.Duration // slope fitted over the last WarmupWindow (1 s)
	WarmupMax    time.Duration // give up warming up after this (5 s)
	// Thermal is the temperature policy (ThermalNone, ThermalSteady,
	// ThermalModel, ThermalBoth; "" is ThermalNone). Steady lengthens
	// the warm-up to SteadyWindow / SteadySlope / SteadyMax where the
	// Warmup fields ask for less.
	Thermal string
	// Settle warms the GPU up before this measurement until the Meter's
	// HeatLog says it is steady (ThermalSteady's slope, window and cap,
	// the earlier measurements' readings counted): nothing where the run
	// has warmed it already. The tuner asks it of a re-measurement under
	// ThermalSettle.
	Settle bool
	// RefTempC is the temperature ThermalModel corrects energies to
	// (0: DefaultRefTempC), °C.
	RefTempC float64

	Period time.Duration // counter update period (100 ms, an H100's): sets the trial length; the prior for Periods
	// periods pools the update gaps of every measurement of this counter
	// (PeriodEstimate, kept by a Meter); the trials' power is computed
	// with its median after this run's gaps are added. Nil: the median of
	// this run's gaps alone. Unexported: it is the measuring process's
	// state, not part of a request that travels to a worker.
	periods *PeriodEstimate
	// heat is the GPU's temperature history (the Meter's HeatLog): this
	// measurement's readings go on it, and Settle and thermal_steady
	// read it. Nil: no history.
	heat    *HeatLog
	Edge    time.Duration // uncertainty of an update instant (Poll + 50 µs)
	Poll    time.Duration // counter polling period (DefaultPoll)
	LaunchS float64       // estimated time per launch, s (trials span ≥ 2 launches)
}

// DefaultProtocol has the defaults named at Protocol.
var DefaultProtocol = Protocol{
	MaxTrials: 5, MinTrials: 3, Target: 0.01, CVFlag: 0.02, Level: 0.95, Resamples: 2000, Seed: 1,
	WarmupSlope: 0.25, WarmupWindow: time.Second, WarmupMax: 5 * time.Second,
	Period: 100 * time.Millisecond, Poll: DefaultPoll,
}

// period is the update period trials are timed with, s: the median gap of
// p.periods with gaps added (without adding them to the pool), else of
// gaps alone, else p.Period.
func (p Protocol) period(gaps []float64) float64 {
	var pooled []float64
	if p.periods != nil {
		p.periods.mu.Lock()
		pooled = append(pooled, p.periods.gaps...)
		p.periods.mu.Unlock()
	}
	pooled = append(pooled, gaps...)
	if len(pooled) == 0 {
		return p.Period.Seconds()
	}
	return Median(pooled)
}

// WithDefaults fills the zero fields from DefaultProtocol.
func (p Protocol) WithDefaults() Protocol {
	d := DefaultProtocol
	set := func(v *int, dv int) {
		if *v <= 0 {
			*v = dv
		}
	}
	setf := func(v *float64, dv float64) {
		if *v <= 0 {
			*v = dv
		}
	}
	setd := func(v *time.Duration, dv time.Duration) {
		if *v <= 0 {
			*v = dv
		}
	}
	set(&p.MaxTrials, d.MaxTrials)
	set(&p.MinTrials, d.MinTrials)
	p.MinTrials = min(p.MinTrials, p.MaxTrials)
	set(&p.Resamples, d.Resamples)
	setf(&p.Target, d.Target)
	setf(&p.CVFlag, d.CVFlag)
	setf(&p.Level, d.Level)
	setf(&p.WarmupSlope, d.WarmupSlope)
	setd(&p.WarmupWindow, d.WarmupWindow)
	setd(&p.WarmupMax, d.WarmupMax)
	if thermalSteady(p.Thermal) || p.Settle {
		p.WarmupSlope = math.Min(p.WarmupSlope, SteadySlope)
		p.WarmupWindow = max(p.WarmupWindow, SteadyWindow)
		p.WarmupMax = max(p.WarmupMax, SteadyMax)
	}
	setf(&p.RefTempC, DefaultRefTempC)
	setd(&p.Period, d.Period)
	setd(&p.Poll, d.Poll)
	setd(&p.Edge, p.Poll+50*time.Microsecond)
	if p.Seed == 0 {
		p.Seed = d.Seed
	}
	return p
}

// TrialStats summarises repeated trials of one quantity.
type TrialStats struct {
	N             int
	Median        float64
	CILow, CIHigh float64 // bootstrap interval of the median (BootstrapCI)
	HalfWidth     float64 // (CIHigh − CILow) / 2 / Median
	CV            float64 // sample standard deviation / mean
	Unstable      bool    // CV above the protocol's CVFlag
	EarlyStopped  bool    // stopped before MaxTrials because HalfWidth ≤ Target
	TargetReached bool    // HalfWidth ≤ Target
	ValuesInOrder []float64
}

// Summarize computes the trial statistics of xs under p (defaults filled).
func (p Protocol) Summarize(xs []float64) TrialStats {
	p = p.WithDefaults()
	st := Summarize(xs)
	t := TrialStats{N: st.N, Median: st.Median, CV: st.CV(), ValuesInOrder: append([]float64(nil), xs...)}
	t.CILow, t.CIHigh = BootstrapCI(xs, p.Resamples, p.Level, p.Seed)
	if t.Median != 0 {
		t.HalfWidth = (t.CIHigh - t.CILow) / 2 / math.Abs(t.Median)
	}
	t.Unstable = t.CV > p.CVFlag
	t.TargetReached = t.N >= 2 && t.HalfWidth <= p.Target
	t.EarlyStopped = t.TargetReached && t.N < p.MaxTrials
	return t
}

// Done reports whether the trials xs suffice: MaxTrials reached, or at
// least MinTrials with the interval's relative half-width at most Target.
func (p Protocol) Done(xs []float64) bool {
	p = p.WithDefaults()
	if len(xs) >= p.MaxTrials {
		return true
	}
	if len(xs) < p.MinTrials {
		return false
	}
	return p.Summarize(xs).TargetReached
}

// Slope is the least-squares slope of ys over xs (units of y per unit of
// x); 0 for fewer than two points or constant xs.
func Slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}
