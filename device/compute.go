package device

import "fmt"

// Limits are the occupancy-relevant limits fixed by a CUDA compute
// capability (the same for every GPU of that capability). Sizes are in
// bytes, register counts in 32-bit registers.
type Limits struct {
	MaxThreadsPerBlock           int
	MaxBlockDims, MaxGridDims    [3]int
	MaxThreadsPerSM              int
	MaxBlocksPerSM               int
	RegistersPerSM               int
	MaxRegistersPerBlock         int
	MaxRegistersPerThread        int
	RegisterAllocUnit            int // registers per warp (per block on CC 1.x) are rounded up to this
	WarpAllocGranularity         int // SM sub-partitions (CC >= 2.0); warp allocation granularity on CC 1.x
	SharedMemoryPerSM            int
	SharedMemoryPerBlock         int
	SharedMemoryPerBlockOptin    int
	SharedMemoryAllocUnit        int
	ReservedSharedMemoryPerBlock int
	SharedMemoryCarveoutsKiB     []int
	BlockBarriersPerSM           int
	Source                       string
}

// MaxWarpsPerSM is MaxThreadsPerSM / 32.
func (l Limits) MaxWarpsPerSM() int { return l.MaxThreadsPerSM / 32 }

const (
	guide   = "CUDA C++ Programming Guide, Technical Specifications per Compute Capability"
	occ13   = "cuda_occupancy.h (CUDA 13.0, read on the H100 machine): allocation units, sub-partitions, carveouts, max blocks per SM, barrier slots"
	occ70   = "cuda_occupancy.h (CUDA 7.0, the last with CC 1.x/2.x): allocation units, sub-partitions, warp allocation granularity"
	grid2G  = 2147483647
	kib     = 1024
	regs64K = 65536
)

var (
	dims1024  = [3]int{1024, 1024, 64}
	grid3Plus = [3]int{grid2G, 65535, 65535}
)

// ccTable holds the compute capabilities gtune knows, keyed major*10+minor.
// Tegra parts (3.2, 5.3, 6.2, 7.2, 8.7, 10.1/11.0) and CC 3.7 are left
// out: no database GPU uses them and their threads and shared memory per
// SM were not checked. cuda_occupancy.h's "virtual resource" limit (CUDA
// 13) is not modelled (the kernels of the H100 table use none).
var ccTable = map[int]Limits{
	13: {512, [3]int{512, 512, 64}, [3]int{65535, 65535, 1}, 1024, 8, 16384, 16384, 124, 512, 2, 16 * kib, 16 * kib, 16 * kib, 512, 0, nil, 0,
		guide + " (CUDA 3.2 edition, CC 1.3); 124 registers per thread as the CUDA Occupancy Calculator (the guide says 128, unsure); " + occ70},
	20:  {1024, dims1024, [3]int{65535, 65535, 65535}, 1536, 8, 32768, 32768, 63, 64, 2, 48 * kib, 48 * kib, 48 * kib, 128, 0, []int{16, 48}, 0, guide + " (CC 2.0); " + occ70},
	21:  {1024, dims1024, [3]int{65535, 65535, 65535}, 1536, 8, 32768, 32768, 63, 64, 2, 48 * kib, 48 * kib, 48 * kib, 128, 0, []int{16, 48}, 0, guide + " (CC 2.1); " + occ70},
	30:  {1024, dims1024, grid3Plus, 2048, 16, regs64K, regs64K, 63, 256, 4, 48 * kib, 48 * kib, 48 * kib, 256, 0, []int{16, 32, 48}, 0, guide + " (CC 3.0); " + occ13},
	35:  {1024, dims1024, grid3Plus, 2048, 16, regs64K, regs64K, 255, 256, 4, 48 * kib, 48 * kib, 48 * kib, 256, 0, []int{16, 32, 48}, 0, guide + " (CC 3.5); " + occ13},
	50:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 64 * kib, 48 * kib, 48 * kib, 256, 0, nil, 0, guide + " (CC 5.0); " + occ13},
	52:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 96 * kib, 48 * kib, 48 * kib, 256, 0, nil, 0, guide + " (CC 5.2); " + occ13},
	60:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 2, 64 * kib, 48 * kib, 48 * kib, 256, 0, nil, 0, guide + " (CC 6.0); " + occ13 + " (2 sub-partitions on CC 6.0)"},
	61:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 96 * kib, 48 * kib, 48 * kib, 256, 0, nil, 0, guide + " (CC 6.1); " + occ13},
	70:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 96 * kib, 48 * kib, 96 * kib, 256, 0, []int{0, 8, 16, 32, 64, 96}, 0, guide + " (CC 7.0); " + occ13},
	75:  {1024, dims1024, grid3Plus, 1024, 16, regs64K, regs64K, 255, 256, 4, 64 * kib, 48 * kib, 64 * kib, 256, 0, []int{32, 64}, 0, guide + " (CC 7.5); " + occ13},
	80:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 164 * kib, 48 * kib, 163 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100, 132, 164}, 0, guide + " (CC 8.0); " + occ13},
	86:  {1024, dims1024, grid3Plus, 1536, 16, regs64K, regs64K, 255, 256, 4, 100 * kib, 48 * kib, 99 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100}, 0, guide + " (CC 8.6); " + occ13},
	89:  {1024, dims1024, grid3Plus, 1536, 24, regs64K, regs64K, 255, 256, 4, 100 * kib, 48 * kib, 99 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100}, 0, guide + " (CC 8.9); " + occ13},
	90:  {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 228 * kib, 48 * kib, 227 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100, 132, 164, 196, 228}, 64, guide + " (CC 9.0); " + occ13 + "; measured on an H100 SXM5 (occupancy/testdata/h100_occupancy.csv.gz)"},
	100: {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 228 * kib, 48 * kib, 227 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100, 132, 164, 196, 228}, 64, guide + " (CC 10.0); " + occ13},
	103: {1024, dims1024, grid3Plus, 2048, 32, regs64K, regs64K, 255, 256, 4, 228 * kib, 48 * kib, 227 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100, 132, 164, 196, 228}, 64, guide + " (CC 10.3); " + occ13},
	120: {1024, dims1024, grid3Plus, 1536, 24, regs64K, regs64K, 255, 256, 4, 100 * kib, 48 * kib, 99 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100}, 24, guide + " (CC 12.0); " + occ13 + " (24 blocks and 1 barrier slot per block slot on CC 12.x)"},
	121: {1024, dims1024, grid3Plus, 1536, 24, regs64K, regs64K, 255, 256, 4, 100 * kib, 48 * kib, 99 * kib, 128, 1024, []int{0, 8, 16, 32, 64, 100}, 24, guide + " (CC 12.1); " + occ13 + " (24 blocks and 1 barrier slot per block slot on CC 12.x)"},
}

// ComputeLimits returns the limits of CUDA compute capability major.minor
// (sources in Limits.Source). Errors: a capability not in the table, with
// the known ones listed.
func ComputeLimits(major, minor int) (Limits, error) {
	l, ok := ccTable[major*10+minor]
	if !ok || minor < 0 || minor > 9 {
		return Limits{}, fmt.Errorf("device: compute capability %d.%d not in gtune's table (known: 1.3, 2.0, 2.1, 3.0, 3.5, 5.0, 5.2, 6.0, 6.1, 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 10.3, 12.0, 12.1)", major, minor)
	}
	l.SharedMemoryCarveoutsKiB = append([]int(nil), l.SharedMemoryCarveoutsKiB...)
	return l, nil
}

// limitsOf is the Limits a description states, for comparison with the table.
func (d *Description) limitsOf() Limits {
	return Limits{d.MaxThreadsPerBlock, d.MaxBlockDims, d.MaxGridDims, d.MaxThreadsPerSM, d.MaxBlocksPerSM,
		d.RegistersPerSM, d.MaxRegistersPerBlock, d.MaxRegistersPerThread, d.RegisterAllocUnit, d.WarpAllocGranularity,
		d.SharedMemoryPerSM, d.SharedMemoryPerBlock, d.SharedMemoryPerBlockOptin, d.SharedMemoryAllocUnit,
		d.ReservedSharedMemoryPerBlock, append([]int(nil), d.SharedMemoryCarveoutsKiB...), d.BlockBarriersPerSM, ""}
}

// applyLimits sets d's compute-capability fields from l, noting source.
func (d *Description) applyLimits(l Limits, source string) {
	d.MaxThreadsPerBlock, d.MaxBlockDims, d.MaxGridDims = l.MaxThreadsPerBlock, l.MaxBlockDims, l.MaxGridDims
	d.MaxThreadsPerSM, d.MaxBlocksPerSM, d.MaxWarpsPerSM = l.MaxThreadsPerSM, l.MaxBlocksPerSM, l.MaxWarpsPerSM()
	d.RegistersPerSM, d.MaxRegistersPerBlock, d.MaxRegistersPerThread = l.RegistersPerSM, l.MaxRegistersPerBlock, l.MaxRegistersPerThread
	d.RegisterAllocUnit, d.WarpAllocGranularity = l.RegisterAllocUnit, l.WarpAllocGranularity
	d.SharedMemoryPerSM, d.SharedMemoryPerBlock, d.SharedMemoryPerBlockOptin = l.SharedMemoryPerSM, l.SharedMemoryPerBlock, l.SharedMemoryPerBlockOptin
	d.SharedMemoryAllocUnit, d.ReservedSharedMemoryPerBlock = l.SharedMemoryAllocUnit, l.ReservedSharedMemoryPerBlock
	d.SharedMemoryCarveoutsKiB = append([]int(nil), l.SharedMemoryCarveoutsKiB...)
	d.BlockBarriersPerSM = l.BlockBarriersPerSM
	for _, f := range ccFields {
		d.Sources[f] = source
	}
}

var ccFields = []string{"max_threads_per_block", "max_block_dims", "max_grid_dims", "max_threads_per_sm", "max_blocks_per_sm",
	"max_warps_per_sm", "registers_per_sm", "max_registers_per_block", "max_registers_per_thread", "register_alloc_unit",
	"warp_alloc_granularity", "shared_memory_per_sm", "shared_memory_per_block", "shared_memory_per_block_optin",
	"shared_memory_alloc_unit", "reserved_shared_memory_per_block", "shared_memory_carveouts_kib", "block_barriers_per_sm"}
