package occupancy

import (
	"bufio"
	"compress/gzip"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gtune/gtune/device"
)

func dev(t *testing.T, id string) *device.Description {
	t.Helper()
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Hand-checked cases (derivations in the comments).
func TestHandChecked(t *testing.T) {
	h100, k20c := dev(t, "h100_sxm"), dev(t, "k20c")
	cases := []struct {
		name     string
		d        *device.Description
		in       Input
		blocks   int
		warps    int
		occ      float64
		limiters []Limiter
	}{
		// 8 warps/block: 64/8 = 8 by warps; 32×32 = 1024 regs/warp,
		// 16384/1024 = 16 warps per sub-partition × 4 = 64 warps → 8 blocks.
		{"h100 256x32", h100, Input{BlockSize: 256, RegistersPerThread: 32}, 8, 64, 1, []Limiter{LimitWarps, LimitRegisters}},
		// 64×32 = 2048 regs/warp: 8 warps per sub-partition × 4 = 32 warps = 1 block of 32 warps.
		{"h100 1024x64", h100, Input{BlockSize: 1024, RegistersPerThread: 64}, 1, 32, 0.5, []Limiter{LimitRegisters}},
		// 40×32 = 1280 regs/warp: ⌊16384/1280⌋ = 12 × 4 = 48 warps → 6 blocks of 8 warps.
		{"h100 256x40", h100, Input{BlockSize: 256, RegistersPerThread: 40}, 6, 48, 0.75, []Limiter{LimitRegisters}},
		// 72×32 = 2304 regs/warp × 32 warps = 73728 > 65536 per block: cannot launch.
		{"h100 1024x72", h100, Input{BlockSize: 1024, RegistersPerThread: 72}, 0, 0, 0, []Limiter{LimitRegisters}},
		// 80×32 = 2560 regs/warp; 25 warps need 64000 ≤ 65536, but the hardware
		// check rounds to 28 warps = 71680 > 65536: cannot launch.
		{"h100 800x80", h100, Input{BlockSize: 800, RegistersPerThread: 80}, 0, 0, 0, []Limiter{LimitRegisters}},
		// 24 warps × 2560 = 61440 fits with or without rounding: 16384/2560 = 6 per
		// sub-partition × 4 = 24 warps → 1 block.
		{"h100 768x80", h100, Input{BlockSize: 768, RegistersPerThread: 80}, 1, 24, 0.375, []Limiter{LimitRegisters}},
		// 32 threads: 1 warp, 32 blocks/SM cap → 32 warps.
		{"h100 32", h100, Input{BlockSize: 32}, 32, 32, 0.5, []Limiter{LimitBlocks}},
		// 33 threads round up to 2 warps: 64/2 = 32 = block cap.
		{"h100 33", h100, Input{BlockSize: 33}, 32, 64, 1, []Limiter{LimitWarps, LimitBlocks}},
		// 100000 + 1024 reserved = 101024 → 101120 (128 B units); 233472/101120 = 2.
		{"h100 smem 100000", h100, Input{BlockSize: 128, RegistersPerThread: 32, SharedMemoryPerBlock: 100000}, 2, 8, 0.125, []Limiter{LimitSharedMemory}},
		// Carveout 57 KiB rounds up to 64 KiB; 16384 + 1024 = 17408 → 65536/17408 = 3.
		{"h100 carveout 57", h100, Input{BlockSize: 256, SharedMemoryPerBlock: 16384, CarveoutKiB: 57}, 3, 24, 0.375, []Limiter{LimitSharedMemory}},
		// Carveout 8 KiB is too small for 49152+1024 → raised to 64 KiB: 65536/50176 = 1.
		{"h100 carveout raised", h100, Input{BlockSize: 256, SharedMemoryPerBlock: 49152, CarveoutKiB: 8}, 1, 8, 0.125, []Limiter{LimitSharedMemory}},
		// 4 named barriers: 64 slots / 4 = 16 blocks; 2 warps per block.
		{"h100 barriers", h100, Input{BlockSize: 64, BlockBarriers: 4}, 16, 32, 0.5, []Limiter{LimitBarriers}},
		// K20c: 4 warps/block, 64/4 = 16 = block cap of CC 3.5.
		{"k20c 128", k20c, Input{BlockSize: 128}, 16, 64, 1, []Limiter{LimitWarps, LimitBlocks}},
		// 64 threads: 16 blocks (cap) × 2 warps = 32 warps.
		{"k20c 64", k20c, Input{BlockSize: 64, RegistersPerThread: 32}, 16, 32, 0.5, []Limiter{LimitBlocks}},
		// 12288 B (48 × 256 B units): 49152/12288 = 4 blocks × 4 warps.
		{"k20c smem 12288", k20c, Input{BlockSize: 128, RegistersPerThread: 32, SharedMemoryPerBlock: 12288}, 4, 16, 0.25, []Limiter{LimitSharedMemory}},
		// 1000 B → 1024 B; 48 blocks by shared memory, 16 by cap.
		{"k20c smem 1000", k20c, Input{BlockSize: 128, SharedMemoryPerBlock: 1000}, 16, 64, 1, []Limiter{LimitWarps, LimitBlocks}},
		// 64 regs: 2048/warp, 8 warps per sub-partition × 4 = 32 warps → 4 blocks of 8.
		{"k20c 256x64", k20c, Input{BlockSize: 256, RegistersPerThread: 64}, 4, 32, 0.5, []Limiter{LimitRegisters}},
		// Streamcluster-like 128 threads × 255 regs: 8160 → 8192/warp, 2 warps per
		// sub-partition × 4 = 8 warps → 2 blocks.
		{"k20c 128x255", k20c, Input{BlockSize: 128, RegistersPerThread: 255}, 2, 8, 0.125, []Limiter{LimitRegisters}},
	}
	for _, c := range cases {
		r, err := Compute(c.d, c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.ActiveBlocksPerSM != c.blocks || r.ActiveWarpsPerSM != c.warps || r.Occupancy != c.occ || !reflect.DeepEqual(r.Limiters, c.limiters) || r.Limiter != c.limiters[0] {
			t.Errorf("%s: got blocks %d warps %d occupancy %v limiters %v; want %d %d %v %v",
				c.name, r.ActiveBlocksPerSM, r.ActiveWarpsPerSM, r.Occupancy, r.Limiters, c.blocks, c.warps, c.occ, c.limiters)
		}
	}
}

func TestErrors(t *testing.T) {
	h100, k20c := dev(t, "h100_sxm"), dev(t, "k20c")
	cases := []struct {
		d    *device.Description
		in   Input
		want error
	}{
		{h100, Input{BlockSize: 0}, ErrBlockSize},
		{h100, Input{BlockSize: 1025}, ErrBlockSize},
		{h100, Input{BlockSize: -1}, ErrInvalidInput},
		{h100, Input{BlockSize: 32, RegistersPerThread: -1}, ErrInvalidInput},
		{h100, Input{BlockSize: 32, SharedMemoryPerBlock: -4}, ErrInvalidInput},
		{h100, Input{BlockSize: 32, RegistersPerThread: 256}, ErrRegisters},
		{h100, Input{BlockSize: 32, SharedMemoryPerBlock: 227*1024 + 1}, ErrSharedMemory},
		{k20c, Input{BlockSize: 32, SharedMemoryPerBlock: 49153}, ErrSharedMemory},
		{h100, Input{BlockSize: 32, CarveoutKiB: 229}, ErrCarveout},
		{nil, Input{BlockSize: 32}, ErrInvalidInput},
	}
	for _, c := range cases {
		_, err := Compute(c.d, c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("Compute(%+v) error %v, want %v", c.in, err, c.want)
		}
	}
	// The largest opt-in allocation is accepted: 227 KiB + 1 KiB reserve = 228 KiB, 1 block.
	r, err := Compute(h100, Input{BlockSize: 32, SharedMemoryPerBlock: 227 * 1024})
	if err != nil || r.ActiveBlocksPerSM != 1 {
		t.Errorf("227 KiB on H100: %+v, %v", r, err)
	}
}

// TestAgainstCUDA compares every case of testdata/cuda_occupancy_oracle.csv.gz,
// generated on an H100 by testdata/oracle.cu with CUDA 13.0's
// cuda_occupancy.h, with Compute on the same device descriptions.
func TestAgainstCUDA(t *testing.T) {
	f, err := os.Open("testdata/cuda_occupancy_oracle.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	devs := map[string]*device.Description{}
	bits := map[Limiter]uint64{LimitWarps: 1, LimitRegisters: 2, LimitSharedMemory: 4, LimitBlocks: 8, LimitBarriers: 16}
	sc := bufio.NewScanner(zr)
	n, zero := 0, 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "device,") {
			continue
		}
		fs := strings.Split(line, ",")
		atoi := func(i int) int {
			v, err := strconv.Atoi(fs[i])
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
		id, block, regs, smem, pct, cerr, blocks := fs[0], atoi(1), atoi(2), atoi(3), atoi(4), atoi(5), atoi(6)
		factors, _ := strconv.ParseUint(fs[7], 10, 32)
		if cerr != 0 {
			t.Fatalf("oracle error in %q", line)
		}
		if pct == 0 {
			// "Prefer max L1" (0 %) has no CarveoutKiB equivalent: 0 means default.
			continue
		}
		d := devs[id]
		if d == nil {
			d = dev(t, id)
			devs[id] = d
		}
		in := Input{BlockSize: block, RegistersPerThread: regs, SharedMemoryPerBlock: smem}
		if pct > 0 {
			in.CarveoutKiB = pct * d.SharedMemoryPerSM / 100 / 1024
		}
		r, err := Compute(d, in)
		n++
		if blocks == 0 {
			zero++
			// CUDA reports 0 blocks where Compute refuses the input.
			if err == nil && r.ActiveBlocksPerSM != 0 {
				t.Errorf("%s: CUDA 0 blocks, Compute %d", line, r.ActiveBlocksPerSM)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		var got uint64
		for _, l := range r.Limiters {
			got |= bits[l]
		}
		if r.ActiveBlocksPerSM != blocks || got != factors {
			t.Errorf("%s: Compute %d blocks limiters %v (%d); CUDA %d blocks factors %d", line, r.ActiveBlocksPerSM, r.Limiters, got, blocks, factors)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 20000 || zero == 0 || zero == n {
		t.Errorf("oracle table: %d cases, %d with 0 blocks", n, zero)
	}
}

// TestH100RealKernels compares every row of testdata/h100_occupancy.csv.gz
// with Compute. The table is the CUDA driver's
// cuOccupancyMaxActiveBlocksPerMultiprocessor (driver 580.159.04, CUDA 13.0)
// on an H100 SXM5 for real kernels compiled with nvcc -arch=sm_90, their
// registers and static shared memory as the compiler assigned them
// (testdata/h100_occupancy.cu); carveout_pct -1 is the driver default.
func TestH100RealKernels(t *testing.T) {
	f, err := os.Open("testdata/h100_occupancy.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	d := dev(t, "h100_sxm")
	sc := bufio.NewScanner(zr)
	rows, bad := 0, 0
	regs := map[int]bool{}
	statics := map[int]bool{}
	carveouts := map[int]bool{}
	limiters := map[Limiter]bool{}
	header := false
	for line := 0; sc.Scan(); {
		line++
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			continue
		}
		if !header {
			if text != "block_size,registers,static_shared,dynamic_shared,carveout_pct,active_blocks" {
				t.Fatalf("line %d: header %q", line, text)
			}
			header = true
			continue
		}
		fs := strings.Split(text, ",")
		if len(fs) != 6 {
			t.Fatalf("line %d: %q", line, text)
		}
		v := make([]int, 6)
		for i, s := range fs {
			if v[i], err = strconv.Atoi(s); err != nil {
				t.Fatalf("line %d: %q: %v", line, text, err)
			}
		}
		kib, err := CarveoutKiBFromPercent(d, v[4])
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		r, err := Compute(d, Input{BlockSize: v[0], RegistersPerThread: v[1], SharedMemoryPerBlock: v[2] + v[3], CarveoutKiB: kib})
		rows++
		regs[v[1]], statics[v[2]], carveouts[v[4]] = true, true, true
		limiters[r.Limiter] = true
		if err != nil || r.ActiveBlocksPerSM != v[5] {
			if bad++; bad <= 20 {
				t.Errorf("line %d %s: Compute %d blocks (%v, %v), CUDA %d", line, text, r.ActiveBlocksPerSM, r.Limiters, err, v[5])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Errorf("%d of %d rows differ from CUDA", bad, rows)
	}
	// The table covers what it claims: 62744 rows, 22 register counts from
	// 10 to 255, static shared memory, every carveout and every limiter but
	// barriers (real kernels use one barrier).
	if rows != 62744 || len(regs) != 22 || !regs[10] || !regs[255] || len(statics) != 16 || len(carveouts) != 7 ||
		!limiters[LimitWarps] || !limiters[LimitRegisters] || !limiters[LimitSharedMemory] || !limiters[LimitBlocks] {
		t.Errorf("table: %d rows, registers %v, static shared %v, carveouts %v, limiters %v", rows, regs, statics, carveouts, limiters)
	}
}

// Hand-checked cases for the older and other compute capabilities
// (derivations in the comments; rules in the package doc).
func TestHandCheckedOtherCCs(t *testing.T) {
	cases := []struct {
		id       string
		in       Input
		blocks   int
		warps    int
		limiters []Limiter
	}{
		// CC 2.0: 20 regs × 32 = 640/warp; ⌊16384/640⌋ = 25 per sub-partition × 2 = 50 warps
		// → ⌊50/8⌋ = 6 blocks; warps ⌊48/8⌋ = 6.
		{"gtx580", Input{BlockSize: 256, RegistersPerThread: 20}, 6, 48, []Limiter{LimitWarps, LimitRegisters}},
		// CC 2.0, 21 regs allocate in 128s: 672 → 768/warp; ⌊16384/768⌋ = 21 × 2 = 42 warps
		// → ⌊42/11⌋ = 3 blocks (with 64s it would be 704 → 46 warps → 4).
		{"gtx580", Input{BlockSize: 352, RegistersPerThread: 21}, 3, 33, []Limiter{LimitRegisters}},
		// 20000 B → 20096 (128 B units); ⌊49152/20096⌋ = 2.
		{"c2050", Input{BlockSize: 128, SharedMemoryPerBlock: 20000}, 2, 8, []Limiter{LimitSharedMemory}},
		// CC 1.3: 3 warps allocate as 4; 16 × 32 × 4 = 2048 regs per block → ⌊16384/2048⌋ = 8;
		// warps ⌊32/4⌋ = 8; cap 8.
		{"c1060", Input{BlockSize: 96, RegistersPerThread: 16}, 8, 24, []Limiter{LimitWarps, LimitRegisters, LimitBlocks}},
		// 30 × 32 × 4 = 3840 → 4096 (512 units) → 4 blocks; warps ⌊32/4⌋ = 8.
		{"c1060", Input{BlockSize: 128, RegistersPerThread: 30}, 4, 16, []Limiter{LimitRegisters}},
		// 5000 B → 5120 (512 B units): ⌊16384/5120⌋ = 3.
		{"c1060", Input{BlockSize: 64, SharedMemoryPerBlock: 5000}, 3, 6, []Limiter{LimitSharedMemory}},
		// CC 3.0: 63 regs → 2016 → 2048/warp: 8 per sub-partition × 4 = 32 warps → 4 blocks of 8.
		{"gtx680", Input{BlockSize: 256, RegistersPerThread: 63}, 4, 32, []Limiter{LimitRegisters}},
		// CC 5.2: 2 warps per block, 32 blocks/SM cap = 64 warps.
		{"gtx980", Input{BlockSize: 64}, 32, 64, []Limiter{LimitWarps, LimitBlocks}},
		// 10000 B → 10240 (256 B units); ⌊98304/10240⌋ = 9.
		{"titan_x_pascal", Input{BlockSize: 128, SharedMemoryPerBlock: 10000}, 9, 36, []Limiter{LimitSharedMemory}},
		// CC 7.0 default carveout 96 KiB: 40000 → 40192; ⌊98304/40192⌋ = 2.
		{"v100_sxm2", Input{BlockSize: 128, SharedMemoryPerBlock: 40000}, 2, 8, []Limiter{LimitSharedMemory}},
		// Max-L1 carveout (0 KiB) raised to the smallest carveout holding 40192 B: 64 KiB → 1.
		{"v100_sxm2", Input{BlockSize: 128, SharedMemoryPerBlock: 40000, CarveoutKiB: CarveoutMaxL1}, 1, 4, []Limiter{LimitSharedMemory}},
		// CC 8.0: 1 KiB reserve per block: ⌊167936/1024⌋ = 164 > 32 block cap.
		{"a100_80gb", Input{BlockSize: 32}, 32, 32, []Limiter{LimitBlocks}},
	}
	for _, c := range cases {
		r, err := Compute(dev(t, c.id), c.in)
		if err != nil {
			t.Errorf("%s %+v: %v", c.id, c.in, err)
			continue
		}
		if r.ActiveBlocksPerSM != c.blocks || r.ActiveWarpsPerSM != c.warps || !reflect.DeepEqual(r.Limiters, c.limiters) {
			t.Errorf("%s %+v: got %d blocks %d warps %v; want %d %d %v", c.id, c.in, r.ActiveBlocksPerSM, r.ActiveWarpsPerSM, r.Limiters, c.blocks, c.warps, c.limiters)
		}
	}
	if _, err := Compute(dev(t, "gtx680"), Input{BlockSize: 32, RegistersPerThread: 64}); !errors.Is(err, ErrRegisters) {
		t.Errorf("64 registers on CC 3.0: %v, want ErrRegisters", err)
	}
	_, err := Compute(dev(t, "hd7970"), Input{BlockSize: 64})
	if !errors.Is(err, ErrNotCUDA) || !strings.Contains(err.Error(), "hd7970") {
		t.Errorf("AMD device: %v, want ErrNotCUDA naming hd7970", err)
	}
	for _, c := range []struct{ pct, kib int }{{-1, 0}, {0, CarveoutMaxL1}, {25, 57}, {10, 23}, {100, 228}} {
		got, err := CarveoutKiBFromPercent(dev(t, "h100_sxm"), c.pct)
		if err != nil || got != c.kib {
			t.Errorf("CarveoutKiBFromPercent(%d) = %d, %v; want %d", c.pct, got, err, c.kib)
		}
	}
	if _, err := CarveoutKiBFromPercent(dev(t, "h100_sxm"), 101); !errors.Is(err, ErrCarveout) {
		t.Errorf("101 %%: %v", err)
	}
}
