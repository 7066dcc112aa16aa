package schedule

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/device"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

// k20 is the paper's K20 (section 5): N_SM 13, 64K registers, 48 KiB,
// 64 warps and 16 blocks per SM, IPC_sp 6, IPC_dp 2, IPC_mem 1, B_max_mem
// 302 B/cycle; the paper gives no allocation units.
var k20 = Device{Name: "K20", SMs: 13, RegistersPerSM: 65536, SharedMemoryPerSM: 49152, WarpsPerSM: 64, BlocksPerSM: 16, WarpSize: 32,
	IPCsp: 6, IPCdp: 2, IPCmem: 1, MemoryBytesPerCycle: 302}

// small is a hand-made GPU of 2 SMs with K20 limits, allocation units of
// 256 registers per warp and 256 B per block, and B_max_mem 32 B/cycle: a
// kernel of memory instructions only (IPC_max 1) moving 16 B each has
// U_gpu_b = 32/(1·16·1·2) = 1 exactly.
var small = Device{Name: "small", SMs: 2, RegistersPerSM: 65536, SharedMemoryPerSM: 49152, WarpsPerSM: 64, BlocksPerSM: 16, WarpSize: 32,
	RegisterAllocUnit: 256, SharedMemoryAllocUnit: 256, IPCsp: 6, IPCdp: 2, IPCmem: 1, MemoryBytesPerCycle: 32}

func TestFootprints(t *testing.T) {
	ks := []Kernel{
		// 100 threads = 4 warps; 20·32 = 640 registers per warp → 768,
		// 3072 per block; 1000 B → 1024. Alone: min(16 blocks, 64/4 = 16
		// by warps, 65536/3072 = 21 by registers, 49152/1024 = 48 by
		// shared memory) = 16. ⌈5/2⌉ = 3 blocks per SM: 12 warps, 9216
		// registers, 3072 B.
		{Name: "k0", Blocks: 5, ThreadsPerBlock: 100, RegistersPerThread: 20, SharedMemoryPerBlock: 1000, Instructions: 1, Rsp: 1},
		// 8 warps; 40·32 = 1280 registers per warp (a multiple of 256),
		// 10240 per block; 10000 B → 10240. Alone: min(16, 8, 6, 4) = 4,
		// shared memory binds; ⌈40/2⌉ = 20 > 4, so 4 per SM: 32 warps,
		// 40960 registers, 40960 B.
		{Name: "k1", Blocks: 40, ThreadsPerBlock: 256, RegistersPerThread: 40, SharedMemoryPerBlock: 10000, Instructions: 1, Rmem: 1, MemBytesPerInst: 4},
		// 2 warps; 33·32 = 1056 → 1280 registers per warp, 2560 per block;
		// no shared memory. The device would allow min(16, 32, 25) = 16;
		// the kernel's own limit is 3; ⌈64/2⌉ = 32 > 3: 3 per SM, 6 warps,
		// 7680 registers, 0 B.
		{Name: "k2", Blocks: 64, ThreadsPerBlock: 64, RegistersPerThread: 33, MaxBlocksPerSM: 3, Instructions: 1, Rsp: 2, Rdp: 1, Rmem: 1, MemBytesPerInst: 8},
	}
	ps, err := Profiles(small, ks)
	if err != nil {
		t.Fatal(err)
	}
	want := [][5]int{ // blocks per SM, max blocks, warps, registers, shared memory
		{3, 16, 12, 9216, 3072},
		{4, 4, 32, 40960, 40960},
		{3, 3, 6, 7680, 0},
	}
	for i, p := range ps {
		if got := [5]int{p.BlocksPerSM, p.MaxBlocksPerSM, p.Warps, p.Registers, p.SharedMemory}; got != want[i] {
			t.Errorf("%s: footprint %v, want %v", ks[i].Name, got, want[i])
		}
	}
	// k2's ratios 2:1:1 are normalised to 0.5, 0.25, 0.25.
	if k := ps[2].Kernel; k.Rsp != 0.5 || k.Rdp != 0.25 || k.Rmem != 0.25 {
		t.Errorf("k2's ratios %v %v %v, want 0.5 0.25 0.25", k.Rsp, k.Rdp, k.Rmem)
	}
	// k0 and k1 together: 44 warps, 50176 registers, 44032 B, 7 blocks:
	// within every limit. k1 with itself: 81920 B of shared memory do not.
	if !small.fits(ps[0].usage().plus(ps[1].usage())) || small.fits(ps[1].usage().plus(ps[1].usage())) {
		t.Error("fit within a round: k0+k1 should, k1+k1 should not")
	}

	for _, bad := range []struct {
		k    Kernel
		want string
	}{
		{Kernel{Name: "mixless", Blocks: 1, ThreadsPerBlock: 32, Instructions: 1}, "all zero"},
		{Kernel{Name: "empty", ThreadsPerBlock: 32, Instructions: 1, Rsp: 1}, "0 blocks"},
		{Kernel{Name: "huge", Blocks: 1, ThreadsPerBlock: 32, SharedMemoryPerBlock: 49153, Instructions: 1, Rsp: 1}, "does not fit"},
		{Kernel{Name: "idle", Blocks: 1, ThreadsPerBlock: 32, Rsp: 1}, "N_inst"},
	} {
		_, err := Profiles(small, []Kernel{bad.k})
		if err == nil || !strings.Contains(err.Error(), bad.k.Name) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one naming it and %q", bad.k.Name, err, bad.want)
		}
	}
}

// mem is memory-bound on the K20: R_sp 0.5, R_dp 0.1, R_mem 0.4, 64 B per
// memory instruction, 10^6 instructions; 26 blocks of 128 threads (2 per
// SM), 32 registers, 12 KiB. comp is compute-bound: R_sp 0.9, R_mem 0.1,
// 16 B, 3·10^6 instructions; 39 blocks of 256 threads (3 per SM), 24
// registers, no shared memory.
var (
	mem  = Kernel{Name: "mem", Blocks: 26, ThreadsPerBlock: 128, RegistersPerThread: 32, SharedMemoryPerBlock: 12288, Instructions: 1e6, Rsp: 0.5, Rdp: 0.1, Rmem: 0.4, MemBytesPerInst: 64}
	comp = Kernel{Name: "comp", Blocks: 39, ThreadsPerBlock: 256, RegistersPerThread: 24, Instructions: 3e6, Rsp: 0.9, Rmem: 0.1, MemBytesPerInst: 16}
)

// Equation 1: mem 1/(0.5/6 + 0.1/2 + 0.4/1) = 1/(8/15) = 1.875; comp
// 1/(0.9/6 + 0.1/1) = 1/0.25 = 4. Equation 5: mem 302/(0.4·64·1.875·13)
// = 302/624 = 0.4839743589…; comp 302/(0.1·16·4·13) = 302/83.2 =
// 3.6298076923…. Equation 6: (10^6 + 3·10^6)/(8/15·10^6 + 0.25·3·10^6) =
// 4/(77/60) = 240/77. Equation 7: 302·4·10^6/(240/77 · 13 · (0.4·10^6·64 +
// 0.1·3·10^6·16 = 30.4·10^6)) = 11627/11856 = 0.98068488….
func TestEquations(t *testing.T) {
	near(t, "IPC_max(mem)", IPCMax(k20, mem), 1.875)
	near(t, "IPC_max(comp)", IPCMax(k20, comp), 4)
	near(t, "U(mem)", Balance(k20, mem), 302.0/624)
	near(t, "U(comp)", Balance(k20, comp), 302/83.2)
	near(t, "IPC_max_r", RoundIPCMax(k20, []Kernel{mem, comp}), 240.0/77)
	near(t, "U_r", RoundBalance(k20, []Kernel{mem, comp}), 11627.0/11856)
	// Equation 7 of one kernel is its equation 5.
	near(t, "U_r(mem)", RoundBalance(k20, []Kernel{mem}), 302.0/624)
	if u := Balance(k20, Kernel{Instructions: 1, Rsp: 1}); !math.IsInf(u, 1) {
		t.Errorf("no memory instruction: U = %g, want +Inf", u)
	}
}

// mem and comp on the K20, per SM: mem 2 blocks, 8 warps, 2·4·1024 = 8192
// registers, 24576 B; comp 3 blocks, 24 warps, 3·8·768 = 18432
// registers, 0 B. Together 5 blocks, 32 warps, 26624 registers, 24576 B:
// they fit. Terms: shared (49152 − 24576)/49152 = 0.5; registers (65536 −
// 26624)/65536 = 0.59375; warps (64 − 32)/64 = 0.5; blocks (16 − 5)/16 =
// 0.6875; 2.28125 in all. U(mem) = 0.484 ≤ 1 (line 23), and U_c =
// 11627/11856 < 1 (equation 7, TestEquations): + 1 − 1/(U_c·4) =
// 1 − 11856/46508 = 0.74507611…. Score 3.02632611….
func TestScoreWorkedPair(t *testing.T) {
	ps, err := Profiles(k20, []Kernel{mem, comp})
	if err != nil {
		t.Fatal(err)
	}
	if got := [2][4]int{{ps[0].BlocksPerSM, ps[0].Warps, ps[0].Registers, ps[0].SharedMemory}, {ps[1].BlocksPerSM, ps[1].Warps, ps[1].Registers, ps[1].SharedMemory}}; got != [2][4]int{{2, 8, 8192, 24576}, {3, 24, 18432, 0}} {
		t.Errorf("footprints %v", got)
	}
	want := 0.5 + 0.59375 + 0.5 + 0.6875 + (1 - 11856.0/46508)
	near(t, "score(mem, comp)", Score(k20, ps[:1], ps[1:], Options{}), want)
	near(t, "score(comp, mem)", Score(k20, ps[1:], ps[:1], Options{}), want)
	// A deviation limit of 0.5: 1 − 1/(U_c·0.5) < 0, so the balance adds 0.
	near(t, "score, devlim 0.5", Score(k20, ps[:1], ps[1:], Options{DeviationLimit: 0.5}), 2.28125)

	// Line 23 as printed is not symmetric. comp2 (R_sp 0.95, R_mem 0.05,
	// 16 B, 10^6 instructions: IPC_max 4.8, U = 302/(0.05·16·4.8·13) =
	// 6.05) and comp (3.63) are both compute-bound: score(comp, comp2)
	// passes "U_A ≤ U_B", score(comp2, comp) fails all three clauses. U_c
	// = 302·(0.25·3·10^6 + 10^6/4.8)/(13·(4.8 + 0.8)·10^6) = 3.9755… < 4:
	// the term is 1 − U_c/4 = 0.0061…. OpposingOnly scores neither.
	comp2 := Kernel{Name: "comp2", Blocks: 13, ThreadsPerBlock: 64, RegistersPerThread: 16, Instructions: 1e6, Rsp: 0.95, Rmem: 0.05, MemBytesPerInst: 16}
	cs, err := Profiles(k20, []Kernel{comp, comp2})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "U(comp2)", cs[1].Balance, 302/49.92)
	uc := 302 * (0.25*3e6 + 1e6/4.8) / (13 * 5.6e6)
	ab, ba := Score(k20, cs[:1], cs[1:], Options{}), Score(k20, cs[1:], cs[:1], Options{})
	near(t, "score(comp, comp2) − score(comp2, comp)", ab-ba, 1-uc/4)
	near(t, "opposing only", Score(k20, cs[:1], cs[1:], Options{OpposingOnly: true}), ba)
}

// Four kernels on small, each of 2 blocks (1 per SM) of memory
// instructions only at U_gpu_b = 1, so that every fitting pair and round
// gets the balance term's full 1 (line 25): C1 256 threads (8 warps, 8192
// registers), no shared memory; S1 128 threads (4 warps, 4096
// registers), 40 KiB; C2 as S1 without shared memory; S2 as S1 with
// 36 KiB. S1 and S2 (76 KiB) cannot share a round. Pair scores, shared +
// registers + warps + blocks + 1:
//
//	C1+C2: 1      + 0.8125 + 0.8125 + 0.875 + 1 = 4.5
//	S2+C2: 0.25   + 0.875  + 0.875  + 0.875 + 1 = 3.875
//	S2+C1: 0.25   + 0.8125 + 0.8125 + 0.875 + 1 = 3.75
//	S1+C2: 1/6    + 0.875  + 0.875  + 0.875 + 1 = 3.7917
//	S1+C1: 1/6    + 0.8125 + 0.8125 + 0.875 + 1 = 3.6667
//
// Round 1 opens with C1, C2 (12 warps, 12288 registers, 2 blocks); against
// it S2 scores 0.25 + 0.75 + 0.75 + 0.8125 + 1 = 3.5625 and S1 1/6 + 0.75
// + 0.75 + 0.8125 + 1 = 3.479: S2 joins and leads the round by shared
// memory; S1 no longer fits and is round 2 alone.
func TestSymbioticWorkedOrder(t *testing.T) {
	k := func(name string, threads, smem int) Kernel {
		return Kernel{Name: name, Blocks: 2, ThreadsPerBlock: threads, RegistersPerThread: 32, SharedMemoryPerBlock: smem,
			Instructions: 100, Rmem: 1, MemBytesPerInst: 16}
	}
	ks := []Kernel{k("C1", 256, 0), k("S1", 128, 40960), k("C2", 128, 0), k("S2", 128, 36864)}
	s, err := Symbiotic(small, ks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Order, s.Rounds); got != "[3 0 2 1] [[3 0 2] [1]]" {
		t.Errorf("order, rounds %s; want [3 0 2 1] [[3 0 2] [1]]", got)
	}
	for _, c := range []struct {
		i, j int
		want float64
	}{{0, 2, 4.5}, {3, 2, 3.875}, {3, 0, 3.75}, {1, 2, 3.75 + 1.0/24}, {1, 0, 3 + 2.0/3}, {1, 3, 0}, {2, 2, 0}} {
		near(t, fmt.Sprintf("score(%s, %s)", ks[c.i].Name, ks[c.j].Name), s.Scores[c.i][c.j], c.want)
	}
	members := []Profile{s.Profiles[0], s.Profiles[2]}
	near(t, "score(C1+C2, S2)", Score(small, members, s.Profiles[3:4], Options{}), 3.5625)
	near(t, "score(C1+C2, S1)", Score(small, members, s.Profiles[1:2], Options{}), 3.5625-1.0/12)

	// A kernel alone opens its round; no pair fits: the most shared memory
	// first.
	s, err = Symbiotic(small, []Kernel{k("S2", 128, 36864), k("S1", 128, 40960)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Rounds); got != "[[1] [0]]" {
		t.Errorf("rounds %s, want [[1] [0]]", got)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("schedule to JSON: %v", err)
	}
}

// Two kernels on the two SMs of small: A, one block of 40 KiB; B, four
// of 8 KiB (128 threads, 32 registers each). A then B: A on SM 0, B's
// blocks on SM 1, SM 0 (40 + 8 = 48 KiB), SM 1, SM 1 (SM 0 is full): one
// round. B then A: B's blocks two per SM (16 KiB); A's 40 KiB fit on
// neither: round 1 is B, round 2 A. With B limited to 1 block per SM (its
// own occupancy), A then B: A on SM 0, B on SM 1 and SM 0; B's third
// block finds each SM at its limit: round 1 A×1 B×2, round 2 B×2.
func TestBlockRounds(t *testing.T) {
	ks := []Kernel{
		{Name: "A", Blocks: 1, ThreadsPerBlock: 128, RegistersPerThread: 32, SharedMemoryPerBlock: 40960},
		{Name: "B", Blocks: 4, ThreadsPerBlock: 128, RegistersPerThread: 32, SharedMemoryPerBlock: 8192},
	}
	for _, c := range []struct {
		order []int
		want  string
	}{
		{[]int{0, 1}, "[[{0 1} {1 4}]]"},
		{[]int{1, 0}, "[[{1 4}] [{0 1}]]"},
	} {
		if got := fmt.Sprint(BlockRounds(small, ks, c.order)); got != c.want {
			t.Errorf("order %v: rounds %s, want %s", c.order, got, c.want)
		}
	}
	ks[1].MaxBlocksPerSM = 1
	if got := fmt.Sprint(BlockRounds(small, ks, []int{0, 1})); got != "[[{0 1} {1 2}] [{1 2}]]" {
		t.Errorf("B at 1 block per SM: rounds %s", got)
	}
}

// The H100 SXM entry: 66900 GFLOPS FP32 at 1980 MHz over 132 SMs of 32
// threads per warp, 2 flops per FMA: 66900·10^9/(2·132·1980·10^6·32) =
// 3.99951…, not 4 exactly, because the datasheet's 66.9 TFLOPS is
// 132·128·2·1.98 = 66.908 rounded down; FP64 33500/16727.04 = 2.00275…,
// 33.454 rounded up to 33.5. B_max_mem = 3352·10^9/(1980·10^6) = 1692.93
// B/cycle. Allocation units 256 registers and 128 B, 1 KiB reserved per
// block.
func TestDeviceFromH100(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DeviceFrom(d)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "IPC_sp", s.IPCsp, 66900.0/16727.04)
	near(t, "IPC_dp", s.IPCdp, 33500.0/16727.04)
	if math.Abs(s.IPCsp-4) > 1e-3 || math.Abs(s.IPCdp-2) > 3e-3 || s.IPCmem != 1 {
		t.Errorf("IPC_sp %g, IPC_dp %g, IPC_mem %g: want about 4, 2, 1", s.IPCsp, s.IPCdp, s.IPCmem)
	}
	near(t, "B_max_mem", s.MemoryBytesPerCycle, 3352e9/1980e6)
	if got := [9]int{s.SMs, s.RegistersPerSM, s.SharedMemoryPerSM, s.WarpsPerSM, s.BlocksPerSM, s.WarpSize, s.RegisterAllocUnit, s.SharedMemoryAllocUnit, s.ReservedSharedMemoryPerBlock}; got != [9]int{132, 65536, 233472, 64, 32, 32, 256, 128, 1024} {
		t.Errorf("H100 limits %v", got)
	}
	d.PeakFP64GFLOPS = 0
	if _, err := DeviceFrom(d); err == nil || !strings.Contains(err.Error(), "peak_fp64_gflops") {
		t.Errorf("no FP64 peak: error %v", err)
	}
	if _, err := DeviceFrom(nil); err == nil {
		t.Error("nil description: no error")
	}
}
