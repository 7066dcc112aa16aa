package model

import (
	"math"

	"github.com/gtune/gtune/device"
)

// Profile is a device profile in the sense of
// ../shared/papers/performance-projection-heterogeneous-gpus.md section
// IV-B ("Offline Device Characterization"): what one GPU sustains, per
// class of instruction and per memory, measured once by microbenchmarks
// (package probe) or derived from the device's specifications
// (SpecProfile). Throughputs are of the whole GPU at SMClockMHz and
// MemClockMHz.
type Profile struct {
	Device string `json:"device"` // device-database id, e.g. "h100_sxm"
	Name   string `json:"name"`   // product name
	UUID   string `json:"uuid,omitempty"`
	Driver string `json:"driver,omitempty"`
	// Source says where the figures come from: "measured" (microbenchmarks
	// on the GPU), "simulated" (microbenchmarks on the simulated GPU),
	// "specification" (SpecProfile: the device database's figures and
	// the architecture's per-SM rates, nothing measured), or
	// SourceDerivedFamily / SourceDerivedOther (DeriveProfile: measured
	// profiles of other GPUs scaled by this one's specifications).
	Source string `json:"source"`
	// DerivedFrom lists the device ids and UUIDs of the measured profiles
	// a derived profile comes from.
	DerivedFrom []string `json:"derived_from,omitempty"`
	Date        string   `json:"date,omitempty"` // RFC 3339, when measured
	// SMClockMHz and MemClockMHz are the clocks observed while measuring
	// (the specification's highest clocks for SpecProfile).
	SMClockMHz  float64 `json:"sm_clock_mhz"`
	MemClockMHz float64 `json:"mem_clock_mhz"`

	// Instruction throughput, whole GPU: FP32 and FP64 in GFLOP/s (an FMA
	// is 2 FLOP), 32-bit integer multiply-add and special-function
	// (__sinf: MUFU) operations in G ops/s.
	FP32GFLOPS float64 `json:"fp32_gflops"`
	FP64GFLOPS float64 `json:"fp64_gflops"`
	Int32GOPS  float64 `json:"int32_gops"`
	SFUGOPS    float64 `json:"sfu_gops"`
	// SharedGBs is shared-memory load throughput without bank conflicts,
	// GB/s; BankConflictSlowdown the time of 32-way conflicted loads
	// over conflict-free ones (32 where every conflict serialises).
	SharedGBs            float64 `json:"shared_gbs"`
	BankConflictSlowdown float64 `json:"bank_conflict_slowdown"`
	// L2GBs is load throughput from a working set held in L2, GB/s (0:
	// unknown).
	L2GBs float64 `json:"l2_gbs"`
	// LaunchOverheadUs is the time of an empty kernel, µs.
	LaunchOverheadUs float64 `json:"launch_overhead_us"`
	// BlockNs is what each thread block costs an SM however little it
	// does, ns: the SM takes a new block no faster than one per BlockNs
	// (probe_empty over SMs × 2048 blocks; 76-78 ns on an H100 SXM, the
	// same for 32- to 512-thread blocks, and what vector_add and the
	// stencil took per block with blocks of 32-128 threads: BENCHMARKS.md,
	// "Thread blocks cost an SM 80 ns each"). 0: unknown.
	BlockNs float64 `json:"block_ns,omitempty"`
	// Memory is global-memory throughput by occupancy, ascending.
	Memory []MemoryPoint `json:"memory"`
	// Board power, W, where measured (probe's Options.Power): idle (the
	// device state's), running the FP32 benchmark, and reading DRAM at
	// full occupancy. 0: not measured.
	IdlePowerW float64 `json:"idle_power_w,omitempty"`
	FP32PowerW float64 `json:"fp32_power_w,omitempty"`
	DRAMPowerW float64 `json:"dram_power_w,omitempty"`
	// PowerReadings are the board's power at the operating points probe
	// measures (probe's Options.Power), PowerFit the power model fitted to
	// them (FitPowerModel; probe holds one reading out to check it). Nil:
	// not measured.
	PowerReadings []PowerReading `json:"power_readings,omitempty"`
	PowerFit      *PowerFit      `json:"power_fit,omitempty"`
}

// SharedPeakGBs is the SMs' peak shared-memory load rate at SM clock
// smMHz, GB/s: 32 banks of 4 bytes a clock per SM.
func SharedPeakGBs(d *device.Description, smMHz float64) float64 {
	return float64(d.SMs) * sharedBytesPerClock * smMHz / 1e3
}

// MemoryPoint is memory throughput at one occupancy (section IV-B:
// "the peak throughput of coalesced accesses for read and write
// operations at various occupancy levels"): 256-thread blocks,
// BlocksPerSM of them resident per SM.
type MemoryPoint struct {
	BlocksPerSM int     `json:"blocks_per_sm"`
	Occupancy   float64 `json:"occupancy"` // resident warps ÷ the SM's maximum
	ReadGBs     float64 `json:"read_gbs"`  // coalesced loads (float4)
	WriteGBs    float64 `json:"write_gbs"` // coalesced stores (float4)
	// StridedGBs is the DRAM traffic of loads a warp scatters over 32
	// sectors (one float from each 32-byte sector), counted in 32-byte
	// sectors moved, GB/s: what uncoalesced accesses cost (section IV-D).
	StridedGBs float64 `json:"strided_gbs"`
	// CopyGBs is a coalesced copy's throughput, the bytes loaded and
	// stored per second (float4 each way): loads and stores sharing the
	// DRAM at once, which the H200 speeds up less than either alone
	// (vector_add measured 0.801 of the H100's time where the two
	// apart give 0.699). 0: not measured.
	CopyGBs float64 `json:"copy_gbs,omitempty"`
	// Read4GBs is coalesced loads of one float a thread (4 bytes, against
	// ReadGBs' float4): a quarter of the bytes in flight at the same
	// occupancy, where a GPU's lower latency counts more than its
	// bandwidth. 0: not measured.
	Read4GBs float64 `json:"read4_gbs,omitempty"`
	// SharedGBs is conflict-free shared-memory loads at this occupancy,
	// GB/s (the profile's SharedGBs is at full occupancy). 0: not
	// measured; the projection then scales the full-occupancy rate by
	// its latency-hiding factor.
	SharedGBs float64 `json:"shared_gbs,omitempty"`
}

// ProbeBlockSize is the thread-block size of the memory microbenchmarks
// (package probe) and of the MemoryPoints of SpecProfile.
const ProbeBlockSize = 256

// Per-SM, per-clock rates of the CUDA arithmetic instructions and shared
// memory by compute capability (CUDA C++ Programming Guide, "Arithmetic
// Instructions", results per clock cycle per multiprocessor): 32-bit
// integer multiply-add 32 (CC 3.x) or 64 (CC 5.0 on), special functions
// (__sinf, exp2, rsqrt) 32 (CC 3.x) or 16; shared memory serves 32 banks
// of 4 bytes per clock.
func intPerClock(major int) float64 {
	if major <= 3 {
		return 32
	}
	return 64
}

func sfuPerClock(major int) float64 {
	if major <= 3 {
		return 32
	}
	return 16
}

const sharedBytesPerClock = 32 * 4

// SpecProfile is d's profile from its specifications: peak FP32 and FP64
// and DRAM bandwidth from the device database, integer, special-function
// and shared-memory rates from the per-SM rates of its compute capability
// at its highest SM clock, and DRAM throughput at each occupancy as the
// model of Prediction answers for the microbenchmarks' grids of one wave:
// a wave of fewer resident blocks takes a full wave's time, so
// throughput is linear in the occupancy the grid achieves (its
// theoretical occupancy being full). That is the model's assumption, not
// a GPU's: measured profiles (package probe) saturate earlier. L2
// throughput is not specified (0); block scheduling is
// DefaultBlockCycles at the highest SM clock. It is what the simulated
// GPU answers (but for block scheduling, which the simulator's own model,
// Prediction, does not charge; a simulator given a profile projects with
// it) and what a GPU nobody measured is projected with.
func SpecProfile(d *device.Description) Profile {
	r := specRates(d)
	p := Profile{
		Device: d.ID, Name: d.Name, Source: "specification",
		SMClockMHz: float64(d.MaxCoreClockMHz()), MemClockMHz: float64(d.MemoryClockMHz),
		FP32GFLOPS: d.PeakFP32GFLOPS, FP64GFLOPS: r.fp64 / 1e9, Int32GOPS: r.int32 / 1e9, SFUGOPS: r.sfu / 1e9, SharedGBs: r.shared / 1e9,
		BankConflictSlowdown: 32,
		LaunchOverheadUs:     DefaultLaunchOverheadUs,
		BlockNs:              DefaultBlockCycles / float64(d.MaxCoreClockMHz()) * 1e3,
	}
	for _, b := range ProbeBlocksPerSM(d) {
		occ := OccupancyOf(d, b)
		bw := d.MemoryBandwidthGBs * math.Min(1, occ)
		// A scattered warp moves a 32-byte sector per float: sectors at
		// the bandwidth, the useful bytes an eighth of them.
		p.Memory = append(p.Memory, MemoryPoint{BlocksPerSM: b, Occupancy: occ, ReadGBs: bw, WriteGBs: bw, StridedGBs: bw, CopyGBs: bw, Read4GBs: bw})
	}
	return p
}

// DefaultBlockCycles is the SM clock cycles a thread block costs an SM
// (Profile.BlockNs) where nothing was measured: 151, the 76.5 ns measured
// on an H100 SXM at its 1,980 MHz (BENCHMARKS.md, "Thread blocks cost an
// SM 80 ns each"); other architectures are taken to schedule blocks in
// as many cycles.
const DefaultBlockCycles = 151

// DefaultLaunchOverheadUs is the host-side cost of one launch the
// simulated GPU charges, µs (a cudaLaunchKernel with event timing on a
// recent driver).
const DefaultLaunchOverheadUs = 3

// ProbeBlocksPerSM are the occupancies the memory microbenchmarks run at:
// 1, 2, 4, ... resident 256-thread blocks per SM, up to what the SM holds.
func ProbeBlocksPerSM(d *device.Description) []int {
	most := d.MaxThreadsPerSM / ProbeBlockSize
	if d.MaxBlocksPerSM > 0 {
		most = min(most, d.MaxBlocksPerSM)
	}
	var out []int
	for b := 1; b <= most; b *= 2 {
		out = append(out, b)
	}
	if len(out) > 0 && out[len(out)-1] != most {
		out = append(out, most)
	}
	return out
}

// OccupancyOf is the occupancy of blocksPerSM resident 256-thread blocks:
// their warps over the SM's maximum.
func OccupancyOf(d *device.Description, blocksPerSM int) float64 {
	warps := d.MaxWarpsPerSM
	if warps == 0 && d.WarpSize > 0 {
		warps = d.MaxThreadsPerSM / d.WarpSize
	}
	if warps == 0 {
		return 0
	}
	return float64(blocksPerSM*ProbeBlockSize/max(d.WarpSize, 1)) / float64(warps)
}

// ReadGBsAt is the profile's coalesced read throughput at occupancy occ,
// GB/s: interpolated linearly between the measured points, the first
// point's below it, the last's above.
func (p Profile) ReadGBsAt(occ float64) float64 {
	return p.memoryAt(occ, func(m MemoryPoint) float64 { return m.ReadGBs })
}

// WriteGBsAt is ReadGBsAt for stores.
func (p Profile) WriteGBsAt(occ float64) float64 {
	return p.memoryAt(occ, func(m MemoryPoint) float64 { return m.WriteGBs })
}

// Read4GBsAt is ReadGBsAt for 4-byte loads (0 where the profile has
// none).
func (p Profile) Read4GBsAt(occ float64) float64 {
	return p.memoryAt(occ, func(m MemoryPoint) float64 { return m.Read4GBs })
}

// SharedGBsAt is ReadGBsAt for shared memory (0 where the profile has no
// curve of it).
func (p Profile) SharedGBsAt(occ float64) float64 {
	return p.memoryAt(occ, func(m MemoryPoint) float64 { return m.SharedGBs })
}

// CopyGBsAt is ReadGBsAt for a copy (0 where the profile has none).
func (p Profile) CopyGBsAt(occ float64) float64 {
	return p.memoryAt(occ, func(m MemoryPoint) float64 { return m.CopyGBs })
}

func (p Profile) memoryAt(occ float64, f func(MemoryPoint) float64) float64 {
	pts := p.Memory
	if len(pts) == 0 {
		return 0
	}
	if occ <= pts[0].Occupancy {
		return f(pts[0])
	}
	for i := 1; i < len(pts); i++ {
		if occ <= pts[i].Occupancy {
			a, b := pts[i-1], pts[i]
			w := (occ - a.Occupancy) / (b.Occupancy - a.Occupancy)
			return f(a) + w*(f(b)-f(a))
		}
	}
	return f(pts[len(pts)-1])
}
