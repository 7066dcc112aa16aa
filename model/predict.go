package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

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
// u_c = Flops / (t · PeakFP32 · f/fmax), u_m = Bytes / (t · Bandwidth),
// u_s = SharedBytes / (t · shared peak · f/fmax), u_w = WriteBytes / (t · Bandwidth),
// u_t = FP64TensorFlops / (t · tensor peak · f/fmax) (part of u_c)
// and the SM-busy fraction u_b = (KernelMs / LaunchMs) · (mean fraction
// of SMs holding a block, over the waves):
//
//	P_dyn = D·s(f)·(ClockedIdle + Busy·u_b + Compute·(u_c − u_t) + Tensor·u_t + OnChip·u_s)
//	      + D·(MemoryClocked·m/mmax + Memory·u_m + MemoryWrite·u_w)
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
	ComputeMs   float64 // Flops / R_c (and the other classes' counts over their rates) over the whole grid, before quantisation
	MemoryMs    float64 // Bytes / R_m over the whole grid, before quantisation
	SharedMs    float64 // SharedBytes (× conflicts) over the shared-memory rate, before quantisation
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
	SharedUtil  float64 // u_s
	WriteUtil   float64 // u_w
	TensorUtil  float64 // u_t, the part of u_c on the tensor cores
	PowerW      float64 // mean board power while launching back to back
	TempC       float64 // steady-state temperature at PowerW
}

// Activity is the prediction's utilisations as the power model takes
// them.
func (p Prediction) Activity() Activity {
	return Activity{Busy: p.BusyUtil, Compute: p.ComputeUtil, Shared: p.SharedUtil, Memory: p.MemoryUtil, MemoryWrite: p.WriteUtil, Tensor: p.TensorUtil}
}

// LaunchError is a configuration the GPU refuses to launch: its reason as
// the driver would give it.
type LaunchError struct{ Reason string }

func (e *LaunchError) Error() string { return e.Reason }

// Conditions are what a launch runs under: the GPU settings in force (SM
// and memory clock, MHz, supported ones: ResolveSettings; power limit, W),
// the device's power model, and the host-side cost of one launch, ms.
type Conditions struct {
	ClockMHz, MemClockMHz int
	PowerLimitW           float64
	Power                 PowerModel
	OverheadMs            float64
}

// Predict evaluates the model (the equations at Prediction) for work w
// launched with geometry j on d under c. Errors: a *LaunchError
// for a configuration the GPU refuses (geometry, shared memory,
// registers).
func Predict(d *device.Description, w *Work, j Geometry, c Conditions) (Prediction, error) {
	var p Prediction
	threads := 1
	for i := range 3 {
		if j.Block[i] <= 0 || j.Grid[i] <= 0 {
			return p, &LaunchError{fmt.Sprintf("invalid argument: grid %v and block %v must be positive in every dimension", j.Grid, j.Block)}
		}
		threads *= j.Block[i]
	}
	if threads > d.MaxThreadsPerBlock {
		return p, &LaunchError{fmt.Sprintf("too many threads per block: %d threads (block %v), %s allows %d", threads, j.Block, d.Name, d.MaxThreadsPerBlock)}
	}
	for i := range 3 {
		if j.Block[i] > d.MaxBlockDims[i] || j.Grid[i] > d.MaxGridDims[i] {
			return p, &LaunchError{fmt.Sprintf("invalid argument: grid %v / block %v exceed the limits %v / %v", j.Grid, j.Block, d.MaxGridDims, d.MaxBlockDims)}
		}
	}
	if j.DynamicSharedBytes < 0 {
		return p, &LaunchError{fmt.Sprintf("invalid argument: dynamic shared memory %d bytes", j.DynamicSharedBytes)}
	}
	smem := w.SharedMemory + j.DynamicSharedBytes
	occ, err := occupancy.Compute(d, occupancy.Input{BlockSize: threads, RegistersPerThread: w.Registers, SharedMemoryPerBlock: smem})
	switch {
	case errors.Is(err, occupancy.ErrSharedMemory):
		return p, &LaunchError{fmt.Sprintf("too many resources requested for launch: %d bytes of shared memory per block (%d static + %d dynamic), opt-in maximum %d",
			smem, w.SharedMemory, j.DynamicSharedBytes, d.SharedMemoryPerBlockOptin)}
	case err != nil:
		return p, &LaunchError{"invalid argument: " + err.Error()}
	case occ.ActiveBlocksPerSM == 0:
		return p, &LaunchError{fmt.Sprintf("too many resources requested for launch: %d threads × %d registers per thread exceed %d registers per block",
			threads, w.Registers, d.MaxRegistersPerBlock)}
	}
	p.Occupancy = occ
	p.Blocks = j.Grid[0] * j.Grid[1] * j.Grid[2]
	perWave := d.SMs * occ.ActiveBlocksPerSM
	p.Waves = (p.Blocks + perWave - 1) / perWave

	clock, memClock, limit := c.ClockMHz, c.MemClockMHz, c.PowerLimitW
	p.MemClockMHz, p.PowerLimitW = memClock, limit
	bandwidth := d.MemoryBandwidthGBs * float64(memClock) / float64(d.MemoryClockMHz)
	fmax := float64(d.MaxCoreClockMHz())
	fill := SMFill(p.Blocks, perWave, d.SMs)
	rates := specRates(d)
	eval := func(f int) {
		ff := float64(f)
		eff := w.Efficiency
		if eff == 0 {
			eff = 1
		}
		hc := ff / fmax * eff * math.Min(1, occ.Occupancy/computeSaturationOccupancy)
		rc := d.PeakFP32GFLOPS * 1e9 * hc
		rm := bandwidth * 1e9 * eff * math.Min(1, occ.Occupancy/memorySaturationOccupancy)
		// The other classes add their time to FP32's (one issue stream:
		// Σ instructions_i / throughput_i of
		// performance-projection-heterogeneous-gpus.md section IV-D);
		// shared memory is a third bound beside compute and DRAM.
		others, pipes := rates.otherTime(w, hc)
		p.ComputeMs = (w.Flops/rc + others) * 1e3
		p.MemoryMs = w.Bytes / rm * 1e3
		p.SharedMs = rates.sharedTime(w, hc) * 1e3
		frac := float64(perWave) / float64(p.Blocks)
		p.KernelMs = float64(p.Waves) * math.Max(math.Max(p.ComputeMs*frac, p.MemoryMs*frac), p.SharedMs*frac)
		p.LaunchMs = p.KernelMs + c.OverheadMs
		t := p.LaunchMs / 1e3
		p.ComputeUtil = w.Flops / (t * d.PeakFP32GFLOPS * 1e9 * ff / fmax)
		if pipes > 0 {
			p.ComputeUtil = math.Min(1, p.ComputeUtil+pipes/(t*ff/fmax))
		}
		p.MemoryUtil = w.Bytes / (t * d.MemoryBandwidthGBs * 1e9)
		p.WriteUtil = min(w.WriteBytes, w.Bytes) / (t * d.MemoryBandwidthGBs * 1e9)
		p.BusyUtil = p.KernelMs / p.LaunchMs * fill
		if rates.shared > 0 {
			p.SharedUtil = math.Min(1, w.SharedBytes/(t*rates.shared*ff/fmax))
		}
		if rates.fp64Tensor > 0 {
			p.TensorUtil = math.Min(p.ComputeUtil, w.FP64TensorFlops/(t*rates.fp64Tensor*ff/fmax))
		}
		p.PowerW, p.TempC = c.Power.BoardPower(d, ff, float64(memClock), p.Activity())
		p.SMClockMHz = f
	}
	eval(clock)
	if p.PowerW > limit {
		for _, f := range SupportedCoreClocks(d, memClock) {
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

// MaxThreadsPerBlock is the largest block a kernel with regs registers per
// thread can launch with (cuFuncGetAttribute MAX_THREADS_PER_BLOCK).
func MaxThreadsPerBlock(d *device.Description, regs int) int {
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

// ResolveSettings resolves a plan's GPU settings against d: the memory
// clock is the supported memory clock nearest to the one asked for (the
// lower on a tie), the SM clock likewise among the clocks supported at
// that memory clock (Description.ClockTables),
// and the power limit is taken as given. A clock outside the supported
// range or a power limit outside [PowerLimitMinW, PowerLimitMaxW] is a
// *LaunchError (NVML refuses such settings). Zero fields, and a nil
// Settings, keep the GPU's own clock and limit (clockMHz, limitW) and the
// default memory clock.
func ResolveSettings(d *device.Description, st *Settings, clockMHz int, limitW float64) (clock, memClock int, limit float64, err error) {
	clock, memClock, limit = clockMHz, d.MemoryClockMHz, limitW
	if st == nil {
		return clock, memClock, limit, nil
	}
	if st.MemClockMHz != 0 {
		if memClock, err = nearestClock("memory clock", st.MemClockMHz, d.MemoryClocksMHz, d.Name); err != nil {
			return 0, 0, 0, err
		}
	}
	table := SupportedCoreClocks(d, memClock)
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
			return 0, 0, 0, &LaunchError{fmt.Sprintf("settings: power limit %g W outside the supported %g–%g W of %s", st.PowerLimitW, d.PowerLimitMinW, d.PowerLimitMaxW, d.Name)}
		}
		limit = st.PowerLimitW
	}
	return clock, memClock, limit, nil
}

// nearestClock picks the supported clock (list descending) nearest to
// want, the lower on a tie; want outside [lowest, highest] is a
// *LaunchError.
func nearestClock(what string, want int, list []int, dev string) (int, error) {
	hi, lo := list[0], list[len(list)-1]
	if want > hi || want < lo {
		return 0, &LaunchError{fmt.Sprintf("settings: %s %d MHz outside the supported %d–%d MHz of %s", what, want, lo, hi, dev)}
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

// classRates are a device's peak rates of the instruction classes other
// than FP32 and of shared memory at its highest SM clock, per second
// (SpecProfile's figures, without building a profile: Predict runs for
// every launch the simulated GPU measures).
type classRates struct{ fp64, fp64Tensor, int32, sfu, shared float64 }

func specRates(d *device.Description) classRates {
	hz := float64(d.MaxCoreClockMHz()) * 1e6
	sms := float64(d.SMs)
	return classRates{fp64: d.PeakFP64GFLOPS * 1e9, fp64Tensor: fp64TensorGFLOPS(d) * 1e9, int32: sms * intPerClock(d.ComputeMajor) * hz,
		sfu: sms * sfuPerClock(d.ComputeMajor) * hz, shared: SharedPeakGBs(d, float64(d.MaxCoreClockMHz())) * 1e9}
}

// fp64TensorGFLOPS is the rate (GFLOP/s) FP64 tensor-core work
// (Work.FP64TensorFlops) runs at on d: its tensor cores' peak, or its
// FP64 peak where it has none (a library's DGEMM then runs on the CUDA
// cores).
func fp64TensorGFLOPS(d *device.Description) float64 {
	if d.PeakFP64TensorGFLOPS > 0 {
		return d.PeakFP64TensorGFLOPS
	}
	return d.PeakFP64GFLOPS
}

// otherTime is the time (s) of w's FP64 (CUDA and tensor cores), integer and special-function
// operations at the fraction h of the peak rates (clock, efficiency,
// latency hiding), and the same at the full rates (s), the pipes' busy
// time for the power model. A class the device has no rate for counts
// nothing (no device in the database lacks one that a kernel uses).
func (r classRates) otherTime(w *Work, h float64) (t, pipes float64) {
	for _, c := range [...]struct{ n, rate float64 }{{w.FP64Flops, r.fp64}, {w.FP64TensorFlops, r.fp64Tensor}, {w.IntOps, r.int32}, {w.SFUOps, r.sfu}} {
		if c.n > 0 && c.rate > 0 {
			t += c.n / (c.rate * h)
			pipes += c.n / c.rate
		}
	}
	return t, pipes
}

// sharedTime is the time (s) of w's shared-memory loads at the fraction h of
// the peak rate, each access serialised SharedConflict ways.
func (r classRates) sharedTime(w *Work, h float64) float64 {
	if w.SharedBytes <= 0 || r.shared <= 0 {
		return 0
	}
	return w.SharedBytes * float64(max(w.SharedConflict, 1)) / (r.shared * h)
}
