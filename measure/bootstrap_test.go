package measure

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// bootstrapRef is the percentile bootstrap as BootstrapCI documents it,
// by sorting every resample: the definition the counting path must match.
func bootstrapRef(xs []float64, resamples int, level float64, seed uint64) (lo, hi float64) {
	n := len(xs)
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
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
	a := (1 - level) / 2
	li := int(math.Floor(float64(resamples) * a))
	hi2 := int(math.Ceil(float64(resamples)*(1-a))) - 1
	return meds[min(max(li, 0), resamples-1)], meds[min(max(hi2, 0), resamples-1)]
}

// BootstrapCI gives exactly the definition's bounds, with and without
// ties, for odd counts (its counting path) and even ones.
func TestBootstrapMatchesTheDefinition(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 3000; trial++ {
		n := 1 + g.IntN(15)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(g.IntN(6)) // ties
			if trial%2 == 0 {
				xs[i] = g.Float64()
			}
		}
		res := 1 + g.IntN(3000)
		lvl := []float64{0.95, 0.9, 0.5, 0.99}[g.IntN(4)]
		seed := g.Uint64()
		a, b := BootstrapCI(xs, res, lvl, seed)
		c, d := bootstrapRef(xs, res, lvl, seed)
		if a != c || b != d {
			t.Fatalf("n %d res %d: %v %v vs %v %v (%v)", n, res, a, b, c, d, xs)
		}
	}
}

// BenchmarkBootstrap7 is the timing interval of one configuration (7
// timed runs, 2,000 resamples).
func BenchmarkBootstrap7(b *testing.B) {
	xs := []float64{1.2, 1.1, 1.3, 1.25, 1.15, 1.22, 1.18}
	for i := 0; i < b.N; i++ {
		BootstrapCI(xs, 2000, 0.95, 1)
	}
}
