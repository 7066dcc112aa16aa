package model

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/gtune/gtune/device"
)

// hopperData is model/testdata/h100_power.json: gtune probe's power
// readings on two H100s, and two kernels measured with NVML energy whose
// activity ncu counted.
type hopperData struct {
	Probes []struct {
		GPU      string         `json:"gpu"`
		Readings []PowerReading `json:"readings"`
	} `json:"probes"`
	Kernels []measuredKernel `json:"kernels"`
}

// measuredKernel is a kernel whose activity ncu counted on one launch,
// and its runs: NVML's power over back-to-back launches.
type measuredKernel struct {
	Name             string  `json:"name"`
	WarpInstructions float64 `json:"warp_instructions"`
	SharedWavefronts float64 `json:"shared_wavefronts"`
	DRAMReadBytes    float64 `json:"dram_read_bytes"`
	DRAMWriteBytes   float64 `json:"dram_write_bytes"`
	Runs             []struct {
		GPU        string  `json:"gpu"`
		SMClockMHz float64 `json:"sm_clock_mhz"`
		Ms         float64 `json:"ms"`
		PowerW     float64 `json:"power_w"`
	} `json:"runs"`
}

// activity is the kernel's run r on d as the power model's utilisations:
// every warp instruction as issue (u_c: 4 a clock per SM at most),
// shared-memory wavefronts (one a clock per SM), DRAM bytes loaded and
// stored against d's bandwidth.
func (k measuredKernel) activity(d *device.Description, r int) Activity {
	s := k.Runs[r].Ms / 1e3
	hz := k.Runs[r].SMClockMHz * 1e6
	sms := float64(d.SMs)
	return Activity{Busy: 1,
		Compute:     math.Min(1, k.WarpInstructions/(4*sms*hz*s)),
		Shared:      math.Min(1, k.SharedWavefronts/(sms*hz*s)),
		Memory:      (k.DRAMReadBytes + k.DRAMWriteBytes) / s / (d.MemoryBandwidthGBs * 1e9),
		MemoryWrite: k.DRAMWriteBytes / s / (d.MemoryBandwidthGBs * 1e9)}
}

func readHopperData(t *testing.T) (hopperData, *device.Description) {
	t.Helper()
	return readPowerData(t, "testdata/h100_power.json", "h100_sxm")
}

// readPowerData reads a file of hopperData's shape measured on the GPU
// model id of the device database.
func readPowerData(t *testing.T, file, id string) (hopperData, *device.Description) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h hopperData
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return h, d
}

// eachReading logs every probe reading of h against m's power on d and
// passes it on with its probe's index and its relative residual.
func eachReading(t *testing.T, d *device.Description, m PowerModel, h hopperData, each func(probe int, r PowerReading, res float64)) {
	t.Helper()
	for i, p := range h.Probes {
		for _, r := range p.Readings {
			w, _ := m.BoardPower(d, r.SMClockMHz, r.MemClockMHz, r.Activity)
			res := w/r.PowerW - 1
			t.Logf("%.12s %-20s measured %6.1f W, model %6.1f W (%+.1f %%)", p.GPU, r.Name, r.PowerW, w, 100*res)
			each(i, r, res)
		}
	}
}

// curveOnly is m's voltage curve and temperatures with no coefficients:
// the prior the calibrations are fitted from, so that the ridge pulls
// towards nothing in particular.
func curveOnly(m PowerModel) PowerModel {
	return PowerModel{KneeFraction: m.KneeFraction, MinVoltage: m.MinVoltage, VoltageExpo: m.VoltageExpo, AmbientC: m.AmbientC, TempRiseAtTDPC: m.TempRiseAtTDPC}
}

func sameCoefficients(t *testing.T, what string, got, want PowerModel) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"ClockedIdle", got.ClockedIdle, want.ClockedIdle}, {"Busy", got.Busy, want.Busy}, {"Compute", got.Compute, want.Compute},
		{"OnChip", got.OnChip, want.OnChip}, {"Memory", got.Memory, want.Memory}, {"MemoryWrite", got.MemoryWrite, want.MemoryWrite},
		{"KneeFraction", got.KneeFraction, want.KneeFraction}, {"MinVoltage", got.MinVoltage, want.MinVoltage}} {
		if math.Abs(c.got-c.want) > 0.0015 {
			t.Errorf("%s: fitted %s %.4f, the calibration has %.3f", what, c.name, c.got, c.want)
		}
	}
}

// HopperPowerModel is the fit of the first H100 probe's readings (to its
// three decimals), and predicts every reading of six H100s within 10 %
// (issue 50's target for probe powers; 8.7 % at most, on the warm second
// GPU), the held-out ones of the fitted probe within 4 %.
func TestHopperPowerModelIsTheProbesFit(t *testing.T) {
	h, d := readHopperData(t)
	fit, err := FitPowerModel(d, h.Probes[0].Readings, curveOnly(HopperPowerModel()))
	if err != nil {
		t.Fatal(err)
	}
	sameCoefficients(t, "h100_sxm", fit.Model, HopperPowerModel())
	if fit.RMS > 0.01 || len(fit.Residuals) != 8 {
		t.Errorf("RMS %.4f over %d readings", fit.RMS, len(fit.Residuals))
	}
	worst := 0.0
	eachReading(t, d, HopperPowerModel(), h, func(i int, r PowerReading, res float64) {
		worst = math.Max(worst, math.Abs(res))
		if i == 0 && r.Check && math.Abs(res) > 0.04 {
			t.Errorf("held-out %s: %+.1f %%", r.Name, 100*res)
		}
	})
	if worst > 0.10 {
		t.Errorf("a reading %.1f %% off", 100*worst)
	}
}

// The fitted model against kernels it was not fitted to, on both H100s:
// cuBLAS SGEMM and an elementwise a·x + y, each reading NVML's energy
// over 4 s, its activity from ncu's counts of one launch: every warp
// instruction as issue (u_c: 4 a clock per SM at most), shared-memory
// wavefronts (one a clock per SM), DRAM bytes loaded and stored against
// the 3,352 GB/s bandwidth. The model fitted to a GPU's own probe is
// within 10 % on its kernels (5.9-8.1 % low); HopperPowerModel, the
// first GPU's, is 12.4 % low on the second (a warmer board drawing 9 %
// more at every reading), pinned at 13 %.
func TestHopperPowerModelOnKernels(t *testing.T) {
	h, d := readHopperData(t)
	own := map[string]PowerModel{}
	for _, p := range h.Probes {
		if _, ok := own[p.GPU]; ok {
			continue
		}
		fit, err := FitPowerModel(d, p.Readings, curveOnly(HopperPowerModel()))
		if err != nil {
			t.Fatal(err)
		}
		own[p.GPU] = fit.Model
	}
	n := 0
	for _, k := range h.Kernels {
		for i, r := range k.Runs {
			a := k.activity(d, i)
			m, ok := own[r.GPU]
			if !ok {
				t.Fatalf("no probe of %s", r.GPU)
			}
			w, _ := m.BoardPower(d, r.SMClockMHz, float64(d.MemoryClockMHz), a)
			arch, _ := HopperPowerModel().BoardPower(d, r.SMClockMHz, float64(d.MemoryClockMHz), a)
			res, resArch := w/r.PowerW-1, arch/r.PowerW-1
			t.Logf("%.12s %s: %+v, measured %.1f W, its own probe's model %.1f W (%+.1f %%), HopperPowerModel %.1f W (%+.1f %%)",
				r.GPU, k.Name, a, r.PowerW, w, 100*res, arch, 100*resArch)
			if math.Abs(res) > 0.10 {
				t.Errorf("%s on %s: its probe's model %.1f W against %.1f W measured (%+.1f %%)", k.Name, r.GPU, w, r.PowerW, 100*res)
			}
			if math.Abs(resArch) > 0.13 {
				t.Errorf("%s on %s: HopperPowerModel %.1f W against %.1f W measured (%+.1f %%)", k.Name, r.GPU, arch, r.PowerW, 100*resArch)
			}
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d kernel runs, want 4", n)
	}
}

// HopperPowerModel, fitted to one H100's probe, on an H200 (issue 50:
// probe powers within 10 % on the H100 and the H200): every reading of
// four probes of one H200 lies within 10 % of it (5.7 % at most, the
// held-out FP32 chain; DRAM stores and the copy 3.5-4.8 % low, as the
// H200's DRAM fractions are of 4.8 TB/s, not 3.35), and cuBLAS SGEMM
// (-3.2 %) and a·x + y (-11.2 %) within 13 %, as on the second H100.
func TestHopperPowerModelOnH200(t *testing.T) {
	h, d := readPowerData(t, "testdata/h200_power.json", "h200")
	m := HopperPowerModel()
	n, worst := 0, 0.0
	eachReading(t, d, m, h, func(_ int, _ PowerReading, res float64) {
		worst = math.Max(worst, math.Abs(res))
		n++
	})
	if n != 32 || worst > 0.10 {
		t.Errorf("%d readings, the worst %.1f %% off the model", n, 100*worst)
	}
	runs := 0
	for _, k := range h.Kernels {
		for i, r := range k.Runs {
			a := k.activity(d, i)
			w, _ := m.BoardPower(d, r.SMClockMHz, float64(d.MemoryClockMHz), a)
			res := w/r.PowerW - 1
			t.Logf("%s: %+v, measured %.1f W, model %.1f W (%+.1f %%)", k.Name, a, r.PowerW, w, 100*res)
			if math.Abs(res) > 0.13 {
				t.Errorf("%s on the H200: HopperPowerModel %.1f W against %.1f W measured (%+.1f %%)", k.Name, w, r.PowerW, 100*res)
			}
			runs++
		}
	}
	if runs != 2 {
		t.Errorf("%d kernel runs, want 2", runs)
	}
}

// GA100PowerModel and GA10xPowerModel are the fits of every third
// reading of Kernel Tuner's caches (from the Hopper model), and the
// clocks held out are within a few per cent of the caches' energy (issue
// 50's target: median ≤ 10 %): A100 ≤ 1 %, A4000 ≤ 3 %.
func TestAmpereCalibrationsAreTheCachesFits(t *testing.T) {
	for _, c := range []struct {
		file, id string
		want     PowerModel
		median   float64
	}{
		{"synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json", "a100_40gb", GA100PowerModel(), 0.01},
		{"synthetic_fp32_cache_NVIDIA_RTX_A4000.json", "rtx_a4000", GA10xPowerModel(), 0.03},
	} {
		rs, d := kernelTunerReadings(t, c.file, c.id)
		if len(rs) != 10 {
			t.Fatalf("%s: %d readings", c.id, len(rs))
		}
		held := map[float64]bool{}
		for i := range rs {
			rs[i].Check = i%3 != 0
			held[math.Round(rs[i].SMClockMHz)] = rs[i].Check
		}
		fit, err := FitPowerModel(d, rs, HopperPowerModel())
		if err != nil {
			t.Fatal(err)
		}
		sameCoefficients(t, c.id, fit.Model, c.want)
		var errs []float64
		for _, e := range checkEnergy(t, c.file, c.id, nil) {
			if held[math.Round(e.observed)] {
				errs = append(errs, e.energyErr)
			}
		}
		if len(errs) != 6 {
			t.Fatalf("%s: %d held-out clocks", c.id, len(errs))
		}
		t.Logf("%s: median |energy error| over the six held-out clocks %.2f %%", c.id, 100*medianAbs(errs))
		if medianAbs(errs) > c.median {
			t.Errorf("%s: median |energy error| over the held-out clocks %.3f, at most %.3f", c.id, medianAbs(errs), c.median)
		}
	}
}

// HopperPowerModel's Tensor term against cuBLAS DGEMM (n = 4096) held at
// the 700 W limit on four H100s (the sweep's host, five repeats, the
// median; BENCHMARKS.md, "The whole DGEMM space"): fitted to the default
// mode's readings (the median of the four Tensor values that draw 700 W
// at the measured clock), it caps each reading's efficiency within 3.5 %
// of the clock the GPU ran at, the pedantic mode's held out.
func TestHopperTensorTerm(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	const n = 4096.0
	fmax := float64(d.MaxCoreClockMHz())
	// activity at SM clock f (MHz) of a DGEMM whose tensor work runs at
	// eff of the tensor cores' peak at f: u_t, shared loads of 64×64
	// warp tiles (n³/4 bytes), its 3n² doubles of DRAM traffic.
	activity := func(f, eff float64) Activity {
		s := 2 * n * n * n / (d.PeakFP64TensorGFLOPS * 1e9 * f / fmax * eff)
		return Activity{Busy: 1, Compute: eff, Tensor: eff, Shared: n * n * n / 4 / (s * SharedPeakGBs(d, f) * 1e9), Memory: 3 * 8 * n * n / (s * d.MemoryBandwidthGBs * 1e9)}
	}
	effAt := func(f, ms float64) float64 {
		return 2 * n * n * n / (ms / 1e3 * d.PeakFP64TensorGFLOPS * 1e9 * f / fmax)
	}
	type reading struct {
		gpu    string
		f, ms  float64 // measured SM clock (MHz) and time (ms)
		heldIn bool    // the default mode: fitted
	}
	rs := []reading{
		{"GPU-e8b8a735", 1639, 2.586, true}, {"GPU-d6ff352a", 1659, 2.602, true},
		{"GPU-3477d27b", 1632, 2.581, true}, {"GPU-c783c8b3", 1673, 2.509, true},
		{"GPU-e8b8a735", 1807, 3.022, false}, {"GPU-d6ff352a", 1795, 3.042, false},
		{"GPU-3477d27b", 1773, 3.033, false}, {"GPU-c783c8b3", 1825, 2.982, false},
	}
	var fits []float64
	for _, r := range rs[:4] {
		a := activity(r.f, effAt(r.f, r.ms))
		lo, hi := 0.0, 5.0
		for range 60 {
			m := HopperPowerModel()
			m.Tensor = (lo + hi) / 2
			if w, _ := m.BoardPower(d, r.f, float64(d.MemoryClockMHz), a); w > 700 {
				hi = m.Tensor
			} else {
				lo = m.Tensor
			}
		}
		fits = append(fits, lo)
	}
	slices.Sort(fits)
	if med := (fits[1] + fits[2]) / 2; math.Abs(med-HopperPowerModel().Tensor) > 0.005 {
		t.Errorf("the readings fit Tensor %.4f (median of %.3f), the model has %.3f", med, fits, HopperPowerModel().Tensor)
	}
	m := HopperPowerModel()
	for _, r := range rs {
		eff := effAt(r.f, r.ms)
		capped := 0.0
		for _, f := range SupportedCoreClocks(d, d.MemoryClockMHz) {
			if w, _ := m.BoardPower(d, float64(f), float64(d.MemoryClockMHz), activity(float64(f), eff)); w <= 700 {
				capped = float64(f)
				break
			}
		}
		off := capped/r.f - 1
		t.Logf("%s, %.3f of the tensor peak: capped at %.0f MHz, ran at %.0f (%+.1f %%)", r.gpu, eff, capped, r.f, 100*off)
		if math.Abs(off) > 0.035 {
			t.Errorf("%s (fitted: %v): the model caps at %.0f MHz, the GPU ran at %.0f", r.gpu, r.heldIn, capped, r.f)
		}
	}
}
