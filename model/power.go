package model

import (
	"math"

	"github.com/gtune/gtune/device"
)

// PowerModel holds the coefficients of the board power model (see
// Prediction). Fractions are of the dynamic range TDPW − IdlePowerW.
//
// Calibrations (calibration.go), each fitted by FitPowerModel to
// measured readings: HopperPowerModel (H100, H200; gtune probe --power on
// an H100, DefaultPowerModel for GPUs without their own),
// GA100PowerModel and GA10xPowerModel (A100; RTX A4000, A6000; Kernel
// Tuner's recorded energy caches), K20PowerModel (K20 boards; the
// thesis's Table 3.3). PowerModelFor picks a device's.
type PowerModel struct {
	ClockedIdle float64 // clock tree and uncore at the highest clock, no work (H100: 0.079)
	// Busy is the SMs' activity while a kernel's blocks are resident
	// (warp scheduling, stalled warps polling), at the highest clock, on
	// top of ClockedIdle; it scales with s(f) and with the fraction of
	// the launch the SMs hold blocks (H100: 0.012).
	Busy float64
	// Compute is the SMs issuing FP32 FMAs of register operands at the
	// peak rate, at the highest clock (H100: 0.752). Other instructions
	// count as their share of the issue slots (Prediction's u_c).
	Compute float64
	// OnChip is on-chip data movement: shared-memory loads at the SMs'
	// peak shared rate (32 banks × 4 B a clock), at the highest clock
	// (H100: 0.227).
	OnChip float64
	Memory float64 // DRAM traffic at full bandwidth (H100: 0.431)
	// MemoryWrite is what DRAM stores at full bandwidth draw beyond the
	// same bytes loaded (H100: 0, stores draw what loads do).
	MemoryWrite float64
	// Tensor is the SMs' FP64 tensor cores (DMMA) at their peak rate, at
	// the highest clock (H100: 1.76, fitted to cuBLAS DGEMM held at the
	// 700 W limit; see HopperPowerModel); 0: tensor work draws what
	// Compute's issue does.
	Tensor float64
	// MemoryClocked is the DRAM interface and chips' background power at
	// the highest memory clock, proportional to the memory clock (H100: 0).
	MemoryClocked  float64
	KneeFraction   float64 // SM clock (of the highest) below which voltage is flat (H100: 0.71)
	MinVoltage     float64 // voltage below the knee, fraction of the top voltage (H100: 0.73)
	VoltageExpo    float64 // shape of the voltage rise above the knee (1.5)
	AmbientC       float64 // temperature at 0 W, °C (28)
	TempRiseAtTDPC float64 // steady-state temperature rise at TDP, °C (37; H100: 35 °C at 127 W, 45 °C at 393 W, 65 °C at 698 W)
	// StaticTempCoeff is the relative rise of the static power IdlePowerW
	// per °C above the idle board's steady temperature (leakage), 1/°C
	// (0: temperature-independent). See staticGain for why no published
	// steady-state figure can determine it.
	StaticTempCoeff float64
}

// DefaultPowerModel is the power model of a GPU without a calibration of
// its own: HopperPowerModel, the one measured on the GPUs at hand.
func DefaultPowerModel() PowerModel { return HopperPowerModel() }

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
// (u_c), shared-memory loads against the peak shared rate at the running
// clock (u_s), DRAM traffic against the full bandwidth (u_m) and the part
// of it that is stores (u_w ≤ u_m). See Prediction.
type Activity struct {
	Busy        float64 `json:"busy"`
	Compute     float64 `json:"compute"`
	Shared      float64 `json:"shared,omitempty"`
	Memory      float64 `json:"memory"`
	MemoryWrite float64 `json:"memory_write,omitempty"`
	// Tensor is the part of Compute that is tensor-core work (DMMA), as
	// a fraction of the tensor cores' peak (u_t <= u_c): charged at the
	// model's Tensor coefficient where it has one.
	Tensor float64 `json:"tensor,omitempty"`
}

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
	tensor := m.Tensor
	if tensor == 0 { // no term of its own: issue like any other
		tensor = m.Compute
	}
	sm := dyn * m.ClockScale(f, fmax) * (m.ClockedIdle + m.Busy*a.Busy + m.Compute*(a.Compute-a.Tensor) + tensor*a.Tensor + m.OnChip*a.Shared)
	dram := dyn * (m.MemoryClocked*mem/mmax + m.Memory*a.Memory + m.MemoryWrite*a.MemoryWrite)
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
