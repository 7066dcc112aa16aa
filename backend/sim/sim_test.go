package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

var ctx = context.Background()

func newSim(t *testing.T, id string, opts Options) *Sim {
	t.Helper()
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	s := New(d, opts)
	if err := s.Prepare(ctx, backend.Single(backend.Kernel{KernelName: "k", SourceName: "k.cu",
		Args:         []backend.Arg{{Name: "a", Type: "float", Kind: backend.ArgVector, Count: 1 << 20}},
		Verification: &backend.Verification{Method: "AbsoluteDifference", Threshold: 1e-6}})); err != nil {
		t.Fatal(err)
	}
	return s
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// A memory-bound kernel at full occupancy (256 threads × 32 registers: 8
// blocks, 64 warps per SM) over a grid of whole waves streams at the
// H100's 3352 GB/s: t = bytes / bandwidth + 3 µs launch overhead.
func TestMemoryBoundAtFullBandwidth(t *testing.T) {
	const bytes = 4 << 30
	grid := 132 * 8 * 16 // 16 full waves
	want := bytes/3352e9*1e3 + 0.003

	s := newSim(t, "h100_sxm", Options{Noise: -1})
	p := predict(t, s, job("mem", grid, 256, backend.Work{Bytes: bytes, Registers: 32}))
	if p.Occupancy.Occupancy != 1 || p.Waves != 16 || math.Abs(p.LaunchMs-want) > 1e-9*want {
		t.Fatalf("noise-free: occupancy %v waves %d time %v ms, want 1, 16, %v ms", p.Occupancy.Occupancy, p.Waves, p.LaunchMs, want)
	}
	// With 1 % noise the mean of n launches lies within 4σ/√n of the model.
	s = newSim(t, "h100_sxm", Options{Seed: 7})
	j := job("mem", grid, 256, backend.Work{Bytes: bytes, Registers: 32})
	j.Iterations = 64
	r := run(t, s, j)
	if r.Status != backend.StatusValid || len(r.TimesMs) != 64 {
		t.Fatalf("status %s, %d times", r.Status, len(r.TimesMs))
	}
	tol := 4 * 0.01 / math.Sqrt(64)
	if m := mean(r.TimesMs); math.Abs(m-want)/want > tol {
		t.Errorf("mean of 64 noisy launches %v ms, model %v ms, beyond %.2f%%", m, want, 100*tol)
	}
}

// The same kernel held to one 256-thread block per SM by 120000 bytes of
// dynamic shared memory (occupancy 8/64 = 1/8) hides a quarter of the
// latency a saturating occupancy of 1/2 does: 4× the kernel time.
func TestLowOccupancyIsSlower(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Noise: -1})
	const bytes = 1 << 30
	full := predict(t, s, job("full", 132*8, 256, backend.Work{Bytes: bytes, Registers: 32}))
	jl := job("low", 132*8, 256, backend.Work{Bytes: bytes, Registers: 32})
	jl.DynamicSharedBytes = 120000
	low := predict(t, s, jl)
	if low.Occupancy.ActiveBlocksPerSM != 1 || low.Occupancy.Occupancy != 0.125 || low.Occupancy.Limiter != "shared_memory" {
		t.Fatalf("low occupancy: %+v", low.Occupancy)
	}
	if low.LaunchMs <= full.LaunchMs || math.Abs(low.KernelMs-4*full.KernelMs) > 1e-9*low.KernelMs {
		t.Errorf("1/8 occupancy kernel %v ms, full %v ms; want 4× slower", low.KernelMs, full.KernelMs)
	}
}

// 1024 threads × 64 registers fit one block per SM; 133 blocks on 132 SMs
// need two waves, twice the kernel time of 132 blocks of the same work each.
func TestWaveQuantization(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Noise: -1})
	perBlock := backend.Work{Bytes: 8 << 20, Flops: 1 << 24, Registers: 64}
	w132, w133 := perBlock, perBlock
	w132.Bytes, w132.Flops = 132*perBlock.Bytes, 132*perBlock.Flops
	w133.Bytes, w133.Flops = 133*perBlock.Bytes, 133*perBlock.Flops
	a := predict(t, s, job("132", 132, 1024, w132))
	b := predict(t, s, job("133", 133, 1024, w133))
	if a.Occupancy.ActiveBlocksPerSM != 1 || a.Waves != 1 || b.Waves != 2 {
		t.Fatalf("blocks/SM %d, waves %d and %d", a.Occupancy.ActiveBlocksPerSM, a.Waves, b.Waves)
	}
	if r := b.KernelMs / a.KernelMs; math.Abs(r-2) > 1e-9 {
		t.Errorf("133 blocks / 132 blocks kernel time = %v, want 2", r)
	}
	if r := b.LaunchMs / a.LaunchMs; r < 1.95 || r > 2 {
		t.Errorf("launch time ratio %v, want ≈ 2 (overhead counted once)", r)
	}
}

func TestFailureModes(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{})
	w := backend.Work{Bytes: 1 << 20, Registers: 32}
	cases := []struct {
		name   string
		j      *tjob
		status backend.Status
		reason string
	}{
		{"threads", job("a", 10, 1025, w), backend.StatusLaunchFailed, "too many threads per block"},
		{"dims", &tjob{Job: &backend.Job{Key: "b", Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 65}, Work: &w}}, backend.StatusLaunchFailed, "invalid argument"},
		{"zero", job("c", 0, 128, w), backend.StatusLaunchFailed, "invalid argument"},
		{"registers", job("d", 10, 1024, backend.Work{Bytes: 1, Registers: 72}), backend.StatusLaunchFailed, "too many resources requested for launch"},
		{"shared", &tjob{Job: &backend.Job{Key: "e", Grid: [3]int{1, 1, 1}, Block: [3]int{128, 1, 1}, DynamicSharedBytes: 200000, Work: &backend.Work{Registers: 32, SharedMemory: 40000}}},
			backend.StatusLaunchFailed, "shared memory"},
		{"verify", &tjob{Job: &backend.Job{Key: "f", Grid: [3]int{10, 1, 1}, Block: [3]int{128, 1, 1}, Work: &backend.Work{Bytes: 1, Invalid: true}}, Verify: true},
			backend.StatusVerificationFailed, "max error"},
		{"unverified invalid", &tjob{Job: &backend.Job{Key: "g", Grid: [3]int{10, 1, 1}, Block: [3]int{128, 1, 1}, Work: &backend.Work{Bytes: 1, Invalid: true}}},
			backend.StatusValid, ""},
		// 1e12 bytes take 298 ms per launch; 8 launches exceed 1 s.
		{"timeout", &tjob{Job: &backend.Job{Key: "h", Grid: [3]int{132 * 8, 1, 1}, Block: [3]int{256, 1, 1}, Work: &backend.Work{Bytes: 1e12, Registers: 32}}, Iterations: 7, Timeout: time.Second},
			backend.StatusTimeout, "timeout"},
	}
	for _, c := range cases {
		r := run(t, s, c.j)
		if r.Status != c.status || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: status %s reason %q, want %s containing %q", c.name, r.Status, r.Reason, c.status, c.reason)
		}
		if c.status != backend.StatusValid && len(r.TimesMs) != 0 {
			t.Errorf("%s: failed run reports times %v", c.name, r.TimesMs)
		}
		if c.status == backend.StatusVerificationFailed && !(r.MaxError > 1e-6) {
			t.Errorf("%s: MaxError %v not above the 1e-6 threshold", c.name, r.MaxError)
		}
	}
	// The largest block 72 registers allow: 2304 regs/warp, 28 warps (rounded to 4) = 64512 → 896 threads.
	b, err := s.Compile(ctx, job("i", 1, 1024, backend.Work{Registers: 72}).Job)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := s.Run(ctx, job("i", 1, 896, backend.Work{Registers: 72}).Plan(b))
	if r.Launches[0].MaxThreadsPerBlock != 896 || r.Status != backend.StatusValid {
		t.Errorf("72 registers: max threads per block %d status %s, want 896 valid", r.Launches[0].MaxThreadsPerBlock, r.Status)
	}

	compileFails := map[string]backend.Work{
		"CompileFails":          {CompileFails: true},
		"too much shared data":  {SharedMemory: 50000},
		"registers, more than":  {Registers: 256},
		"Efficiency":            {Efficiency: 1.5},
		"must be finite and >=": {Flops: -1},
	}
	for want, w := range compileFails {
		_, err := s.Compile(ctx, job("x", 1, 32, w).Job)
		var ce *backend.CompileError
		if !errors.As(err, &ce) || !strings.Contains(ce.Log, want) || !strings.Contains(ce.Log, "k.cu") {
			t.Errorf("Compile(%+v) = %v, want *CompileError with %q", w, err, want)
		}
	}
	_, err = s.Compile(ctx, &backend.Job{Key: "nil"})
	var ce *backend.CompileError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "Gtune.Simulation") {
		t.Errorf("Compile without Work: %v", err)
	}
}

func TestDeterminism(t *testing.T) {
	w := backend.Work{Bytes: 1 << 28, Flops: 1 << 30, Registers: 32}
	keys := []string{"1,2", "3,4", "5,6"}
	times := func(seed int64, order []string) map[string][]float64 {
		s := newSim(t, "h100_sxm", Options{Seed: seed})
		out := map[string][]float64{}
		for _, k := range order {
			r := run(t, s, job(k, 1000, 256, w))
			out[k] = r.TimesMs
		}
		return out
	}
	a := times(1, keys)
	b := times(1, []string{keys[2], keys[0], keys[1], keys[0]})
	for _, k := range keys {
		for i := range a[k] {
			if a[k][i] != b[k][i] {
				t.Fatalf("key %s repetition %d: %v then %v", k, i, a[k][i], b[k][i])
			}
		}
	}
	if a["1,2"][0] == a["3,4"][0] || a["1,2"][0] == a["1,2"][1] {
		t.Errorf("noise does not vary with key or repetition: %v %v", a["1,2"], a["3,4"])
	}
	if c := times(2, keys); c["1,2"][0] == a["1,2"][0] {
		t.Error("noise does not vary with the seed")
	}
	// Sample relative sd of 1 % noise over many launches lies in [0.8 %, 1.2 %].
	s := newSim(t, "h100_sxm", Options{Seed: 3, Noise: -1})
	model := predict(t, s, job("sd", 1000, 256, w)).LaunchMs
	s = newSim(t, "h100_sxm", Options{Seed: 3})
	j := job("sd", 1000, 256, w)
	j.Iterations = 2000
	r := run(t, s, j)
	ss := 0.0
	for _, x := range r.TimesMs {
		ss += (x/model - 1) * (x/model - 1)
	}
	if sd := math.Sqrt(ss / float64(len(r.TimesMs))); sd < 0.008 || sd > 0.012 {
		t.Errorf("relative sd of times %v, want ≈ 0.01", sd)
	}
}

func TestEnergyAndPower(t *testing.T) {
	type load struct {
		name     string
		id       string
		w        backend.Work
		grid     int
		min, max float64 // expected mean power, W
	}
	// Calibration targets: H100 idle 70–130 W, memory-bound at full
	// bandwidth 350–450 W, FP32 at the full issue rate 560–640 W
	// (HopperPowerModel: 601 W; the probe's register-operand FMAs read
	// 429–458 W at 0.64 of it), FP32 with shared-memory traffic as a GEMM
	// has it near the 700 W limit (cuBLAS SGEMM read 675–711 W); K20c with a
	// context and no work at 758/2600 MHz 85–100 W (K20PowerModel:
	// 25 W + 18 W clocked SM idle + 51.4 W memory background at 2600 MHz
	// = 94.4 W; recalibrated from the earlier 25–45 W guess), full load
	// 150–225 W.
	loads := []load{
		{"h100 empty", "h100_sxm", backend.Work{Registers: 32}, 132, 70, 130},
		{"h100 copy", "h100_sxm", backend.Work{Bytes: 8 << 30, Registers: 32}, 132 * 8 * 4, 350, 450},
		{"h100 fp32", "h100_sxm", backend.Work{Flops: 1e13, Registers: 32}, 132 * 8 * 4, 560, 640},
		{"h100 gemm", "h100_sxm", backend.Work{Flops: 1e13, SharedBytes: 4.5e12, Registers: 32}, 132 * 8 * 4, 650, 700},
		{"k20c empty", "k20c", backend.Work{Registers: 32}, 13, 85, 100},
		{"k20c copy", "k20c", backend.Work{Bytes: 1 << 30, Registers: 32}, 13 * 8 * 4, 100, 225},
		{"k20c fp32", "k20c", backend.Work{Flops: 1e12, Registers: 32}, 13 * 8 * 4, 150, 225},
	}
	for _, l := range loads {
		s := newSim(t, l.id, Options{Seed: 11})
		j := job(l.name, l.grid, 256, l.w)
		j.Energy, j.EnergyWindow, j.Iterations = true, 2*time.Second, 20
		r := run(t, s, j)
		e := r.Energy
		if r.Status != backend.StatusValid || e == nil {
			t.Fatalf("%s: status %s energy %v", l.name, r.Status, e)
		}
		if e.MeanPowerW < l.min || e.MeanPowerW > l.max || e.MeanPowerW > s.Device().PowerLimitW {
			t.Errorf("%s: mean power %.1f W outside [%v, %v] or above the limit", l.name, e.MeanPowerW, l.min, l.max)
		}
		// Energy per launch = power × launch time: the times carry 1 % noise
		// (mean of 20: σ 0.22 %), the power 0.5 %; 5σ of the sum ≈ 3 %.
		tMean := mean(r.TimesMs) / 1e3
		if rel := math.Abs(e.EnergyPerLaunchJ-e.MeanPowerW*tMean) / e.EnergyPerLaunchJ; rel > 0.03 {
			t.Errorf("%s: energy per launch %v J vs power × time %v J", l.name, e.EnergyPerLaunchJ, e.MeanPowerW*tMean)
		}
		want := int(math.Ceil(2 / (predict(t, s, j).LaunchMs / 1e3)))
		if e.Launches != want || math.Abs(e.EnergyJ-e.EnergyPerLaunchJ*float64(e.Launches)) > 1e-9*e.EnergyJ ||
			e.Method != "sim-energy-counter" || e.WindowS < 2 || e.MemClockMHz != float64(s.Device().MemClockMHz) {
			t.Errorf("%s: energy window %+v, want %d launches", l.name, e, want)
		}
	}
	// FP32 with shared-memory traffic at 0.9 of its peak on an H100
	// draws more than 700 W at 1980 MHz (729 W), so the clock steps down
	// until it fits and the SW power cap reason is set.
	s := newSim(t, "h100_sxm", Options{Noise: -1})
	j := job("cap", 132*8*4, 256, backend.Work{Flops: 1e13, SharedBytes: 4.5e12, Registers: 32})
	j.Energy = true
	r := run(t, s, j)
	if r.Energy.SMClockMHz >= 1980 || r.Energy.ClockEventReasons&reasonSwPowerCap == 0 || r.Energy.MeanPowerW > 700 {
		t.Errorf("power-capped H100: %+v", r.Energy)
	}
	// A lower power limit lowers the clock and the power further.
	s = newSim(t, "h100_sxm", Options{Noise: -1, PowerLimitW: 400})
	r2 := run(t, s, j)
	if r2.Energy.MeanPowerW > 400 || r2.Energy.SMClockMHz >= r.Energy.SMClockMHz || mean(r2.TimesMs) <= mean(r.TimesMs) {
		t.Errorf("400 W limit: %+v, times %v vs %v", r2.Energy, mean(r2.TimesMs), mean(r.TimesMs))
	}
}

// Halving the SM clock doubles a compute-bound kernel's time, leaves a
// memory-bound one alone, and (flat voltage below the knee) saves energy.
func TestCoreClock(t *testing.T) {
	fast := newSim(t, "h100_sxm", Options{Noise: -1})
	slow := newSim(t, "h100_sxm", Options{Noise: -1, CoreClockMHz: 1000})
	if got := slow.Device().SMClockMHz; got != 990 {
		t.Fatalf("1000 MHz requested: SM clock %d, want 990 (next supported below)", got)
	}
	comp := job("c", 132*8, 256, backend.Work{Flops: 1e12, Registers: 32, Efficiency: 0.5})
	mem := job("m", 132*8, 256, backend.Work{Bytes: 1 << 30, Registers: 32})
	pf, ps := predict(t, fast, comp), predict(t, slow, comp)
	if pf.PowerCapped || math.Abs(ps.KernelMs/pf.KernelMs-2) > 1e-9 {
		t.Errorf("compute-bound: %v ms at 1980, %v ms at 990 (capped %v)", pf.KernelMs, ps.KernelMs, pf.PowerCapped)
	}
	if ps.PowerW*ps.LaunchMs >= pf.PowerW*pf.LaunchMs {
		t.Errorf("compute-bound energy at 990 MHz %v mJ not below 1980 MHz %v mJ", ps.PowerW*ps.LaunchMs, pf.PowerW*pf.LaunchMs)
	}
	if a, b := predict(t, fast, mem), predict(t, slow, mem); a.KernelMs != b.KernelMs {
		t.Errorf("memory-bound: %v ms at 1980, %v at 990", a.KernelMs, b.KernelMs)
	}
}

func TestDeviceAndLifecycle(t *testing.T) {
	s := newSim(t, "k20c", Options{CoreClockMHz: 705})
	di := s.Device()
	if di.Backend != "sim" || di.Name != "Simulated Tesla K20c" || di.UUID != "SIM-k20c" || di.SMs != 13 ||
		di.SMClockMHz != 705 || di.MaxSMClockMHz != 758 || di.MemClockMHz != 2600 || di.PowerLimitW != 225 ||
		!di.HasEnergyCounter || di.ComputeMajor != 3 || di.ComputeMinor != 5 {
		t.Errorf("Device() = %+v", di)
	}
	err := s.Prepare(ctx, backend.Single(backend.Kernel{Args: []backend.Arg{{Name: "x", Type: "quad", Kind: backend.ArgVector, Count: 1}}}))
	if err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("unknown type: %v", err)
	}
	err = s.Prepare(ctx, backend.Single(backend.Kernel{Args: []backend.Arg{{Name: "big", Type: "double", Kind: backend.ArgVector, Count: 1 << 30}}}))
	if err == nil || !strings.Contains(err.Error(), "out of device memory") {
		t.Errorf("8 GiB on a 5 GiB K20c: %v", err)
	}
	h := newSim(t, "h100_sxm", Options{})
	j := job("k", 1, 32, backend.Work{Registers: 32})
	hb, _ := h.Compile(ctx, j.Job)
	if _, err := s.Run(ctx, j.Plan(hb)); err == nil {
		t.Error("K20c ran an H100 binary")
	}
	if _, err := s.Run(ctx, j.Plan(&backend.Binary{Image: []byte("ELF")})); err == nil {
		t.Error("ran a non-simulated image")
	}
	fresh := New(s.dev, Options{})
	b, _ := fresh.Compile(ctx, j.Job)
	if _, err := fresh.Run(ctx, j.Plan(b)); err == nil {
		t.Error("Run before Prepare succeeded")
	}
	s.Close()
	if _, err := s.Run(ctx, j.Plan(b)); err == nil {
		t.Error("Run after Close succeeded")
	}
}
