package sim

import (
	"github.com/gtune/gtune/device"
)

// activity is what a launch keeps busy, each a fraction in [0, 1]: SMs
// holding blocks (u_b), FP32 issue against peak at the running clock
// (u_c) and DRAM traffic against the full bandwidth (u_m). See Prediction.
type activity struct{ busy, compute, memory float64 }

// boardPower is the steady-state board power (W) and die temperature
// (°C) of d running at SM clock f and memory clock mem (MHz) with activity
// a (the equations at Prediction). Dynamic power follows the CMOS
// P ∝ C·V²·f of autotuning-energy-efficiency-power-capping.md eq. 2.3 for
// the SM clock domain; the memory part has a background proportional to
// the memory clock and a part proportional to the bytes moved.
func (m PowerModel) boardPower(d *device.Description, f, mem float64, a activity) (powerW, tempC float64) {
	dyn := d.TDPW - d.IdlePowerW
	fmax := float64(d.MaxCoreClockMHz())
	mmax := float64(maxInt(d.MemoryClocksMHz, d.MemoryClockMHz))
	sm := dyn * m.clockScale(f, fmax) * (m.ClockedIdle + m.Busy*a.busy + m.Compute*a.compute)
	dram := dyn * (m.MemoryClocked*mem/mmax + m.Memory*a.memory)
	powerW = d.IdlePowerW + m.staticGain(d)*(sm+dram)
	return powerW, m.steadyTempC(d, powerW)
}

// steadyTempC is the steady-state die temperature at board power w (W):
// linear in power (thermal resistance to ambient).
func (m PowerModel) steadyTempC(d *device.Description, w float64) float64 {
	return m.AmbientC + m.TempRiseAtTDPC*w/d.TDPW
}

// staticGain folds the temperature dependence of the static power into
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
func (m PowerModel) staticGain(d *device.Description) float64 {
	den := 1 - m.StaticTempCoeff*d.IdlePowerW*m.TempRiseAtTDPC/d.TDPW
	if den < 0.5 {
		return 2
	}
	return 1 / den
}

// smFill is the mean over the waves of the fraction of SMs that hold at
// least one block: 1 for full waves, less for a last wave of fewer blocks
// than SMs.
func smFill(blocks, perWave, sms int) float64 {
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

// supportedCoreClocks lists the SM clocks (descending) supported at memory
// clock mem: its Description.ClockTables entry, else CoreClocksMHz.
func supportedCoreClocks(d *device.Description, mem int) []int {
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
