package sim

import (
	"slices"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

// With Stragglers p, about a fraction p of a launch's timed runs take
// StragglerFactor (±25 %) times as long; without, none does. A repeat of
// the plan (Plan.Repeat) draws fresh noise, the first measurement the
// same as ever.
func TestStragglers(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	w := backend.Work{Flops: 1e9, Bytes: 4e9, Registers: 32}
	times := func(o Options, repeat int) []float64 {
		t.Helper()
		s := New(d, o)
		if err := s.Prepare(ctx, &backend.Problem{Kernels: []backend.Kernel{{KernelName: "k"}}}); err != nil {
			t.Fatal(err)
		}
		j := job("256", 4096, 256, w)
		j.Iterations = 2000
		b, err := s.Compile(ctx, j.Job)
		if err != nil {
			t.Fatal(err)
		}
		p := j.Plan(b)
		p.Repeat = repeat
		r, err := s.Run(ctx, p)
		if err != nil || r.Status != backend.StatusValid {
			t.Fatalf("Run: %v, %+v", err, r)
		}
		return r.TimesMs
	}
	slow := func(ts []float64) (frac, meanFactor float64) {
		med := slices.Clone(ts)
		slices.Sort(med)
		m := med[len(med)/2]
		n, sum := 0, 0.0
		for _, x := range ts {
			if x > 1.5*m {
				n++
				sum += x / m
			}
		}
		if n == 0 {
			return 0, 0
		}
		return float64(n) / float64(len(ts)), sum / float64(n)
	}
	if f, _ := slow(times(Options{Seed: 1}, 0)); f != 0 {
		t.Errorf("no stragglers asked: %.3f of the runs slow", f)
	}
	ts := times(Options{Seed: 1, Stragglers: 0.13}, 0)
	f, k := slow(ts)
	// 2,000 runs: the fraction's standard error is 0.0075.
	if f < 0.105 || f > 0.155 || k < 2.8 || k > 3.6 {
		t.Errorf("Stragglers 0.13: %.3f of the runs slow, by %.2f× on average; want about 0.13 and 3.2×", f, k)
	}
	if again := times(Options{Seed: 1, Stragglers: 0.13}, 0); !slices.Equal(again, ts) {
		t.Error("the same plan measured twice differs: the noise is not decided by the plan")
	}
	if rep := times(Options{Seed: 1, Stragglers: 0.13}, 1); slices.Equal(rep, ts) {
		t.Error("repeat 1 measured what repeat 0 did")
	}
}
