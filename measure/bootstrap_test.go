package measure

import (
	"math/rand/v2"
	"testing"
)

// The counting paths for odd and even counts give exactly the bounds of
// the definition (sorting every resample, bootstrapSorted) from the same
// draws, with and without ties.
func TestBootstrapMatchesTheDefinition(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 3000; trial++ {
		n := 1 + g.IntN(40) // odd and even counts
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(g.IntN(6)) // ties
			if trial%2 == 0 {
				xs[i] = g.Float64()
			}
		}
		res := 1 + g.IntN(3000)
		li, hi := g.IntN(res), g.IntN(res)
		seed := g.Uint64()
		rng := func() *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }
		fast := bootstrapOdd
		if n%2 == 0 {
			fast = bootstrapEven
		}
		a, b := fast(xs, res, rng(), li, hi)
		c, d := bootstrapSorted(xs, res, rng(), li, hi)
		if a != c || b != d {
			t.Fatalf("n %d res %d order statistics %d, %d: %v %v, sorting gives %v %v (%v)", n, res, li, hi, a, b, c, d, xs)
		}
	}
}

// BenchmarkBootstrap32 is the timing interval of a replayed Kernel Tuner
// entry (32 recorded launches, 2,000 resamples).
func BenchmarkBootstrap32(b *testing.B) {
	xs := make([]float64, 32)
	for i := range xs {
		xs[i] = 1 + 0.01*float64(i%7)
	}
	for i := 0; i < b.N; i++ {
		BootstrapCI(xs, 2000, 0.95, 1)
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
