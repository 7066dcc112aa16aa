package model

import (
	"encoding/json"
	"math"
	"os"
	"sort"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/shared"
)

// energyPoint is one clock of Kernel Tuner's synthetic FP32 kernel as its
// cache recorded it: the SM clock asked for and observed (MHz), the time
// of a launch (ms) and the mean power (W).
type energyPoint struct {
	Asked    int     `json:"nvml_gr_clock"`
	Observed float64 `json:"core_freq"`
	TimeMs   float64 `json:"time"`
	PowerW   float64 `json:"nvml_power"`
}

// energyCheck is the model against one recorded cache: per clock the
// model's time, power and energy of a launch and their relative errors.
type energyCheck struct {
	clock                        int
	timeMs, powerW, energyJ      float64
	timeErr, powerErr, energyErr float64
	cappedAt                     int
}

// checkEnergy runs the model over Kernel Tuner's synthetic FP32 kernel
// (kernel_tuner/energy/energy.py's fp32_kernel: 1,024-thread blocks, a
// grid of problem_size blocks, nr_outer × nr_inner dependent FMAs per
// thread) at each recorded clock. The kernel's efficiency is set so that
// the model's time at the highest clock that was not power-capped equals
// the measured one (one number per GPU, as the K20 calibration does);
// everything else is the model's.
func checkEnergy(t *testing.T, file, id string) []energyCheck {
	t.Helper()
	raw, err := os.ReadFile(shared.Path(t, "kernel_tuner_energy/"+file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ProblemSize []int                  `json:"problem_size"`
		Cache       map[string]energyPoint `json:"cache"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	var pts []energyPoint
	for _, p := range c.Cache {
		pts = append(pts, p)
	}
	sort.Slice(pts, func(a, b int) bool { return pts[a].Asked > pts[b].Asked })
	blocks := c.ProblemSize[0] * c.ProblemSize[1]
	flops := 2.0 * 64 * 1024 * float64(blocks) * 1024
	j := Geometry{Grid: [3]int{c.ProblemSize[0], c.ProblemSize[1], 1}, Block: [3]int{1024, 1, 1}}
	var ref energyPoint
	for _, p := range pts {
		if math.Abs(p.Observed-float64(p.Asked)) < 1 {
			ref = p
			break
		}
	}
	// Efficiency from the reference clock: time = flops / (peak · f/fmax · eff).
	eff := flops / (ref.TimeMs / 1e3 * d.PeakFP32GFLOPS * 1e9 * ref.Observed / float64(d.MaxCoreClockMHz()))
	var out []energyCheck
	for _, p := range pts {
		clock, mem, limit, err := ResolveSettings(d, &Settings{CoreClockMHz: p.Asked}, d.MaxCoreClockMHz(), d.PowerLimitDefaultW)
		if err != nil {
			t.Fatalf("%s at %d MHz: %v", id, p.Asked, err)
		}
		w := &Work{Flops: flops, Bytes: 4 * float64(blocks) * 1024, Registers: 32, Efficiency: eff}
		pr, err := Predict(d, w, j, Conditions{ClockMHz: clock, MemClockMHz: mem, PowerLimitW: limit, Power: PowerModelFor(d), OverheadMs: 0.003})
		if err != nil {
			t.Fatal(err)
		}
		e := energyCheck{clock: p.Asked, timeMs: pr.LaunchMs, powerW: pr.PowerW, energyJ: pr.PowerW * pr.LaunchMs / 1e3}
		e.timeErr = pr.LaunchMs/p.TimeMs - 1
		e.powerErr = pr.PowerW/p.PowerW - 1
		e.energyErr = e.energyJ/(p.PowerW*p.TimeMs/1e3) - 1
		if pr.PowerCapped {
			e.cappedAt = pr.SMClockMHz
		}
		out = append(out, e)
		t.Logf("%s %4d MHz (observed %6.1f): time %8.2f ms (%+.1f %%), power %6.1f W against %6.1f (%+.1f %%), energy %+.1f %%, capped at %d",
			id, p.Asked, p.Observed, pr.LaunchMs, 100*e.timeErr, pr.PowerW, p.PowerW, 100*e.powerErr, 100*e.energyErr, e.cappedAt)
	}
	return out
}

func medianAbs(xs []float64) float64 {
	a := make([]float64, len(xs))
	for i, x := range xs {
		a[i] = math.Abs(x)
	}
	sort.Float64s(a)
	n := len(a)
	if n%2 == 1 {
		return a[n/2]
	}
	return (a[n/2-1] + a[n/2]) / 2
}

// The power model against measured energy: Kernel Tuner's recorded
// caches of its synthetic FP32 kernel over SM clocks on an A100 and an
// RTX A4000 (../shared/datasets/kernel_tuner_energy). The median |error|
// of time and energy per clock is pinned just above what was measured
// (BENCHMARKS.md, "The power model against measured energy"): time within
// 1 %, energy 15.7 % low on the A100 and 40.2 % low on the A4000, far
// from the 10 % the model should reach. The kernel is latency-bound (a
// dependent FMA chain per thread: 24 % of the FP32 peak on the A100, 33 %
// on the A4000), and the model's SM power follows issued FP32 alone
// (DefaultPowerModel's Busy is 0); the A4000's clock table runs to 2,100
// MHz, past the clocks it sustains under its 140 W limit, which the
// voltage curve (its knee at 71 % of the highest clock) misplaces. A
// better model must lower these bounds.
func TestPowerModelAgainstKernelTunerEnergy(t *testing.T) {
	for _, c := range []struct {
		file, id     string
		energy, time float64 // median |relative error| at most
	}{
		{"synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json", "a100_40gb", 0.16, 0.01},
		{"synthetic_fp32_cache_NVIDIA_RTX_A4000.json", "rtx_a4000", 0.41, 0.01},
	} {
		checks := checkEnergy(t, c.file, c.id)
		var te, ee []float64
		for _, e := range checks {
			te, ee = append(te, e.timeErr), append(ee, e.energyErr)
		}
		t.Logf("%s: median |error| time %.1f %%, energy %.1f %%", c.id, 100*medianAbs(te), 100*medianAbs(ee))
		if medianAbs(ee) > c.energy || medianAbs(te) > c.time {
			t.Errorf("%s: median |error| time %.3f, energy %.3f; at most %.3f and %.3f", c.id, medianAbs(te), medianAbs(ee), c.time, c.energy)
		}
	}
}
