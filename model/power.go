package model

import (
	"math"

	"github.com/gtune/gtune/device"
)

// PowerModel holds the coefficients of the board power model (see
// Prediction). Fractions are of the dynamic range TDPW − IdlePowerW.
//
// Calibration of DefaultPowerModel, provisional: ClockedIdle, Memory and
// Compute are fitted to measurements on an H100 80GB HBM3 (SXM5) at
// 1980 MHz: 127 W with a CUDA context and no work, 393 W for a
// device-to-device copy at 2985 GB/s, 698 W (at the 700 W limit, clock
// 1965 MHz) for FP32 SGEMM at 50 TFLOP/s = 75 % of peak. The voltage
// curve (knee at 71 % of the highest clock, 73 % of the top voltage below
// it, rising as x^1.5 above it) is fitted to
// ../shared/datasets/kernel_tuner_energy/synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json
// (power from 42 W at 210 MHz to 153 W at 1410 MHz): its shape, the
// power's fall with the clock; the absolute power the model gives that
// latency-bound kernel is 8–25 % low (model/energy_validation_test.go,
// BENCHMARKS.md "The power model against measured energy"). Busy,
// MemoryClocked and StaticTempCoeff are 0 there: the H100 figures do not
// separate them from ClockedIdle, Memory and Compute. K20 boards use
// K20PowerModel (calibration.go); PowerModelFor picks the model of a
// device.
type PowerModel struct {
	ClockedIdle float64 // clock tree and uncore at the highest clock, no work (H100: 0.09)
	// Busy is the SMs' activity while a kernel's blocks are resident
	// (warp scheduling, stalled warps polling), at the highest clock, on
	// top of ClockedIdle; it scales with s(f) and with the fraction of
	// the launch the SMs hold blocks (H100: 0, folded into Compute/Memory).
	Busy    float64
	Compute float64 // SMs issuing FP32 at peak rate at the highest clock (1.2)
	Memory  float64 // DRAM traffic at full bandwidth (0.48)
	// MemoryClocked is the DRAM interface and chips' background power at
	// the highest memory clock, proportional to the memory clock (H100: 0).
	MemoryClocked  float64
	KneeFraction   float64 // SM clock (of the highest) below which voltage is flat (0.71)
	MinVoltage     float64 // voltage below the knee, fraction of the top voltage (0.73)
	VoltageExpo    float64 // shape of the voltage rise above the knee (1.5)
	AmbientC       float64 // temperature at 0 W, °C (28)
	TempRiseAtTDPC float64 // steady-state temperature rise at TDP, °C (37; H100: 35 °C at 127 W, 45 °C at 393 W, 65 °C at 698 W)
	// StaticTempCoeff is the relative rise of the static power IdlePowerW
	// per °C above the idle board's steady temperature (leakage), 1/°C
	// (0: temperature-independent). See staticGain for why no published
	// steady-state figure can determine it.
	StaticTempCoeff float64
}

// DefaultPowerModel returns the provisional calibration described at
// PowerModel (the H100's).
func DefaultPowerModel() PowerModel {
	return PowerModel{
		ClockedIdle: 0.09, Compute: 1.2, Memory: 0.48,
		KneeFraction: 0.71, MinVoltage: 0.73, VoltageExpo: 1.5,
		AmbientC: 28, TempRiseAtTDPC: 37,
	}
}

// VoltageFraction is V(f)/V(fmax): flat at MinVoltage up to the knee,
// then MinVoltage + (1−MinVoltage)·x^VoltageExpo with x the position of f
// between the knee and fmax.
func (m PowerModel) VoltageFraction(f, fmax float64) float64 {
	knee := m.KneeFraction * fmax
	if f <= knee || fmax <= knee {
		return m.MinVoltage
	}
	x := math.Min(1, (f-knee)/(fmax-knee))
	return m.MinVoltage + (1-m.MinVoltage)*math.Pow(x, m.VoltageExpo)
}

// ClockScale is s(f) = (f/fmax)·(V(f)/V(fmax))², the CMOS dynamic power
// factor P ∝ C·V²·f (autotuning-energy-efficiency-power-capping.md,
// eq. 2.3) relative to the highest clock.
func (m PowerModel) ClockScale(f, fmax float64) float64 {
	v := m.VoltageFraction(f, fmax)
	return f / fmax * v * v
}

// Activity is what a launch keeps busy, each a fraction in [0, 1]: SMs
// holding blocks (u_b), FP32 issue against peak at the running clock
// (u_c) and DRAM traffic against the full bandwidth (u_m). See Prediction.
type Activity struct{ Busy, Compute, Memory float64 }

// BoardPower is the steady-state board power (W) and die temperature
// (°C) of d running at SM clock f and memory clock mem (MHz) with activity
// a (the equations at Prediction). Dynamic power follows the CMOS
// P ∝ C·V²·f of autotuning-energy-efficiency-power-capping.md eq. 2.3 for
// the SM clock domain; the memory part has a background proportional to
// the memory clock and a part proportional to the bytes moved.
func (m PowerModel) BoardPower(d *device.Description, f, mem float64, a Activity) (powerW, tempC float64) {
	dyn := d.TDPW - d.IdlePowerW
	fmax := float64(d.MaxCoreClockMHz())
	mmax := float64(maxInt(d.MemoryClocksMHz, d.MemoryClockMHz))
	sm := dyn * m.ClockScale(f, fmax) * (m.ClockedIdle + m.Busy*a.Busy + m.Compute*a.Compute)
	dram := dyn * (m.MemoryClocked*mem/mmax + m.Memory*a.Memory)
	powerW = d.IdlePowerW + m.StaticGain(d)*(sm+dram)
	return powerW, m.SteadyTempC(d, powerW)
}

// SteadyTempC is the steady-state die temperature at board power w (W):
// linear in power (thermal resistance to ambient).
func (m PowerModel) SteadyTempC(d *device.Description, w float64) float64 {
	return m.AmbientC + m.TempRiseAtTDPC*w/d.TDPW
}

// StaticGain folds the temperature dependence of the static power into
// the steady state. With static power IdlePowerW·(1 + k·(T − T₀)), T₀ the
// idle board's temperature and T = AmbientC + TempRiseAtTDPC·P/TDP, the
// fixed point of P = static(T) + P_dyn is
//
//	P = IdlePowerW + P_dyn / (1 − k·IdlePowerW·TempRiseAtTDPC/TDP)
//
// that is, a uniform gain on everything above idle. Published steady-state
// power figures therefore cannot separate k from the activity coefficients
// (any k is absorbed by scaling them by 1/gain); the calibrations keep
// k = 0 for want of a leakage measurement. A gain that would diverge
// (thermal runaway) is capped at 2.
func (m PowerModel) StaticGain(d *device.Description) float64 {
	den := 1 - m.StaticTempCoeff*d.IdlePowerW*m.TempRiseAtTDPC/d.TDPW
	if den < 0.5 {
		return 2
	}
	return 1 / den
}

// SMFill is the mean over the waves of the fraction of SMs that hold at
// least one block: 1 for full waves, less for a last wave of fewer blocks
// than SMs.
func SMFill(blocks, perWave, sms int) float64 {
	if blocks <= 0 || perWave <= 0 || sms <= 0 {
		return 0
	}
	waves := (blocks + perWave - 1) / perWave
	full, rem := blocks/perWave, blocks%perWave
	sum := float64(full) * min(1, float64(perWave)/float64(sms))
	if rem > 0 {
		sum += min(1, float64(rem)/float64(sms))
	}
	return sum / float64(waves)
}

// SupportedCoreClocks lists the SM clocks (descending) supported at memory
// clock mem: its Description.ClockTables entry, else CoreClocksMHz.
func SupportedCoreClocks(d *device.Description, mem int) []int {
	for _, t := range d.ClockTables {
		if t.MemoryClockMHz == mem {
			return t.CoreClocksMHz
		}
	}
	return d.CoreClocksMHz
}

func maxInt(list []int, floor int) int {
	m := floor
	for _, v := range list {
		m = max(m, v)
	}
	return m
}
