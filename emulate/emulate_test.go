package emulate

import (
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
)

func kernel(t *testing.T, file, name string) *Kernel {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("%s has no entry %s", file, name)
	return nil
}

// floats is a buffer of n float32, element i f(i) (nil: zeros).
func floats(name string, n int64, f func(i int64) float32) *Buffer {
	b := &Buffer{Name: name, Bytes: 4 * n, ElemBytes: 4}
	if f != nil {
		b.Fill = func(i int64) uint64 { return uint64(math.Float32bits(f(i))) }
	}
	return b
}

// vector_add (block_size_x 256, work_per_thread 1) as NVRTC compiles it
// for sm_90, hand-counted: 22 instructions per warp, two coalesced loads
// and a store of 32 floats (4 sectors each) per warp, one FP32 add per
// thread; the block past n's end diverges in one warp and moves only the
// sectors of the elements it touches.
func TestVectorAddHandCounted(t *testing.T) {
	k := kernel(t, "vector_add_256_1.ptx", "vector_add")
	const n = 262144
	c, err := k.Emulate(Launch{Grid: [3]int{n / 256}, Block: [3]int{256},
		Args: []Arg{{Buffer: floats("c", n, func(int64) float32 { return 0 })}, {Buffer: floats("a", n, func(i int64) float32 { return float32(i) })},
			{Buffer: floats("b", n, func(int64) float32 { return 1 })}, {Scalar: n}}})
	if err != nil {
		t.Fatal(err)
	}
	var warp int64
	for _, v := range c.WarpInstructions {
		warp += v
	}
	if c.Threads != 256 || c.Warps != 8 || warp != 8*22 || c.ThreadInstructions[FP32] != 256 || c.FP32Flops != 256 {
		t.Errorf("instructions: %+v", c)
	}
	if c.GlobalLoadRequests != 16 || c.GlobalLoadSectors != 64 || c.GlobalLoadBytes != 2048 ||
		c.GlobalStoreRequests != 8 || c.GlobalStoreSectors != 32 || c.GlobalStoreBytes != 1024 {
		t.Errorf("global memory: %+v", c)
	}
	if c.Branches != 8 || c.DivergentBranches != 0 || c.SharedRequests != 0 {
		t.Errorf("branches %d (divergent %d), shared %d", c.Branches, c.DivergentBranches, c.SharedRequests)
	}
	// n = 300: block 1 holds elements 256..511, 44 of them in range:
	// warp 0 whole, warp 1 for 12 threads (elements 288..299, sectors 36
	// and 37), the other six warps branch past.
	c, err = k.Emulate(Launch{Grid: [3]int{2}, Block: [3]int{256}, BlockIdx: [3]int{1},
		Args: []Arg{{Buffer: floats("c", 300, nil)}, {Buffer: floats("a", 300, func(int64) float32 { return 2 })}, {Buffer: floats("b", 300, func(int64) float32 { return 3 })}, {Scalar: 300}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.DivergentBranches != 1 || c.GlobalLoadRequests != 4 || c.GlobalLoadSectors != 12 || c.GlobalStoreSectors != 6 || c.FP32Flops != 44 {
		t.Errorf("the tail block: %+v", c)
	}
}

// The stencil computes what it should: each point of block (3, 5) is the
// mean of itself and its four neighbours, and its memory requests are
// the hand-counted ones.
func TestStencilComputes(t *testing.T) {
	k := kernel(t, "stencil_32_8.ptx", "stencil_kernel")
	const w, h = 32768, 16384
	out := floats("x_new", w*h, nil)
	x := func(i int64) float32 { return float32(i % 7) }
	in := floats("x_old", w*h, x)
	stored := map[int64]float32{}
	out.Stored = func(off int64, size int, v uint64) { stored[off/4] = math.Float32frombits(uint32(v)) }
	c, err := k.Emulate(Launch{Grid: [3]int{w / 32, h / 8}, Block: [3]int{32, 8}, BlockIdx: [3]int{3, 5}, Args: []Arg{{Buffer: out}, {Buffer: in}}})
	if err != nil {
		t.Fatal(err)
	}
	// 256 threads, all inside the domain: five loads and a store each,
	// the loads of a row contiguous but for the ±1 shifts (5 sectors for
	// the shifted ones: 128 bytes off a sector boundary).
	if c.GlobalLoadRequests != 8*5 || c.GlobalStoreRequests != 8 || c.DivergentBranches != 0 {
		t.Errorf("%+v", c)
	}
	if c.GlobalLoadSectors != 8*(4+5+5+4+4) {
		t.Errorf("load sectors %d, want %d", c.GlobalLoadSectors, 8*(4+5+5+4+4))
	}
	if len(stored) != 256 {
		t.Fatalf("%d points stored, want 256", len(stored))
	}
	for i, v := range stored {
		want := (x(i-1) + x(i) + x(i+1) + x(i+w) + x(i-w)) / 5
		if row, col := i/w, i%w; row < 5*8 || row >= 6*8 || col < 3*32 || col >= 4*32 || math.Abs(float64(v-want)) > 1e-6 {
			t.Fatalf("point %d (row %d, column %d) = %v, want %v", i, row, col, v, want)
		}
	}
}

// Shared-memory bank conflicts of gtune's own probe kernel (ITERS 4):
// with STRIDE 1 every load is one wavefront, with STRIDE 32 every load
// puts the 32 lanes on one bank: 32 wavefronts. The initial stores (4
// per thread, consecutive) are conflict-free in both.
func TestSharedBankConflicts(t *testing.T) {
	for _, c := range []struct {
		file string
		ways int64
	}{{"probe_shared_stride1.ptx", 1}, {"probe_shared_stride32.ptx", 32}} {
		k := kernel(t, c.file, "probe_shared")
		got, err := k.Emulate(Launch{Grid: [3]int{132 * 8}, Block: [3]int{256}, Args: []Arg{{Buffer: floats("out", 132*8*256, nil)}}})
		if err != nil {
			t.Fatal(err)
		}
		loads := int64(8 * 4 * 16)
		if got.SharedRequests != loads+32 || got.SharedWavefronts != c.ways*loads+32 || got.WarpInstructions[LoadShared] != loads {
			t.Errorf("%s: requests %d, wavefronts %d, loads %d; want %d, %d, %d", c.file, got.SharedRequests, got.SharedWavefronts,
				got.WarpInstructions[LoadShared], loads+32, c.ways*loads+32, loads)
		}
	}
}

// matmul (16×16 threads, 2×2 tiles, WIDTH 4096) runs whole: its FP32
// work is the 2·WIDTH FLOP of each of the 4 outputs of each thread, and
// the shared tiles it reads are conflict-free. One block emulates in
// well under a second.
func TestMatmulRuns(t *testing.T) {
	k := kernel(t, "matmul_16_16_2_2.ptx", "matmul_kernel")
	const n = 4096
	t0 := time.Now()
	c, err := k.Emulate(Launch{Grid: [3]int{n / 32, n / 32}, Block: [3]int{16, 16},
		Args: []Arg{{Buffer: floats("C", n*n, nil)}, {Buffer: floats("A", n*n, func(i int64) float32 { return 1 })}, {Buffer: floats("B", n*n, func(i int64) float32 { return 2 })}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("matmul block: %v, %+v", time.Since(t0), c)
	if c.FP32Flops != 256*4*2*n {
		t.Errorf("FP32 FLOP %d, want %d", c.FP32Flops, 256*4*2*n)
	}
	if c.SharedRequests == 0 || c.SharedWavefronts > 2*c.SharedRequests {
		t.Errorf("shared requests %d, wavefronts %d", c.SharedRequests, c.SharedWavefronts)
	}
}

// An instruction the emulator does not know is an error naming it and
// its line; so is a load outside the arguments.
func TestUnsupportedAndOutOfBounds(t *testing.T) {
	ks, err := Parse(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tld.param.u64 %rd1, [k_param_0];\n\tvote.sync.all.pred %p1, %p2, -1;\n\tret;\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ks[0].Emulate(Launch{Block: [3]int{32}, Args: []Arg{{Buffer: floats("x", 1, nil)}}})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "ptx line 9") || !strings.Contains(err.Error(), "vote.sync") {
		t.Errorf("unsupported: %v", err)
	}
	k := kernel(t, "vector_add_256_1.ptx", "vector_add")
	_, err = k.Emulate(Launch{Grid: [3]int{4}, Block: [3]int{256}, BlockIdx: [3]int{3}, Args: []Arg{{Buffer: floats("c", 8, nil)}, {Buffer: floats("a", 8, nil)}, {Buffer: floats("b", 8, nil)}, {Scalar: 1 << 20}}})
	if err == nil || !strings.Contains(err.Error(), "outside every argument's buffer") {
		t.Errorf("out of bounds: %v", err)
	}
}

// Work scales the vector_add block's counts to the grid: one FP32 add per
// element, 12 bytes of sectors per element, no shared memory.
func TestWorkOfTheGrid(t *testing.T) {
	k := kernel(t, "vector_add_256_1.ptx", "vector_add")
	const n = 262144
	c, err := k.Emulate(Launch{Grid: [3]int{n / 256}, Block: [3]int{256},
		Args: []Arg{{Buffer: floats("c", n, nil)}, {Buffer: floats("a", n, nil)}, {Buffer: floats("b", n, nil)}, {Scalar: n}}})
	if err != nil {
		t.Fatal(err)
	}
	w := c.Work(n / 256)
	if w.Flops != n || w.Bytes != 12*n || w.SharedBytes != 0 || w.FP64Flops != 0 || w.SFUOps != 0 || w.IntOps != float64(c.ThreadInstructions[Int])*n/256 {
		t.Errorf("%+v", w)
	}
}

// ArgsOf lays out a kernel's arguments: buffer sizes by type and
// components, constant and random fills, scalars' bits in their type.
func TestArgsOf(t *testing.T) {
	args, err := ArgsOf(backend.Kernel{Args: []backend.Arg{
		{Name: "a", Type: "float4", Kind: backend.ArgVector, Count: 10, Fill: backend.Fill{Type: "Constant", Value: 2}},
		{Name: "r", Type: "double", Kind: backend.ArgVector, Count: 5, Fill: backend.Fill{Type: "Random", Value: 3, Seed: 1}},
		{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: -7},
		{Name: "x", Type: "float", Kind: backend.ArgScalar, Scalar: 0.5},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if a := args[0].Buffer; a.Bytes != 160 || a.ElemBytes != 4 || math.Float32frombits(uint32(a.Fill(39))) != 2 {
		t.Errorf("float4 buffer %+v", a)
	}
	r := args[1].Buffer
	for i := range int64(5) {
		if v := math.Float64frombits(r.Fill(i)); r.Bytes != 40 || v < 0 || v >= 3 || v != math.Float64frombits(r.Fill(i)) {
			t.Errorf("random element %d = %v", i, v)
		}
	}
	if args[2].Scalar != uint64(uint32(0xfffffff9)) || math.Float32frombits(uint32(args[3].Scalar)) != 0.5 {
		t.Errorf("scalars %#x %#x", args[2].Scalar, args[3].Scalar)
	}
	if _, err := ArgsOf(backend.Kernel{Args: []backend.Arg{{Name: "h", Type: "bfloat16", Kind: backend.ArgVector, Count: 1}}}); err == nil {
		t.Error("bfloat16 laid out")
	}
}

// __constant__ memory: the module's .const variable is filled from the
// argument buffer of its name, and loads of it move no global sectors.
func TestConstantMemory(t *testing.T) {
	ks, err := Parse(`.version 9.0
.target sm_80
.address_size 64
.const .align 4 .b8 d_filter[16];
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
{
	.reg .f32 %f<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.const.f32 %f1, [d_filter+8];
	st.global.f32 [%rd2], %f1;
	ret;
}
`)
	if err != nil {
		t.Fatal(err)
	}
	var got float32
	out := floats("out", 1, nil)
	out.Stored = func(off int64, size int, v uint64) { got = math.Float32frombits(uint32(v)) }
	c, err := ks[0].Emulate(Launch{Block: [3]int{1}, Args: []Arg{{Buffer: out}, {Buffer: floats("d_filter", 4, func(i int64) float32 { return float32(10 + i) })}}})
	if err != nil {
		t.Fatal(err)
	}
	if got != 12 || c.WarpInstructions[LoadConst] != 1 || c.GlobalLoadSectors != 0 || c.GlobalStoreSectors != 1 {
		t.Errorf("stored %v, %+v", got, c)
	}
}

// mul.hi gives the high word of the full product, signed or not.
func TestMulHi(t *testing.T) {
	ks, err := Parse(`.version 9.0
.target sm_80
.address_size 64
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mul.hi.s64 %rd3, -3, 6148914691236517206;
	mul.hi.u64 %rd4, -3, 6148914691236517206;
	st.global.u64 [%rd2], %rd3;
	st.global.u64 [%rd2+8], %rd4;
	ret;
}
`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]uint64{}
	out := &Buffer{Name: "out", Bytes: 16, ElemBytes: 8, Stored: func(off int64, _ int, v uint64) { got[off] = v }}
	if _, err := ks[0].Emulate(Launch{Block: [3]int{1}, Args: []Arg{{Buffer: out}}}); err != nil {
		t.Fatal(err)
	}
	// -3 · (2^64+2)/3: signed, -2^64 - 2, high word -2; unsigned,
	// (2^64-3)·(2^64+2)/3 = (2^128 - 2^64 - 6)/3, high word
	// ⌊(2^64-1)/3 - 2/2^64⌋ = (2^64-1)/3 - 1.
	if int64(got[0]) != -2 || got[8] != 6148914691236517204 {
		t.Errorf("signed %d, unsigned %d", int64(got[0]), got[8])
	}
}

// The stencil's footprint, hand-counted: a block of 32×8 at (3,5) reads
// sectors 11..16 of each of its 8 rows (its ±1 shifts reach one sector
// either side) and 12..15 of the rows above and below: 56 distinct
// sectors of the 176 it requests; the next block in x (columns 128..159)
// shares one sector of each of its rows' neighbours, so the two together
// read 96 distinct sectors, not 112. The stores have no reuse. A budget
// of one instruction still runs a second block; a sample never runs past
// the grid.
func TestStencilFootprint(t *testing.T) {
	k := kernel(t, "stencil_32_8.ptx", "stencil_kernel")
	const w, h = 32768, 16384
	launch := func() Launch {
		return Launch{Grid: [3]int{w / 32, h / 8}, Block: [3]int{32, 8}, BlockIdx: [3]int{3, 5},
			Args: []Arg{{Buffer: floats("x_new", w*h, nil)}, {Buffer: floats("x_old", w*h, func(i int64) float32 { return 1 })}}}
	}
	one, err := k.Emulate(launch())
	if err != nil {
		t.Fatal(err)
	}
	if one.Blocks != 1 || one.LoadFootprint != 56 || one.SampleLoadFootprint != 56 || one.StoreFootprint != 32 || one.GlobalLoadSectors != 176 {
		t.Errorf("one block: %d blocks, footprint %d (sample %d), stores %d, requested %d; want 1, 56, 56, 32, 176",
			one.Blocks, one.LoadFootprint, one.SampleLoadFootprint, one.StoreFootprint, one.GlobalLoadSectors)
	}
	two, err := k.EmulateSample(launch(), 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if two.Blocks != 2 || two.LoadFootprint != 112 || two.SampleLoadFootprint != 96 || two.StoreFootprint != 64 || two.SampleStoreFootprint != 64 || two.GlobalLoadSectors != 352 {
		t.Errorf("two blocks: %d blocks, footprint %d (sample %d), stores %d (sample %d), requested %d; want 2, 112, 96, 64, 64, 352",
			two.Blocks, two.LoadFootprint, two.SampleLoadFootprint, two.StoreFootprint, two.SampleStoreFootprint, two.GlobalLoadSectors)
	}
	// Per block of the grid: DRAM the sample's 160 sectors over 2 blocks,
	// stores 64 of them, L2 the blocks' own 176.
	blocks := (w / 32) * (h / 8)
	wk := two.Work(blocks)
	if n := float64(blocks) / 2; wk.Bytes != n*32*160 || wk.WriteBytes != n*32*64 || wk.L2Bytes != n*32*176 || wk.LoadWidth != 4 {
		t.Errorf("work %+v", wk)
	}
	// Blocks sharing nothing (vector_add's): two, then no more.
	va := kernel(t, "vector_add_256_1.ptx", "vector_add")
	const n = 1 << 20
	vc, err := va.EmulateSample(Launch{Grid: [3]int{n / 256}, Block: [3]int{256},
		Args: []Arg{{Buffer: floats("c", n, nil)}, {Buffer: floats("a", n, nil)}, {Buffer: floats("b", n, nil)}, {Scalar: n}}}, 8, 0)
	if err != nil || vc.Blocks != 2 || vc.SampleLoadFootprint != vc.LoadFootprint {
		t.Errorf("vector_add: %d blocks, sample footprint %d of %d, %v; want 2 blocks sharing nothing", vc.Blocks, vc.SampleLoadFootprint, vc.LoadFootprint, err)
	}
	l := launch()
	l.BlockIdx = [3]int{w/32 - 1, h/8 - 1, 0}
	last, err := k.EmulateSample(l, 8, 0)
	if err != nil || last.Blocks != 1 {
		t.Errorf("the grid's last block: %d blocks, %v", last.Blocks, err)
	}
}

// bankWays on requests in any order: repeats of a word are one
// wavefront, distinct words of one bank are one each (a bank with more
// than the kept four falls back to sorting).
func TestBankWaysUnsorted(t *testing.T) {
	for _, c := range []struct {
		words []uint64
		want  int
	}{
		{[]uint64{33, 1, 1, 65, 2}, 3},
		{[]uint64{16, 17, 0, 1, 16, 17, 0, 1}, 1},
		{[]uint64{128, 0, 32, 64, 96, 0, 160}, 6},
		{[]uint64{3, 2, 1}, 1},
	} {
		if got := bankWays(slices.Clone(c.words)); got != c.want {
			t.Errorf("bankWays(%v) = %d, want %d", c.words, got, c.want)
		}
	}
}

// blackscholes_iter (examples/concurrent/blackscholes, NVRTC for sm_90)
// prices options straight from global memory (shared_kib 0) or staged
// through its extern shared array (shared_kib 24: the launch's 24 KiB
// of dynamic shared memory, Launch.DynamicSharedBytes); both write
// bit-identical prices, so block 0's stores of the options both price
// (the first 128 at a grid of 2048 blocks) must agree.
func TestDynamicSharedMemory(t *testing.T) {
	const n, grid = 4194304, 2048
	prices := func(file string, dynamic int) (map[int64]uint64, *Counts) {
		k := kernel(t, file, "blackscholes_iter")
		out := map[int64]uint64{}
		in := func(name string, lo, hi float32) *Buffer {
			return floats(name, n, func(i int64) float32 { return lo + (hi-lo)*float32(i%1000)/1000 })
		}
		call := floats("call", n, nil)
		call.Stored = func(off int64, _ int, v uint64) { out[off] = v }
		c, err := k.Emulate(Launch{Grid: [3]int{grid, 1, 1}, Block: [3]int{128, 1, 1}, DynamicSharedBytes: dynamic,
			Args: []Arg{{Buffer: in("s", 5, 30)}, {Buffer: in("x", 1, 100)}, {Buffer: in("t", 0.25, 10)}, {Buffer: call}, {Buffer: floats("put", n, nil)}}})
		if err != nil {
			t.Fatal(err)
		}
		return out, c
	}
	direct, dc := prices("blackscholes_128_1_0.ptx", 0)
	staged, sc := prices("blackscholes_128_1_24.ptx", 24*1024)
	if dc.SharedRequests != 0 || sc.SharedRequests == 0 || len(direct) != 16*128 || len(staged) != 2048 {
		t.Fatalf("direct: %d prices, %d shared requests; staged: %d prices, %d shared requests", len(direct), dc.SharedRequests, len(staged), sc.SharedRequests)
	}
	for i := int64(0); i < 128; i++ {
		if direct[4*i] != staged[4*i] || direct[4*i] == 0 {
			t.Fatalf("option %d: %v direct, %v staged", i, math.Float32frombits(uint32(direct[4*i])), math.Float32frombits(uint32(staged[4*i])))
		}
	}
	// Without the launch's dynamic shared memory the staged kernel
	// writes outside the block's shared memory.
	if _, err := kernel(t, "blackscholes_128_1_24.ptx", "blackscholes_iter").Emulate(Launch{Grid: [3]int{grid, 1, 1}, Block: [3]int{128, 1, 1},
		Args: []Arg{{Buffer: floats("s", n, nil)}, {Buffer: floats("x", n, nil)}, {Buffer: floats("t", n, nil)}, {Buffer: floats("call", n, nil)}, {Buffer: floats("put", n, nil)}}}); err == nil || !strings.Contains(err.Error(), "outside the block's") {
		t.Errorf("no dynamic shared memory: %v", err)
	}
}

// A thread's .local array (__local_depot, what the compiler spills an
// indexed array to): each thread writes its id into element tid % 4 of
// its own frame and reads it back; frames are the thread's own.
func TestLocalMemory(t *testing.T) {
	ptx := entryOfOnePointer("loc", `
	.local .align 16 .b8 __local_depot0[16];
	.reg .b32 %r<6>;
	.reg .b64 %rd<8>;
	.reg .b64 %SPL;
	mov.u64 %SPL, __local_depot0;
	ld.param.u64 %rd1, [loc_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 3;
	mul.wide.u32 %rd3, %r2, 4;
	add.u64 %rd4, %SPL, %rd3;
	st.local.u32 [%rd4], %r1;
	ld.local.u32 %r3, [%rd4];
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r3;
	ret;
`)
	ks, err := Parse(ptx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]uint64{}
	buf := &Buffer{Name: "o", Bytes: 4 * 64, ElemBytes: 4, Stored: func(off int64, _ int, v uint64) { out[off] = v }}
	c, err := ks[0].Emulate(Launch{Grid: [3]int{1, 1, 1}, Block: [3]int{64, 1, 1}, Args: []Arg{{Buffer: buf}}})
	if err != nil {
		t.Fatal(err)
	}
	if ks[0].LocalBytes != 16 || c.LocalRequests != 4 || c.LocalBytes != 2*64*4 || len(out) != 64 {
		t.Fatalf("local bytes %d, requests %d, %d bytes moved, %d stores", ks[0].LocalBytes, c.LocalRequests, c.LocalBytes, len(out))
	}
	for i := int64(0); i < 64; i++ {
		if out[4*i] != uint64(i) {
			t.Errorf("thread %d read back %d", i, out[4*i])
		}
	}
}

// A kernel whose first row of blocks returns at once (a stencil's
// border): JobWork's sample from the grid's start moves no global
// memory, so it is taken from the centre, where every block stores its
// 32 floats (4 sectors).
func TestJobWorkSkipsABorder(t *testing.T) {
	ptx := entryOfOnePointer("border", `
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [border_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %ctaid.y;
	setp.eq.s32 %p1, %r1, 0;
	@%p1 bra $L__END;
	mov.u32 %r2, %nctaid.x;
	mov.u32 %r3, %ctaid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	mov.u32 %r5, %tid.x;
	shl.b32 %r6, %r4, 5;
	add.s32 %r7, %r6, %r5;
	mul.wide.u32 %rd3, %r7, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r7;
$L__END:
	ret;
`)
	k := backend.Kernel{KernelName: "border", Args: []backend.Arg{{Name: "out", Type: "float", Kind: backend.ArgVector, Count: 16 * 16 * 32}}}
	w, c, err := JobWork([]byte(ptx), k, &backend.Job{Grid: [3]int{16, 16, 1}, Block: [3]int{32, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if c.GlobalStoreRequests != int64(c.Blocks) || c.Blocks < 2 || w.Bytes != 256*128 || w.WriteBytes != 256*128 {
		t.Errorf("%d blocks sampled, %d store requests; work %+v; want 128 bytes stored by each of 256 blocks", c.Blocks, c.GlobalStoreRequests, w)
	}
}

// entryOfOnePointer is a PTX module for sm_90 of one entry, name, taking
// one pointer (name_param_0), its body the instructions given.
func entryOfOnePointer(name, body string) string {
	return ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry " + name + "(\n\t.param .u64 " + name + "_param_0\n)\n{" + body + "}\n"
}
