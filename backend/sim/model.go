package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/occupancy"
)

// Latency hiding: the fraction of peak throughput a kernel reaches grows
// linearly with theoretical occupancy until it saturates. Memory needs
// more warps in flight than arithmetic (Little's law: bandwidth × latency
// bytes must be outstanding), so it saturates later. Provisional values.
const (
	computeSaturationOccupancy = 0.25 // one warp per scheduler issuing with ILP
	memorySaturationOccupancy  = 0.5
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
// (power from 42 W at 210 MHz to 153 W at 1410 MHz, within 1 W). Busy,
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

// clockScale is s(f) = (f/fmax)·(V(f)/V(fmax))², the CMOS dynamic power
// factor P ∝ C·V²·f (autotuning-energy-efficiency-power-capping.md,
// eq. 2.3) relative to the highest clock.
func (m PowerModel) clockScale(f, fmax float64) float64 {
	v := m.VoltageFraction(f, fmax)
	return f / fmax * v * v
}

// Prediction is the model's answer for one configuration.
//
// Time per launch (ms):
//
//	occ      = theoretical occupancy (package occupancy)
//	h_c      = min(1, occ/0.25), h_m = min(1, occ/0.5)        latency hiding
//	R_c      = PeakFP32 · f/fmax · Efficiency · h_c           FLOP/s
//	R_m      = Bandwidth · Efficiency · h_m                   B/s
//	W        = SMs · active blocks per SM                     blocks per wave
//	waves    = ⌈blocks / W⌉
//	t_wave   = max(Flops·W/blocks / R_c, Bytes·W/blocks / R_m)
//	t        = waves · t_wave + launch overhead
//
// so a grid that fills whole waves runs at the roofline max(F/R_c, B/R_m)
// and one extra block costs a whole wave.
//
// Board power (W), with D = TDP − IdlePowerW, memory clock m of the
// highest mmax, and over the launch the utilisations
// u_c = Flops / (t · PeakFP32 · f/fmax), u_m = Bytes / (t · Bandwidth)
// and the SM-busy fraction u_b = (KernelMs / LaunchMs) · (mean fraction
// of SMs holding a block, over the waves):
//
//	P_dyn = D·s(f)·(ClockedIdle + Busy·u_b + Compute·u_c)
//	      + D·(MemoryClocked·m/mmax + Memory·u_m)
//	P(f)  = IdlePowerW + g·P_dyn,   g = staticGain (leakage rising with temperature)
//
// If P exceeds the power limit the SM clock steps down through the
// clocks supported at the memory clock until it does not (as the driver's
// power capping does), and time is recomputed at that clock. Where even
// the lowest supported clock does not bring P under the limit (a
// memory-bound kernel: DRAM traffic does not slow with the SM clock), the
// kernel runs at that lowest clock and the board draws P, over the limit
// (OverLimit). The model assumes NVIDIA's software power cap
// (clock-event reason SW_POWER_CAP) acts through the SM clock table
// alone: it neither lowers the memory clock nor stops the SMs. That was
// not measured here (the lent GPUs' power limits may not be changed);
// clamping the power to the limit instead, as this simulator did before,
// made a capped memory-bound kernel draw the limit at full speed: the
// energy "saved" by a low cap was an artefact.
//
// The SM clock f, the memory clock and the power limit are the plan's
// Settings where it gives them (see Sim.Run), else the simulator's; the SM
// clock is one of the clocks supported at that memory clock
// (Description.ClockTables). A lower memory clock m scales the bandwidth
// by m / MemoryClockMHz and the background term MemoryClocked by m/mmax;
// the traffic term stays proportional to the bytes moved per second.
type Prediction struct {
	Occupancy   occupancy.Result
	Blocks      int // thread blocks in the grid
	Waves       int
	ComputeMs   float64 // Flops / R_c over the whole grid, before quantisation
	MemoryMs    float64 // Bytes / R_m over the whole grid, before quantisation
	KernelMs    float64 // waves · t_wave
	LaunchMs    float64 // KernelMs + launch overhead: one timed launch
	SMClockMHz  int     // clock the kernel ran at (after power capping)
	MemClockMHz int     // memory clock the kernel ran at
	PowerLimitW float64 // power limit in force
	PowerCapped bool    // the power limit lowered the clock
	// OverLimit: PowerW exceeds PowerLimitW even at the lowest supported
	// SM clock, where the kernel then runs.
	OverLimit   bool
	ComputeUtil float64 // u_c
	MemoryUtil  float64 // u_m
	BusyUtil    float64 // u_b
	PowerW      float64 // mean board power while launching back to back
	TempC       float64 // steady-state temperature at PowerW
}

// launchError is a configuration the GPU refuses to launch.
type launchError struct{ reason string }

func (e *launchError) Error() string { return e.reason }

// predict evaluates the model for work w launched with the job's geometry
// under the GPU settings set (nil: the simulator's clock and power limit). A launch failure is a
// *launchError.
func (s *Sim) predict(w *backend.Work, j *backend.Job, set *backend.Settings) (Prediction, error) {
	d := s.dev
	var p Prediction
	threads := 1
	for i := range 3 {
		if j.Block[i] <= 0 || j.Grid[i] <= 0 {
			return p, &launchError{fmt.Sprintf("invalid argument: grid %v and block %v must be positive in every dimension", j.Grid, j.Block)}
		}
		threads *= j.Block[i]
	}
	if threads > d.MaxThreadsPerBlock {
		return p, &launchError{fmt.Sprintf("too many threads per block: %d threads (block %v), %s allows %d", threads, j.Block, d.Name, d.MaxThreadsPerBlock)}
	}
	for i := range 3 {
		if j.Block[i] > d.MaxBlockDims[i] || j.Grid[i] > d.MaxGridDims[i] {
			return p, &launchError{fmt.Sprintf("invalid argument: grid %v / block %v exceed the limits %v / %v", j.Grid, j.Block, d.MaxGridDims, d.MaxBlockDims)}
		}
	}
	if j.DynamicSharedBytes < 0 {
		return p, &launchError{fmt.Sprintf("invalid argument: dynamic shared memory %d bytes", j.DynamicSharedBytes)}
	}
	smem := w.SharedMemory + j.DynamicSharedBytes
	occ, err := occupancy.Compute(d, occupancy.Input{BlockSize: threads, RegistersPerThread: w.Registers, SharedMemoryPerBlock: smem})
	switch {
	case errors.Is(err, occupancy.ErrSharedMemory):
		return p, &launchError{fmt.Sprintf("too many resources requested for launch: %d bytes of shared memory per block (%d static + %d dynamic), opt-in maximum %d",
			smem, w.SharedMemory, j.DynamicSharedBytes, d.SharedMemoryPerBlockOptin)}
	case err != nil:
		return p, &launchError{"invalid argument: " + err.Error()}
	case occ.ActiveBlocksPerSM == 0:
		return p, &launchError{fmt.Sprintf("too many resources requested for launch: %d threads × %d registers per thread exceed %d registers per block",
			threads, w.Registers, d.MaxRegistersPerBlock)}
	}
	p.Occupancy = occ
	p.Blocks = j.Grid[0] * j.Grid[1] * j.Grid[2]
	perWave := d.SMs * occ.ActiveBlocksPerSM
	p.Waves = (p.Blocks + perWave - 1) / perWave

	clock, memClock, limit, err := s.settings(set)
	if err != nil {
		return p, err
	}
	p.MemClockMHz, p.PowerLimitW = memClock, limit
	bandwidth := d.MemoryBandwidthGBs * float64(memClock) / float64(d.MemoryClockMHz)
	fmax := float64(d.MaxCoreClockMHz())
	fill := smFill(p.Blocks, perWave, d.SMs)
	eval := func(f int) {
		ff := float64(f)
		eff := w.Efficiency
		if eff == 0 {
			eff = 1
		}
		rc := d.PeakFP32GFLOPS * 1e9 * ff / fmax * eff * math.Min(1, occ.Occupancy/computeSaturationOccupancy)
		rm := bandwidth * 1e9 * eff * math.Min(1, occ.Occupancy/memorySaturationOccupancy)
		p.ComputeMs = w.Flops / rc * 1e3
		p.MemoryMs = w.Bytes / rm * 1e3
		frac := float64(perWave) / float64(p.Blocks)
		p.KernelMs = float64(p.Waves) * math.Max(p.ComputeMs*frac, p.MemoryMs*frac)
		p.LaunchMs = p.KernelMs + s.overheadMs
		t := p.LaunchMs / 1e3
		p.ComputeUtil = w.Flops / (t * d.PeakFP32GFLOPS * 1e9 * ff / fmax)
		p.MemoryUtil = w.Bytes / (t * d.MemoryBandwidthGBs * 1e9)
		p.BusyUtil = p.KernelMs / p.LaunchMs * fill
		p.PowerW, p.TempC = s.power.boardPower(d, ff, float64(memClock), activity{busy: p.BusyUtil, compute: p.ComputeUtil, memory: p.MemoryUtil})
		p.SMClockMHz = f
	}
	eval(clock)
	if p.PowerW > limit {
		for _, f := range supportedCoreClocks(d, memClock) {
			if f >= clock {
				continue
			}
			eval(f)
			p.PowerCapped = true
			if p.PowerW <= limit {
				break
			}
		}
		p.OverLimit = p.PowerW > limit
	}
	return p, nil
}

// maxThreadsPerBlock is the largest block a kernel with regs registers per
// thread can launch with (cuFuncGetAttribute MAX_THREADS_PER_BLOCK).
func maxThreadsPerBlock(d *device.Description, regs int) int {
	if regs <= 0 {
		return d.MaxThreadsPerBlock
	}
	regsPerWarp := (regs*d.WarpSize + d.RegisterAllocUnit - 1) / d.RegisterAllocUnit * d.RegisterAllocUnit
	for t := d.MaxThreadsPerBlock; t > 0; t -= d.WarpSize {
		warps := (t + d.WarpSize - 1) / d.WarpSize
		g := d.WarpAllocGranularity
		if regsPerWarp*((warps+g-1)/g*g) <= d.MaxRegistersPerBlock {
			return t
		}
	}
	return 0
}

// settings resolves the plan's GPU settings against the device: the memory
// clock is the supported memory clock nearest to the one asked for (the
// lower on a tie), the SM clock likewise among the clocks supported at
// that memory clock (Description.ClockTables),
// and the power limit is taken as given. A clock outside the supported
// range or a power limit outside [PowerLimitMinW, PowerLimitMaxW] is a
// *launchError (NVML refuses such settings). Zero fields, and a nil
// Settings, keep the simulator's own clock and limit and the default
// memory clock.
func (s *Sim) settings(st *backend.Settings) (clock, memClock int, limit float64, err error) {
	d := s.dev
	clock, memClock, limit = s.clockMHz, d.MemoryClockMHz, s.powerLimitW
	if st == nil {
		return clock, memClock, limit, nil
	}
	if st.MemClockMHz != 0 {
		if memClock, err = nearestClock("memory clock", st.MemClockMHz, d.MemoryClocksMHz, d.Name); err != nil {
			return 0, 0, 0, err
		}
	}
	table := supportedCoreClocks(d, memClock)
	if st.CoreClockMHz != 0 {
		what := "SM clock"
		if memClock != d.MemoryClockMHz {
			what = fmt.Sprintf("SM clock at memory clock %d MHz", memClock)
		}
		if clock, err = nearestClock(what, st.CoreClockMHz, table, d.Name); err != nil {
			return 0, 0, 0, err
		}
	} else if !slices.Contains(table, clock) {
		// The simulator's own clock is not supported at the memory clock
		// asked for: the driver pairs the memory clock with the nearest
		// supported SM clock.
		clock, _ = nearestClock("SM clock", max(table[len(table)-1], min(table[0], clock)), table, d.Name)
	}
	if st.PowerLimitW != 0 {
		if st.PowerLimitW < d.PowerLimitMinW || st.PowerLimitW > d.PowerLimitMaxW || math.IsNaN(st.PowerLimitW) {
			return 0, 0, 0, &launchError{fmt.Sprintf("settings: power limit %g W outside the supported %g–%g W of %s", st.PowerLimitW, d.PowerLimitMinW, d.PowerLimitMaxW, d.Name)}
		}
		limit = st.PowerLimitW
	}
	return clock, memClock, limit, nil
}

// nearestClock picks the supported clock (list descending) nearest to
// want, the lower on a tie; want outside [lowest, highest] is a
// *launchError.
func nearestClock(what string, want int, list []int, dev string) (int, error) {
	hi, lo := list[0], list[len(list)-1]
	if want > hi || want < lo {
		return 0, &launchError{fmt.Sprintf("settings: %s %d MHz outside the supported %d–%d MHz of %s", what, want, lo, hi, dev)}
	}
	best := list[0]
	for _, c := range list {
		if dc, db := abs(c-want), abs(best-want); dc < db || (dc == db && c < best) {
			best = c
		}
	}
	return best, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
