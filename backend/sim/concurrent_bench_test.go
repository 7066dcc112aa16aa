package sim

import (
	"testing"

	"github.com/gtune/gtune/device"
)

// BenchmarkConcurrentTimes is the block-scheduler model of one plan of
// four kernels on the simulated K40c (15 SMs), sized like the Rodinia
// workload's smallest thread blocks: 16,384 to 65,536 blocks each, so
// that thousands of blocks are dispatched per SM.
func BenchmarkConcurrentTimes(b *testing.B) {
	d, err := device.Lookup("k40c")
	if err != nil {
		b.Fatal(err)
	}
	ks := []kernelRun{
		{stream: 0, blocks: 65536, blockMs: 0.004, perSM: 16, use: blockUse(d, 64, 32, 4096), compute: 0.04, memory: 0.002, overheadMs: 0.005},
		{stream: 1, blocks: 16384, blockMs: 0.010, perSM: 16, use: blockUse(d, 128, 64, 2048), compute: 0.02, memory: 0.004, overheadMs: 0.005},
		{stream: 2, blocks: 65536, blockMs: 0.003, perSM: 16, use: blockUse(d, 64, 29, 400), compute: 0.03, memory: 0.003, overheadMs: 0.005},
		{stream: 3, blocks: 32768, blockMs: 0.002, perSM: 16, use: blockUse(d, 32, 27, 0), compute: 0.01, memory: 0.004, overheadMs: 0.005},
	}
	for b.Loop() {
		concurrentTimes(d, ks)
	}
}
