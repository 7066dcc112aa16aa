package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

// k20Point is one measured configuration of Table 3.3 of
// autotuning-energy-efficiency-power-capping.md (Tesla K20m, memory clock
// 2600 MHz): the SM clock, the achieved throughput and the mean power.
type k20Point struct {
	bench    string
	clockMHz int
	gbs      float64 // achieved DRAM bandwidth, GB/s
	powerW   float64
}

// Table 3.3's K20m points at supported clocks (the 324/324 MHz columns
// use a memory clock the device database does not list). Stencil's
// bandwidth is its 17.1 (14.5) GFLOP/s × 24/5 bytes per FLOP (section
// 3.2.1); vector-add's is measured directly. Matrix multiplication is left
// out: its DRAM traffic is not given (its AI of 1/6 counts operand loads
// that the tiles serve from shared memory).
var k20Table33 = []k20Point{
	{"vector-add", 758, 161.6, 120},
	{"vector-add", 640, 157, 107},
	{"vector-add", 614, 150, 102},
	{"stencil", 758, 17.1 * 24 / 5, 110.6},
	{"stencil", 640, 14.5 * 24 / 5, 91.7},
}

// TestK20CalibrationResiduals runs the simulated K20m on memory-bound
// kernels whose efficiency reproduces each measured bandwidth and compares
// the modelled power with Table 3.3. The residuals are documented in
// BENCHMARKS.md ("GPU settings"); the test keeps them from growing.
func TestK20CalibrationResiduals(t *testing.T) {
	d, err := device.Lookup("k20m")
	if err != nil {
		t.Fatal(err)
	}
	s := New(d, Options{Noise: -1})
	var sq float64
	for _, p := range k20Table33 {
		n := 1e7
		bytesPerElem := 12.0
		if p.bench == "stencil" {
			n, bytesPerElem = 4096*2048, 24
		}
		w := &backend.Work{Flops: n, Bytes: bytesPerElem * n, Registers: 16, Efficiency: p.gbs / d.MemoryBandwidthGBs}
		j := &backend.Job{Key: p.bench, Grid: [3]int{int(n) / 256, 1, 1}, Block: [3]int{256, 1, 1}, Settings: &backend.Settings{CoreClockMHz: p.clockMHz}}
		pr, err := s.predict(w, j)
		if err != nil {
			t.Fatal(err)
		}
		res := pr.PowerW - p.powerW
		sq += res * res
		t.Log(fmt.Sprintf("%-10s %d MHz: %.1f GB/s, model %.1f W, measured %.1f W, residual %+.1f W (%+.1f %%)",
			p.bench, p.clockMHz, p.gbs, pr.PowerW, p.powerW, res, 100*res/p.powerW))
		// Vector-add is DRAM traffic alone and the model reproduces it
		// within 3 %. The stencil draws ~27 % more than its DRAM traffic
		// explains (L1/L2 and issue activity of its 5-point reads, which
		// the model has no term for): a known gap, pinned so that it is
		// noticed when it changes.
		lo, hi := -0.03, 0.03
		if p.bench == "stencil" {
			lo, hi = -0.30, -0.20
		}
		if rel := res / p.powerW; rel < lo || rel > hi {
			t.Errorf("%s at %d MHz: model %.1f W vs measured %.1f W (%+.1f %%, documented %+.0f..%+.0f %%)", p.bench, p.clockMHz, pr.PowerW, p.powerW, 100*rel, 100*lo, 100*hi)
		}
	}
	t.Logf("RMS residual %.1f W over %d points", math.Sqrt(sq/float64(len(k20Table33))), len(k20Table33))
}
