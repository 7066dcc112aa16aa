package beast

import (
	"slices"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
)

// DeviceConstants gives the device limits filters may name, from d:
// max_threads_dim_0/1/2 (threads per thread block per dimension),
// max_threads_per_block, max_threads_per_sm, warp_size, registers_per_sm,
// max_registers_per_block, max_registers_per_thread (32-bit registers),
// shared_mem_per_block (bytes, without opt-in) and shared_mem_per_sm
// (bytes, the largest carve-out).
func DeviceConstants(d *device.Description) expr.MapEnv {
	i := func(n int) expr.Value { return expr.Int(int64(n)) }
	return expr.MapEnv{
		"max_threads_dim_0":        i(d.MaxBlockDims[0]),
		"max_threads_dim_1":        i(d.MaxBlockDims[1]),
		"max_threads_dim_2":        i(d.MaxBlockDims[2]),
		"max_threads_per_block":    i(d.MaxThreadsPerBlock),
		"max_threads_per_sm":       i(d.MaxThreadsPerSM),
		"warp_size":                i(d.WarpSize),
		"registers_per_sm":         i(d.RegistersPerSM),
		"max_registers_per_block":  i(d.MaxRegistersPerBlock),
		"max_registers_per_thread": i(d.MaxRegistersPerThread),
		"shared_mem_per_block":     i(d.SharedMemoryPerBlock),
		"shared_mem_per_sm":        i(d.SharedMemoryPerSM),
	}
}

// ConstantNames are the names of DeviceConstants, sorted: the device
// limits a declared space's filters may read.
func ConstantNames() []string {
	var out []string
	for k := range DeviceConstants(&device.Description{MaxBlockDims: [3]int{1, 1, 1}}) {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DGEMMText is the DGEMM search space of autotuning-gemm-energy-beast.md:
// the iterators of Figure 3, lines 1–10, as used in the paper's
// experiment (dim_m and dim_n in steps of 16), and the filters of section
// 2.3.2, each discarding a configuration when true. Sizes are in doubles
// (8 bytes) unless named bytes. Readings of the prose:
//
//   - shared memory per thread block is the A and B stripes,
//     (blk_m*blk_k + blk_k*blk_n) doubles, 8 bytes each;
//   - registers per thread block are blk_m*blk_n (a tile of C in
//     registers) and registers per thread that over dim_m*dim_n;
//   - computational intensity is FMAs per byte of shared memory per
//     stripe, blk_m*blk_n*blk_k / (8*(blk_m*blk_k + blk_k*blk_n)), at
//     least 4 (the table of section 3 has kernels at exactly 4);
//   - occupancy is whole thread blocks per SM given registers
//     (registers_per_sm // registers per block) or shared memory
//     (shared_mem_per_sm // bytes per block), times threads per block, at
//     least 512;
//   - with vector types, "blk_m_a × sizeof(double2) divides blk_m, and so
//     on" is read with sizeof(double2) in doubles (2), as blk_m counts
//     doubles, and applied to all four divisibility filters.
const DGEMMText = `
1: dim_m = [ 16 : max_threads_dim_0 : 16 ],
2: dim_n = [ 16 : max_threads_dim_1 : 16 ],
3: blk_m = [ dim_m : INF : dim_m ],
4: blk_n = [ dim_n : INF : dim_n ],
5: blk_k = [ 1 : INF : 1 ],
6: blk_m_a = [ blk_m : 1 : -1 ],
7: blk_n_a = [ blk_k : 1 : -1 ],
8: blk_m_b = [ blk_k : 1 : -1 ],
9: blk_n_b = [ blk_n : 1 : -1 ],
10: simd = [ 0 : 1 ]

filter threads: dim_m * dim_n > max_threads_per_block
filter registers_per_block: blk_m * blk_n > max_registers_per_block
filter registers_per_thread: blk_m * blk_n / (dim_m * dim_n) > max_registers_per_thread
filter shared_memory: (blk_m * blk_k + blk_k * blk_n) * 8 > shared_mem_per_block
filter warp: (dim_m * dim_n) % warp_size != 0
filter intensity: blk_m * blk_n * blk_k < 4 * (blk_m * blk_k + blk_k * blk_n) * 8
filter occupancy_registers: registers_per_sm // (blk_m * blk_n) * (dim_m * dim_n) < 512
filter occupancy_shared: shared_mem_per_sm // ((blk_m * blk_k + blk_k * blk_n) * 8) * (dim_m * dim_n) < 512
filter divides_m_a: blk_m % (blk_m_a * (simd + 1)) != 0
filter divides_n_a: blk_k % (blk_n_a * (simd + 1)) != 0
filter divides_m_b: blk_k % (blk_m_b * (simd + 1)) != 0
filter divides_n_b: blk_n % (blk_n_b * (simd + 1)) != 0
filter threads_a: blk_m_a * blk_n_a != dim_m * dim_n
filter threads_b: blk_m_b * blk_n_b != dim_m * dim_n
`

// Declared are the declared search spaces gtune ships, by the name
// gtune space --beast takes, each made for a device of the device
// database (its constraints read the device's limits).
var Declared = map[string]func(*device.Description) (*Space, error){
	"dgemm": DGEMM,
}

// DGEMM gives the paper's DGEMM search space (DGEMMText) for device d.
func DGEMM(d *device.Description) (*Space, error) {
	return Parse(DGEMMText, DeviceConstants(d))
}
