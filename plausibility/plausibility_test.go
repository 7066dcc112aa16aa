package plausibility

import (
	"math"
	"strings"
	"testing"
)

// The H100 SXM's entries in the device database: 66.9 TFLOP/s FP32, 3.35
// TB/s, 50 MiB of L2.
var h100 = Peaks{FLOPS: 66.9e12, BytesPerSecond: 3.35e12, L2Bytes: 50 << 20, Source: "H100"}

func TestRateOf(t *testing.T) {
	for _, c := range []struct {
		name, unit string
		v          float64
		kind       string
		perS       float64
		ok         bool
	}{
		{"GFLOP/s", "", 2, FLOPs, 2e9, true},
		{"perf", "TFLOPS", 3, FLOPs, 3e12, true},
		{"GB/s", "", 100, Bytes, 100e9, true},
		{"bw", "GiB/s", 1, Bytes, 1 << 30, true},
		{"GB/s/W", "", 5, "", 0, false},
		{"GFLOPS/W", "", 5, "", 0, false},
		{"time", "ms", 5, "", 0, false},
		{"GFLOP/s", "", math.NaN(), "", 0, false},
	} {
		r, ok := RateOf(c.name, c.unit, c.v)
		if ok != c.ok || r.Kind != c.kind || r.PerS != c.perS {
			t.Errorf("%s [%s]: %+v %v", c.name, c.unit, r, ok)
		}
	}
}

// Kernel Tuner's reading of convolution_milo on an H100: 4096² outputs ×
// 15×15 multiply-adds (2 FLOP each) in 0.0106 ms.
func TestConvolutionAt700TFLOPSIsImplausible(t *testing.T) {
	flops := 4096.0 * 4096 * 225 * 2
	bogus := CheckPeaks([]Rate{{Kind: FLOPs, PerS: flops / 0.0106e-3, From: "Gtune.Simulation.Flops"}}, h100, 0)
	if !strings.Contains(bogus, "Gtune.Simulation.Flops implies 712.2 TFLOP/s, 10.6× the peak of 66.9 TFLOP/s (H100)") {
		t.Errorf("0.0106 ms: %q", bogus)
	}
	// The true best, 0.278 ms: 27 TFLOP/s.
	if why := CheckPeaks([]Rate{{Kind: FLOPs, PerS: flops / 0.278e-3}}, h100, 0); why != "" {
		t.Errorf("0.278 ms flagged: %s", why)
	}
	// Within the margin of a peak is plausible; beyond it is not.
	if CheckPeaks([]Rate{{Kind: Bytes, PerS: 3.6e12}}, h100, 1<<30) != "" || CheckPeaks([]Rate{{Kind: Bytes, PerS: 3.8e12}}, h100, 1<<30) == "" {
		t.Error("margin")
	}
	// An L2-resident working set may beat DRAM bandwidth.
	if CheckPeaks([]Rate{{Kind: Bytes, PerS: 8e12}}, h100, 16<<20) != "" {
		t.Error("L2-resident working set held to DRAM bandwidth")
	}
	if CheckPeaks([]Rate{{Kind: FLOPs, PerS: 1e18}}, Peaks{}, 0) != "" {
		t.Error("unknown peaks flagged")
	}
}

func TestOutliers(t *testing.T) {
	// A 4×4 grid of two parameters, times about 1 ms, one at 0.0106 ms.
	var pts []Point
	for a := int32(0); a < 4; a++ {
		for b := int32(0); b < 4; b++ {
			tm := 1 + 0.1*float64(a) + 0.05*float64(b)
			if a == 2 && b == 1 {
				tm = 0.0106
			}
			pts = append(pts, Point{ID: int(10*a + b), Values: []int32{a, b}, TimeMs: tm})
		}
	}
	got := Outliers(pts, 0)
	if len(got) != 1 || !strings.HasPrefix(got[21], "0.0106 ms is 1/") {
		t.Fatalf("outliers %v", got)
	}
	// A real best, 3× faster than its neighbours, is not flagged.
	pts[9].TimeMs = 0.4
	if got := Outliers(pts[:8], 0); len(got) != 0 {
		t.Errorf("flagged without the outlier: %v", got)
	}
	if got := Outliers(pts[:3], 0); got != nil {
		t.Errorf("judged with too few neighbours: %v", got)
	}
}
