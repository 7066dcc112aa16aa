package emulate

import "github.com/gtune/gtune/backend"

// Work scales one block's counts to a grid of blocks thread blocks, as
// performance-projection-heterogeneous-gpus.md section IV-C2 extrapolates
// a single workgroup's statistics to the full kernel (every block taken
// to do what the emulated one did): FP32 and FP64 FLOP, integer and
// special-function operations (per thread), DRAM bytes as the 32-byte
// sectors of global loads and stores (no cache: an upper bound for
// kernels that reuse data across blocks), and shared-memory bytes as the
// wavefronts served (128 bytes each: bank conflicts included, so
// SharedConflict is 1). Registers and static shared memory are the
// compiler's, not the emulator's: the caller sets them.
func (c *Counts) Work(blocks int) backend.Work {
	n := float64(blocks)
	return backend.Work{
		Flops:          n * float64(c.FP32Flops),
		FP64Flops:      n * float64(c.FP64Flops),
		IntOps:         n * float64(c.ThreadInstructions[Int]),
		SFUOps:         n * float64(c.ThreadInstructions[SFU]),
		Bytes:          n * 32 * float64(c.GlobalLoadSectors+c.GlobalStoreSectors),
		SharedBytes:    n * 128 * float64(c.SharedWavefronts),
		SharedConflict: 1,
	}
}
