package model

import "github.com/gtune/gtune/device"

// K20PowerModel is the power model of the Tesla K20 boards (GK110: K20c,
// K20m), fitted to the eleven K20m points of Table 3.3 of
// autotuning-energy-efficiency-power-capping.md (vector-add, stencil and
// matrix multiplication at SM/memory clocks 758/2600, 640/2600,
// 614/2600 and 324/324 MHz; power and throughput as published, DRAM
// traffic from the examples' Bytes expressions) with IdlePowerW = 25 W
// and ClockedIdle = 0.09 held fixed (the figures contain no idle board).
// Least squares on the relative residuals, linear in Busy, Compute,
// Memory and MemoryClocked, searched over the knee (step 0.005) and
// MinVoltage in 0.70–0.80 (0.60 fits slightly better, RMS 4.5 %, but makes
// V fall by 40 % between 758 and 614 MHz), the linear coefficients rounded
// to three decimals: RMS residual 5.1 %, largest +12.8 % (stencil at
// 324/324 MHz). The table with every residual is in
// BENCHMARKS.md ("K20 power-model calibration"); k20_calibration_test.go
// pins it.
//
// What the figures say, and why the coefficients differ from the H100's:
// at 758 MHz the stencil (27 GB/s of DRAM traffic) draws 110.6 W and
// vector-add (162 GB/s) 120 W: these two bound DRAM traffic near
// 9.4 W / 134 GB/s ≈ 0.07 W per GB/s (the fit over all points takes
// Memory 0.133 of D = 0.128 W per GB/s, 16 pJ/bit, GDDR5-like), so most of
// the power is clock-dependent background; the 324/324 MHz points (32–40 W) put most of that
// background on the memory clock (MemoryClocked: 51 W at 2600 MHz) and
// the steep rise from 614 to 758 MHz (vector-add 102 → 120 W at nearly
// the same bandwidth) on the SM voltage, flat up to 614 MHz (the knee,
// 0.81 × 758) and rising to the top clock. A cache/L2 traffic term was
// not added: the stencil moves fewer bytes through L1/L2 than vector-add
// (24 B per 5 FLOP = 82 GB/s against 162 GB/s) yet draws almost as much,
// so no non-negative energy per byte can explain it; the H100-derived
// model missed the stencil by 27 % because its Memory coefficient
// (0.46 W per GB/s on the K20) carried the background that the stencil
// also pays. The voltage curve is an effective one: it absorbs whatever
// makes power rise with the SM clock (voltage, and leakage rising with
// temperature), as no K20 voltage table is published.
//
// Temperature: AmbientC and TempRiseAtTDPC fit section 3.1's "about 25
// degrees" at 324/324 MHz and "about 35 degrees" at 758/2600 MHz
// (matrix multiplication, 39.6 W and 119–133 W in Table 3.3).
func K20PowerModel() PowerModel {
	return PowerModel{
		ClockedIdle: 0.09, Busy: 0.022, Compute: 0.576,
		Memory: 0.133, MemoryClocked: 0.257,
		KneeFraction: 0.81, MinVoltage: 0.70, VoltageExpo: 1.5,
		AmbientC: 20, TempRiseAtTDPC: 26,
	}
}

// HopperPowerModel is the power model of the Hopper boards (H100 SXM,
// H200), fitted by FitPowerModel to the six readings gtune probe --power
// took on an H100 80GB HBM3 (GPU-0a0306c6…, 700 W limit, 1980 MHz, as
// found; model/testdata/h100_power.json, first probe), its voltage curve
// the earlier H100 calibration's (knee 0.71 of the highest clock, 0.73
// below it, as the A100's fit finds: one clock cannot fit it), the
// coefficients rounded to three decimals. Held out: FP32 FMAs at 0.4 of
// the issue rate +3.1 %, a DRAM copy −0.7 %; the same probe repeated
// within 2.1 %; another H100 (GPU-56e27bae…, warmer: idle 133 W against
// 122 W) within 8.7 %, four more on one host within 6.1 %; cuBLAS SGEMM
// and an elementwise a·x + y, their activity counted by ncu, 5.8 and
// 8.1 % low on the first GPU, 12.4 and 11.4 % on the second
// (calibration_test.go; BENCHMARKS.md, "A power model fitted to the
// probe"). On an H200 (four probes) every reading lies within 5.7 % of
// it.
//
// Tensor (1.76) is fitted apart, since the probe has no tensor-core
// kernel: cuBLAS DGEMM n = 4096 in its default math mode held at the 700
// W limit on four H100s (1632-1673 MHz, 2.509-2.602 ms; BENCHMARKS.md,
// "The whole DGEMM space"), its activity the tensor cores' share of
// their peak at that clock (0.94-0.97), the shared loads of 64×64 warp
// tiles and its DRAM bytes: the median of the four readings' Tensor
// that draws 700 W at the measured clock. Held out, the pedantic mode
// (0.75 of the peak) caps at 1755-1770 MHz where the four GPUs ran at
// 1773-1825 (1.0-3.0 % lower).
//
// What the readings say: SMs holding sleeping warps draw 7 W more than
// one SM (Busy 0.012), so the power of a latency-bound kernel is its
// issue, not its residency; FP32 FMAs of register operands at full issue
// draw 0.75 of the dynamic range (immediate operands, the throughput
// probe's, half that), conflict-free shared-memory loads 0.23, DRAM
// traffic at full bandwidth 0.43 whether loaded or stored (MemoryWrite 0).
func HopperPowerModel() PowerModel {
	return PowerModel{
		ClockedIdle: 0.079, Busy: 0.012, Compute: 0.752, OnChip: 0.227, Memory: 0.431, Tensor: 1.76,
		KneeFraction: 0.71, MinVoltage: 0.73, VoltageExpo: 1.5,
		AmbientC: 28, TempRiseAtTDPC: 37,
	}
}

// PowerModelFor returns the calibrated power model of device d:
// K20PowerModel for the K20 boards (k20c, k20m), HopperPowerModel for
// the H100 and H200, GA100PowerModel for the A100s, GA10xPowerModel for
// the RTX A4000 and A6000, else DefaultPowerModel.
func PowerModelFor(d *device.Description) PowerModel {
	switch d.ID {
	case "k20c", "k20m":
		return K20PowerModel()
	case "h100_sxm", "h200":
		return HopperPowerModel()
	case "a100_40gb", "a100_80gb":
		return GA100PowerModel()
	case "rtx_a4000", "rtx_a6000":
		return GA10xPowerModel()
	}
	return DefaultPowerModel()
}

// GA100PowerModel is the power model of the A100 boards (GA100), fitted
// by FitPowerModel to four readings of Kernel Tuner's recorded energy
// cache of its synthetic FP32 kernel on an A100 PCIe 40GB
// (../shared/datasets/kernel_tuner_energy: every third clock from the
// highest, 1410, 1005, 600 and 210 MHz; one kernel, busy SMs issuing
// 24 % of the FP32 peak), starting from HopperPowerModel: the voltage
// curve searched (knee 0.68 of 1410 MHz, 0.72 below it), the sum
// ClockedIdle + Busy + 0.24·Compute fitted and split as the Hopper
// readings split it (the ridge: one kernel cannot separate them), OnChip
// and Memory the Hopper's (no reading moves them). The six clocks held
// out are within 1.5 % of the cache's energy (calibration_test.go).
// No gtune probe has run on an A100: probe --power there would fit all
// six coefficients.
func GA100PowerModel() PowerModel {
	return PowerModel{
		ClockedIdle: 0.217, Busy: 0.150, Compute: 0.786, OnChip: 0.227, Memory: 0.431,
		KneeFraction: 0.68, MinVoltage: 0.72, VoltageExpo: 1.5,
		AmbientC: 28, TempRiseAtTDPC: 37,
	}
}

// GA10xPowerModel is the power model of the GA10x boards (RTX A4000,
// A6000), fitted as GA100PowerModel is, to Kernel Tuner's cache of the
// synthetic FP32 kernel on an RTX A4000 (readings at the observed clocks
// 1752 (1905 asked, held down by the 140 W limit), 1530, 960 and 405 MHz;
// busy SMs at 33 % of the FP32 peak): knee 0.58 of the 2100 MHz the
// table lists (1218 MHz), 0.63 below it. The A4000 runs near its 140 W
// limit at 1710 MHz, 0.95 of its dynamic range at 0.33 of the FP32
// issue, so the coefficients are large against the Hopper's; the six
// clocks held out are within 4.5 % of the cache's energy. The A6000
// (GA102, 300 W) takes the A4000's (GA104) fractions unmeasured.
func GA10xPowerModel() PowerModel {
	return PowerModel{
		ClockedIdle: 0.785, Busy: 0.718, Compute: 0.988, OnChip: 0.227, Memory: 0.431,
		KneeFraction: 0.58, MinVoltage: 0.63, VoltageExpo: 1.5,
		AmbientC: 28, TempRiseAtTDPC: 37,
	}
}
