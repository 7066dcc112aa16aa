package model

import (
	"testing"

	"github.com/gtune/gtune/device"
)

// BenchmarkConcurrentTimes is the block-scheduler model of one plan of
// four kernels on the simulated K40c (15 SMs), sized like the Rodinia
// workload's smallest thread Blocks: 16,384 to 65,536 blocks each, so
// that thousands of blocks are dispatched per SM.
func BenchmarkConcurrentTimes(b *testing.B) {
	d, err := device.Lookup("k40c")
	if err != nil {
		b.Fatal(err)
	}
	ks := []KernelRun{
		{Stream: 0, Blocks: 65536, BlockMs: 0.004, PerSM: 16, Use: BlockUse(d, 64, 32, 4096), Compute: 0.04, Memory: 0.002, OverheadMs: 0.005},
		{Stream: 1, Blocks: 16384, BlockMs: 0.010, PerSM: 16, Use: BlockUse(d, 128, 64, 2048), Compute: 0.02, Memory: 0.004, OverheadMs: 0.005},
		{Stream: 2, Blocks: 65536, BlockMs: 0.003, PerSM: 16, Use: BlockUse(d, 64, 29, 400), Compute: 0.03, Memory: 0.003, OverheadMs: 0.005},
		{Stream: 3, Blocks: 32768, BlockMs: 0.002, PerSM: 16, Use: BlockUse(d, 32, 27, 0), Compute: 0.01, Memory: 0.004, OverheadMs: 0.005},
	}
	for b.Loop() {
		ConcurrentTimes(d, ks)
	}
}
