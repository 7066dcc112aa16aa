package emulate

import (
	"testing"
)

// BenchmarkMatmulBlock is the emulation of one 16×16 block of matmul
// (2×2 tiles, WIDTH 4096): 10.0 million thread instructions.
func BenchmarkMatmulBlock(b *testing.B) {
	t := &testing.T{}
	k := kernel(t, "matmul_16_16_2_2.ptx", "matmul_kernel")
	const n = 4096
	for b.Loop() {
		if _, err := k.Emulate(Launch{Grid: [3]int{n / 32, n / 32}, Block: [3]int{16, 16},
			Args: []Arg{{Buffer: floats("C", n*n, nil)}, {Buffer: floats("A", n*n, func(i int64) float32 { return 1 })}, {Buffer: floats("B", n*n, func(i int64) float32 { return 2 })}}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatmulSample is JobWork's sample of matmul at WIDTH 4096
// (DefaultSampleBlocks, DefaultSampleInstructions: 2 blocks of 10.0
// million thread instructions each).
func BenchmarkMatmulSample(b *testing.B) {
	t := &testing.T{}
	k := kernel(t, "matmul_16_16_2_2.ptx", "matmul_kernel")
	const n = 4096
	for b.Loop() {
		c, err := k.EmulateSample(Launch{Grid: [3]int{n / 32, n / 32}, Block: [3]int{16, 16},
			Args: []Arg{{Buffer: floats("C", n*n, nil)}, {Buffer: floats("A", n*n, func(i int64) float32 { return 1 })}, {Buffer: floats("B", n*n, func(i int64) float32 { return 2 })}}},
			DefaultSampleBlocks, DefaultSampleInstructions)
		if err != nil || c.Blocks != 2 {
			b.Fatal(c.Blocks, err)
		}
	}
}
