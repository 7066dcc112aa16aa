// Package schedule orders concurrent kernels for symbiosis: the launch
// order of symbiotic-scheduling-concurrent-kernels.md (Li, Narayana,
// El-Ghazawi, CF'14), its compute/memory balance model (equations 1–7),
// its greedy algorithm (Figure 1), a model of the execution rounds the
// block scheduler makes of a launch order (section 3), and the ranking of
// an order among measured ones (Table 4, rank.go).
//
// The paper leaves some things open; this package reads it as follows.
//
//   - The four resources of the symbiosis score (Figure 1, lines 19–22)
//     are a kernel's footprint on one SM in an execution round. With
//     BlocksPerSM = min(⌈N_tblk_i / N_SM⌉, maxBlocksPerSM) (N_tblk_SM_i,
//     Table 2's "average # of thread blocks per SM"):
//     SharedMemory = BlocksPerSM · roundUp(shared memory per block,
//     SharedMemoryAllocUnit); Registers = BlocksPerSM · warpsPerBlock ·
//     roundUp(RegistersPerThread · WarpSize, RegisterAllocUnit); Warps =
//     BlocksPerSM · warpsPerBlock, warpsPerBlock = ⌈threads / WarpSize⌉.
//     maxBlocksPerSM is Kernel.MaxBlocksPerSM (capped by the device) or,
//     when that is 0, the fewest blocks of the kernel alone that one SM
//     holds under each of its four limits. The per-SM reading is the one
//     Table 3 uses (N_warp_SM_i; 26 blocks on 13 SMs are 2 per SM); a
//     whole-grid reading would make almost no pair "fit".
//   - A set of kernels "fits within an execution round" (lines 9 and 17)
//     when the sums of their footprints stay within every one of the four
//     limits of one SM.
//   - ProfileCombine (lines 31–40) sums the footprints and takes the
//     balance of the set from equation 7 over its members, so a round is
//     scored as the set of its kernels.
//   - Line 23's condition is applied as printed: the balance term counts
//     when U_A ≤ U_b or U_B ≤ U_b or U_A ≤ U_B. The prose says it counts
//     "only when both kernels are of the opposing resource
//     (compute/memory) characteristics"; the printed condition is wider
//     (two memory-bound kernels pass it) and not symmetric (of two
//     compute-bound kernels, only the ordering with the lower U_A passes),
//     so the pair matrix is not symmetric and the pair search looks at
//     both orderings. Options.OpposingOnly gives the prose's reading.
//   - U_gpu_b_devlim is the paper's "customized deviation limit", whose
//     value it does not give: Options.DeviationLimit, 4 by default.
//   - T_avg_data (equation 2) enters U_ipc_i (equation 2) and U_memb_i
//     (equation 4) alike and cancels out of their ratio U_gpu_b_i
//     (equation 5), the only one the algorithm scores; it is not an input.
//   - The pair of a round is the pair of highest score (ties: the lowest
//     indexes); when no pair scores above 0 (none fits) or one kernel is
//     left, the round opens with the remaining kernel of most shared
//     memory per SM. Rounds are kept in decreasing order of shared memory
//     per SM (lines 7 and 11), ties in the order the kernels joined.
//
// Beyond Table 2, Device has ReservedSharedMemoryPerBlock: what the
// driver reserves of shared memory per block (1 KiB from compute
// capability 8.0) counts toward S_shm_SM on the hardware; it is 0 for the
// paper's K20 and for hand-made devices.
//
// Units: IPCs are warp instructions per cycle per SM; B_max_mem is bytes
// per SM-clock cycle for the whole GPU; shared memory is in bytes;
// registers are 32-bit registers.
package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gtune/gtune/device"
)

// Device holds the constants of Table 2 (upper part) of
// symbiotic-scheduling-concurrent-kernels.md for one GPU.
type Device struct {
	Name                  string
	SMs                   int // N_SM
	RegistersPerSM        int // N_reg_SM
	SharedMemoryPerSM     int // S_shm_SM, bytes
	WarpsPerSM            int // N_warps_SM
	BlocksPerSM           int // N_tblk_SM
	WarpSize              int // threads per warp
	RegisterAllocUnit     int // registers per warp are rounded up to this (0: no rounding)
	SharedMemoryAllocUnit int // shared memory per block, bytes, is rounded up to this (0: none)
	// ReservedSharedMemoryPerBlock is the shared memory, bytes, the driver
	// reserves per block (compute capability ≥ 8.0), added before rounding.
	ReservedSharedMemoryPerBlock int
	// IPCsp, IPCdp and IPCmem are the single-precision, double-precision
	// and memory warp instructions one SM issues per cycle.
	IPCsp, IPCdp, IPCmem float64
	// MemoryBytesPerCycle is B_max_mem: the memory bandwidth of the whole
	// GPU in bytes per SM-clock cycle.
	MemoryBytesPerCycle float64
}

// DeviceFrom takes the constants of Table 2 from a device-database entry:
// the SM limits as listed; IPCsp and IPCdp from the FP32 and FP64 peaks
// at the boost clock, PeakGFLOPS·1e9 / (2 · SMs · BoostClockMHz·1e6 ·
// WarpSize), an FMA counting 2 flops (4 and 2 on an H100 SXM, 6 and 2 on
// a K20); IPCmem 1, one load/store warp instruction per cycle per SM (32
// load/store units per SM from Kepler to Hopper); B_max_mem the memory
// bandwidth over the boost clock, MemoryBandwidthGBs·1e9 /
// (BoostClockMHz·1e6) bytes per cycle. The error names the first needed
// field that is zero (or d is nil).
func DeviceFrom(d *device.Description) (Device, error) {
	if d == nil {
		return Device{}, errors.New("schedule: no device description")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"sms", float64(d.SMs)},
		{"registers_per_sm", float64(d.RegistersPerSM)},
		{"shared_memory_per_sm", float64(d.SharedMemoryPerSM)},
		{"max_warps_per_sm", float64(d.MaxWarpsPerSM)},
		{"max_blocks_per_sm", float64(d.MaxBlocksPerSM)},
		{"warp_size", float64(d.WarpSize)},
		{"boost_clock_mhz", float64(d.BoostClockMHz)},
		{"peak_fp32_gflops", d.PeakFP32GFLOPS},
		{"peak_fp64_gflops", d.PeakFP64GFLOPS},
		{"memory_bandwidth_gbs", d.MemoryBandwidthGBs},
	} {
		if !(f.v > 0) {
			return Device{}, fmt.Errorf("schedule: device %q: %s is %v, need > 0", d.ID, f.name, f.v)
		}
	}
	cycles := float64(d.BoostClockMHz) * 1e6
	ipc := func(gflops float64) float64 {
		return gflops * 1e9 / (2 * float64(d.SMs) * cycles * float64(d.WarpSize))
	}
	return Device{
		Name:                         d.Name,
		SMs:                          d.SMs,
		RegistersPerSM:               d.RegistersPerSM,
		SharedMemoryPerSM:            d.SharedMemoryPerSM,
		WarpsPerSM:                   d.MaxWarpsPerSM,
		BlocksPerSM:                  d.MaxBlocksPerSM,
		WarpSize:                     d.WarpSize,
		RegisterAllocUnit:            d.RegisterAllocUnit,
		SharedMemoryAllocUnit:        d.SharedMemoryAllocUnit,
		ReservedSharedMemoryPerBlock: d.ReservedSharedMemoryPerBlock,
		IPCsp:                        ipc(d.PeakFP32GFLOPS),
		IPCdp:                        ipc(d.PeakFP64GFLOPS),
		IPCmem:                       1,
		MemoryBytesPerCycle:          d.MemoryBandwidthGBs * 1e9 / cycles,
	}, nil
}

// validate checks what the footprints and equations divide by.
func (d Device) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"SMs", float64(d.SMs)}, {"RegistersPerSM", float64(d.RegistersPerSM)},
		{"SharedMemoryPerSM", float64(d.SharedMemoryPerSM)}, {"WarpsPerSM", float64(d.WarpsPerSM)},
		{"BlocksPerSM", float64(d.BlocksPerSM)}, {"WarpSize", float64(d.WarpSize)},
		{"IPCsp", d.IPCsp}, {"IPCdp", d.IPCdp}, {"IPCmem", d.IPCmem},
	} {
		if !(f.v > 0) {
			return fmt.Errorf("schedule: device %q: %s is %v, need > 0", d.Name, f.name, f.v)
		}
	}
	if d.RegisterAllocUnit < 0 || d.SharedMemoryAllocUnit < 0 || d.ReservedSharedMemoryPerBlock < 0 || !(d.MemoryBytesPerCycle >= 0) {
		return fmt.Errorf("schedule: device %q: negative allocation unit, reservation or bandwidth", d.Name)
	}
	return nil
}

// Kernel is one kernel's profile (Table 2, lower part).
type Kernel struct {
	Name                 string `json:"name"`
	Blocks               int    `json:"blocks"`                  // N_tblk_i, thread blocks in the grid
	ThreadsPerBlock      int    `json:"threads_per_block"`       // N_thd_per_tblk_i
	RegistersPerThread   int    `json:"registers_per_thread"`    // as compiled
	SharedMemoryPerBlock int    `json:"shared_memory_per_block"` // bytes, static + dynamic
	// MaxBlocksPerSM is the kernel's own occupancy limit, blocks per SM
	// (from the occupancy calculator); 0: derived from the device limits.
	MaxBlocksPerSM int     `json:"max_blocks_per_sm,omitempty"`
	Instructions   float64 `json:"instructions"` // N_inst_i, warp instructions of the whole kernel
	// Rsp, Rdp and Rmem are the shares of single-precision,
	// double-precision and memory instructions; they are normalised to sum
	// to 1.
	Rsp             float64 `json:"r_sp"`
	Rdp             float64 `json:"r_dp"`
	Rmem            float64 `json:"r_mem"`
	MemBytesPerInst float64 `json:"n_mem"` // N_mem_i, bytes per memory instruction
}

// usage is what a kernel, or a set of kernels, holds of one SM.
type usage struct{ blocks, warps, registers, shared int }

func (a usage) plus(b usage) usage {
	return usage{a.blocks + b.blocks, a.warps + b.warps, a.registers + b.registers, a.shared + b.shared}
}

// fits is "can fit within an execution round" (Figure 1, lines 9 and 17):
// every one of the four limits of an SM holds.
func (d Device) fits(u usage) bool {
	return u.blocks <= d.BlocksPerSM && u.warps <= d.WarpsPerSM && u.registers <= d.RegistersPerSM && u.shared <= d.SharedMemoryPerSM
}

func roundUp(x, unit int) int {
	if unit <= 0 {
		return x
	}
	return (x + unit - 1) / unit * unit
}

// block is one thread block's footprint on an SM.
func (d Device) block(k Kernel) usage {
	warps := (k.ThreadsPerBlock + d.WarpSize - 1) / d.WarpSize
	return usage{
		blocks:    1,
		warps:     warps,
		registers: warps * roundUp(k.RegistersPerThread*d.WarpSize, d.RegisterAllocUnit),
		shared:    roundUp(k.SharedMemoryPerBlock+d.ReservedSharedMemoryPerBlock, d.SharedMemoryAllocUnit),
	}
}

// maxBlocks is how many blocks of k alone one SM holds under the device's
// four limits.
func (d Device) maxBlocks(b usage) int {
	m := min(d.BlocksPerSM, d.WarpsPerSM/b.warps)
	if b.registers > 0 {
		m = min(m, d.RegistersPerSM/b.registers)
	}
	if b.shared > 0 {
		m = min(m, d.SharedMemoryPerSM/b.shared)
	}
	return m
}

// mix is k's instruction ratios normalised to sum to 1 (all zero when
// they sum to 0).
func mix(k Kernel) (rsp, rdp, rmem float64) {
	s := k.Rsp + k.Rdp + k.Rmem
	if !(s > 0) {
		return 0, 0, 0
	}
	return k.Rsp / s, k.Rdp / s, k.Rmem / s
}

// cyclesPerInst is the denominator of equation 1: the issue cycles per
// warp instruction of k's mix on one SM.
func (d Device) cyclesPerInst(k Kernel) float64 {
	rsp, rdp, rmem := mix(k)
	return rsp/d.IPCsp + rdp/d.IPCdp + rmem/d.IPCmem
}

// IPCMax is IPC_max_i, symbiotic-scheduling-concurrent-kernels.md,
// equation 1: the warp instructions per cycle one SM issues of k's mix
// without memory latency, 1/(R_sp/IPC_sp + R_dp/IPC_dp + R_mem/IPC_mem),
// with the ratios normalised.
func IPCMax(d Device, k Kernel) float64 { return 1 / d.cyclesPerInst(k) }

// Balance is U_gpu_b_i, symbiotic-scheduling-concurrent-kernels.md,
// equation 5: B_max_mem / (R_mem · N_mem · IPC_max_i · N_SM), below 1 for
// a memory-bound kernel, above 1 for a compute-bound one; +Inf for a
// kernel without memory traffic (R_mem or N_mem 0).
func Balance(d Device, k Kernel) float64 {
	_, _, rmem := mix(k)
	demand := rmem * k.MemBytesPerInst * IPCMax(d, k) * float64(d.SMs)
	if !(demand > 0) {
		return math.Inf(1)
	}
	return d.MemoryBytesPerCycle / demand
}

// RoundIPCMax is IPC_max_r, symbiotic-scheduling-concurrent-kernels.md,
// equation 6: equation 1 over the kernels of a round, each weighted by
// its instructions N_inst_i. NaN when they have no instructions.
func RoundIPCMax(d Device, ks []Kernel) float64 {
	var inst, cycles float64
	for _, k := range ks {
		inst += k.Instructions
		cycles += d.cyclesPerInst(k) * k.Instructions
	}
	return inst / cycles
}

// RoundBalance is U_gpu_b_r, symbiotic-scheduling-concurrent-kernels.md,
// equation 7: B_max_mem · ΣN_inst_i / (IPC_max_r · N_SM · ΣR_mem_i ·
// N_inst_i · N_mem_i) over the kernels of a round; for one kernel it is
// equation 5. +Inf when the round has no memory traffic.
func RoundBalance(d Device, ks []Kernel) float64 {
	var inst, bytes float64
	for _, k := range ks {
		_, _, rmem := mix(k)
		inst += k.Instructions
		bytes += rmem * k.Instructions * k.MemBytesPerInst
	}
	if !(bytes > 0) {
		return math.Inf(1)
	}
	return d.MemoryBytesPerCycle * inst / (RoundIPCMax(d, ks) * float64(d.SMs) * bytes)
}

// Profile is a kernel's derived values: its footprint on one SM in an
// execution round and its balance.
type Profile struct {
	Kernel         Kernel // as given, the instruction ratios normalised
	BlocksPerSM    int    // N_tblk_SM_i: min(⌈Blocks/N_SM⌉, MaxBlocksPerSM)
	MaxBlocksPerSM int    // blocks of the kernel alone one SM holds
	Registers      int    // per SM: BlocksPerSM blocks' registers
	SharedMemory   int    // per SM, bytes
	Warps          int    // per SM
	IPCMax         float64
	Balance        float64 // U_gpu_b_i, equation 5; +Inf without memory traffic
}

func (p Profile) usage() usage {
	return usage{p.BlocksPerSM, p.Warps, p.Registers, p.SharedMemory}
}

// MarshalJSON writes the derived values (the kernel by name only: its
// profile is the caller's input). JSON has no infinity: a balance of +Inf
// is null.
func (p Profile) MarshalJSON() ([]byte, error) {
	var bal *float64
	if !math.IsInf(p.Balance, 0) && !math.IsNaN(p.Balance) {
		bal = &p.Balance
	}
	return json.Marshal(struct {
		Name           string   `json:"name"`
		BlocksPerSM    int      `json:"blocks_per_sm"`
		MaxBlocksPerSM int      `json:"max_blocks_per_sm"`
		Registers      int      `json:"registers_per_sm"`
		SharedMemory   int      `json:"shared_memory_per_sm"`
		Warps          int      `json:"warps_per_sm"`
		IPCMax         float64  `json:"ipc_max"`
		Balance        *float64 `json:"u_gpu_b"`
	}{p.Kernel.Name, p.BlocksPerSM, p.MaxBlocksPerSM, p.Registers, p.SharedMemory, p.Warps, p.IPCMax, bal})
}

// Profiles derives each kernel's profile on d. Errors name the kernel: no
// thread blocks or threads, negative resources, no instructions, negative
// or all-zero instruction ratios, negative N_mem, or a thread block that
// does not fit an empty SM; or name the device field that is not positive.
func Profiles(d Device, ks []Kernel) ([]Profile, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	out := make([]Profile, len(ks))
	for i, k := range ks {
		fail := func(format string, a ...any) error {
			return fmt.Errorf("schedule: kernel %d (%s): %s", i, k.Name, fmt.Sprintf(format, a...))
		}
		switch {
		case k.Blocks <= 0 || k.ThreadsPerBlock <= 0:
			return nil, fail("%d blocks of %d threads", k.Blocks, k.ThreadsPerBlock)
		case k.RegistersPerThread < 0 || k.SharedMemoryPerBlock < 0 || k.MaxBlocksPerSM < 0:
			return nil, fail("negative registers, shared memory or blocks per SM")
		case !(k.Instructions > 0) || math.IsInf(k.Instructions, 0):
			return nil, fail("N_inst %v, need > 0", k.Instructions)
		case !(k.Rsp >= 0 && k.Rdp >= 0 && k.Rmem >= 0) || math.IsInf(k.Rsp+k.Rdp+k.Rmem, 0):
			return nil, fail("instruction ratios R_sp %v, R_dp %v, R_mem %v must be finite and >= 0", k.Rsp, k.Rdp, k.Rmem)
		case k.Rsp+k.Rdp+k.Rmem == 0:
			return nil, fail("instruction ratios are all zero")
		case !(k.MemBytesPerInst >= 0) || math.IsInf(k.MemBytesPerInst, 0):
			return nil, fail("N_mem %v, need >= 0", k.MemBytesPerInst)
		}
		k.Rsp, k.Rdp, k.Rmem = mix(k)
		b := d.block(k)
		maxB := d.maxBlocks(b)
		if k.MaxBlocksPerSM > 0 {
			maxB = min(maxB, k.MaxBlocksPerSM)
		}
		if maxB < 1 {
			return nil, fail("one thread block (%d warps, %d registers, %d B of shared memory) does not fit an SM of %s", b.warps, b.registers, b.shared, d.Name)
		}
		per := min((k.Blocks+d.SMs-1)/d.SMs, maxB)
		out[i] = Profile{
			Kernel:         k,
			BlocksPerSM:    per,
			MaxBlocksPerSM: maxB,
			Registers:      per * b.registers,
			SharedMemory:   per * b.shared,
			Warps:          per * b.warps,
			IPCMax:         IPCMax(d, k),
			Balance:        Balance(d, k),
		}
	}
	return out, nil
}

// Options are the algorithm's free constants. Zero values take the
// defaults.
type Options struct {
	// TargetBalance is U_gpu_b, the optimum balance; 1 (the paper's,
	// section 5) when not > 0.
	TargetBalance float64
	// DeviationLimit is U_gpu_b_devlim, the paper's "customized deviation
	// limit": the balance term is 0 once the combined balance is this
	// many times above or below U_gpu_b. The paper gives no value; 4
	// when not > 0.
	DeviationLimit float64
	// OpposingOnly scores the balance only for sets on opposite sides of
	// U_gpu_b (one at most, the other at least), the prose of section
	// 4.3, instead of the printed condition of Figure 1, line 23.
	OpposingOnly bool
}

func (o Options) withDefaults() Options {
	if !(o.TargetBalance > 0) {
		o.TargetBalance = 1
	}
	if !(o.DeviationLimit > 0) {
		o.DeviationLimit = 4
	}
	return o
}

// combine is ProfileCombine (Figure 1, lines 31–40): the set as one
// virtual kernel, its footprints summed; its kernels for equation 7.
func combine(ps []Profile) (usage, []Kernel) {
	var u usage
	ks := make([]Kernel, len(ps))
	for i, p := range ps {
		u = u.plus(p.usage())
		ks[i] = p.Kernel
	}
	return u, ks
}

// balanceTol is how close to U_gpu_b equation 7 must come to count as
// equal (Figure 1, line 24): its rounding, not a tolerance of the model.
const balanceTol = 1e-12

// Score is SymbiosisScoreGen, symbiotic-scheduling-concurrent-kernels.md,
// Figure 1, lines 15–29, between the set a (one kernel, or a round
// combined by ProfileCombine, lines 31–40) and the set b: 0 when either
// is empty or they do not fit one execution round together (line 18);
// otherwise the share of each of the four SM resources left free,
// max((limit − used_a − used_b)/limit, 0) (lines 19–22), plus, when line
// 23's condition holds (see Options.OpposingOnly), a balance term from
// the combined balance U_c (equation 7 over both sets) and U_b =
// TargetBalance, devlim = DeviationLimit: 1 when U_c = U_b (line 25);
// max(1 − U_c/(U_b·devlim), 0) above (line 27); max(1 − U_b/(U_c·devlim),
// 0) below (line 29). The score is dimensionless, at most 5.
func Score(d Device, a, b []Profile, o Options) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	o = o.withDefaults()
	fa, ka := combine(a)
	fb, kb := combine(b)
	f := fa.plus(fb)
	if !d.fits(f) {
		return 0
	}
	free := func(limit, used int) float64 { return math.Max(float64(limit-used)/float64(limit), 0) }
	s := free(d.SharedMemoryPerSM, f.shared) + free(d.RegistersPerSM, f.registers) +
		free(d.WarpsPerSM, f.warps) + free(d.BlocksPerSM, f.blocks)
	ua, ub, u := RoundBalance(d, ka), RoundBalance(d, kb), o.TargetBalance
	scored := ua <= u || ub <= u || ua <= ub
	if o.OpposingOnly {
		scored = (ua <= u && ub >= u) || (ua >= u && ub <= u)
	}
	if !scored {
		return s
	}
	uc := RoundBalance(d, append(slices.Clip(ka), kb...))
	switch {
	case math.Abs(uc-u) <= balanceTol*u:
		s++
	case uc > u:
		s += math.Max(1-uc/(u*o.DeviationLimit), 0)
	default: // uc < u; uc = 0 (no bandwidth) gives −Inf, so 0
		s += math.Max(1-u/(uc*o.DeviationLimit), 0)
	}
	return s
}

// Schedule is the symbiotic order of Figure 1: the execution rounds
// Rd_1..Rd_r, of kernel indexes, and the launch order they concatenate
// to.
type Schedule struct {
	Order  []int   `json:"order"`
	Rounds [][]int `json:"rounds"`
	// Scores is the SymbiosisScoreMatrix (Figure 1, line 3): Scores[i][j]
	// is Score of kernel i against kernel j, 0 on the diagonal; not
	// symmetric where line 23's condition is not (Options).
	Scores   [][]float64 `json:"scores"`
	Profiles []Profile   `json:"profiles"`
}

// Symbiotic orders ks by the concurrent kernel symbiotic algorithm,
// symbiotic-scheduling-concurrent-kernels.md, Figure 1, lines 1–13:
// the pair score matrix (line 3); then, while kernels remain, a round r
// (line 5) opened by the pair of highest score over both orderings,
// ties to the lowest indexes (line 6), or, when no pair scores above 0
// or one kernel is left, by the remaining kernel of most shared memory
// per SM (ties: lowest index); the pair in decreasing order of shared
// memory (line 7); then, while a remaining kernel fits with the round's
// combined footprint (line 9), the one of highest Score against the
// round (line 10, ties: lowest index) joins it, the round re-sorted by
// decreasing shared memory (line 11). The order is the rounds
// concatenated. Errors as Profiles, or no kernels.
func Symbiotic(d Device, ks []Kernel, o Options) (*Schedule, error) {
	if len(ks) == 0 {
		return nil, errors.New("schedule: no kernels to order")
	}
	ps, err := Profiles(d, ks)
	if err != nil {
		return nil, err
	}
	n := len(ks)
	sc := make([][]float64, n)
	for i := range sc {
		sc[i] = make([]float64, n)
		for j := range sc[i] {
			if i != j {
				sc[i][j] = Score(d, ps[i:i+1], ps[j:j+1], o)
			}
		}
	}
	left := make([]bool, n)
	for i := range left {
		left[i] = true
	}
	remaining := n
	take := func(k int) {
		left[k] = false
		remaining--
	}
	// Stable, so that kernels of equal shared memory keep the order in
	// which they joined.
	byShared := func(round []int) {
		slices.SortStableFunc(round, func(a, b int) int { return ps[b].SharedMemory - ps[a].SharedMemory })
	}
	s := &Schedule{Scores: sc, Profiles: ps}
	for remaining > 0 {
		bi, bj, best := -1, -1, 0.0
		for i := range n {
			for j := range n {
				if i != j && left[i] && left[j] && sc[i][j] > best {
					bi, bj, best = i, j, sc[i][j]
				}
			}
		}
		var round []int
		if bi >= 0 {
			round = []int{min(bi, bj), max(bi, bj)}
		} else {
			k := -1
			for i := range n {
				if left[i] && (k < 0 || ps[i].SharedMemory > ps[k].SharedMemory) {
					k = i
				}
			}
			round = []int{k}
		}
		for _, k := range round {
			take(k)
		}
		byShared(round)
		for remaining > 0 {
			members := make([]Profile, len(round))
			for i, k := range round {
				members[i] = ps[k]
			}
			f, _ := combine(members)
			c, cs := -1, -1.0
			for k := range n {
				if !left[k] || !d.fits(f.plus(ps[k].usage())) {
					continue
				}
				if v := Score(d, members, ps[k:k+1], o); v > cs {
					c, cs = k, v
				}
			}
			if c < 0 {
				break
			}
			take(c)
			round = append(round, c)
			byShared(round)
		}
		s.Rounds = append(s.Rounds, round)
		s.Order = append(s.Order, round...)
	}
	return s, nil
}

// RoundShare is how many thread blocks of one kernel ran in one round.
type RoundShare struct {
	Kernel int `json:"kernel"` // index into the kernels
	Blocks int `json:"blocks"`
}

// BlockRounds models the execution rounds the block scheduler makes of a
// launch order, independently of the algorithm: the "left-over" policy of
// symbiotic-scheduling-concurrent-kernels.md, section 3. Thread blocks
// are dispatched in launch order, kernel after kernel, each to the next
// SM round-robin (from SM 0 at the start of a round) that has room for
// all four of its resources (and, when Kernel.MaxBlocksPerSM is set, for
// one more block of that kernel); the first block that fits on no SM
// closes the round and holds back every block behind it. All blocks of a
// round are taken to finish together, freeing the SMs. It returns, per
// round, the blocks each kernel ran, in launch order. Accounting is in
// integers, per SM. Indexes out of range or repeated in order, kernels
// without blocks or threads, and kernels one of whose blocks does not fit
// an empty SM (Profiles refuses them) are left out; nil when d has no SMs
// or no warp size.
func BlockRounds(d Device, ks []Kernel, order []int) [][]RoundShare {
	if d.SMs <= 0 || d.WarpSize <= 0 {
		return nil
	}
	var seq []int
	seen := make([]bool, len(ks))
	left := make([]int, len(ks))
	blocks := make([]usage, len(ks))
	limit := make([]int, len(ks))
	for _, k := range order {
		if k < 0 || k >= len(ks) || seen[k] {
			continue
		}
		seen[k] = true
		if ks[k].Blocks <= 0 || ks[k].ThreadsPerBlock <= 0 || ks[k].RegistersPerThread < 0 || ks[k].SharedMemoryPerBlock < 0 {
			continue
		}
		blocks[k] = d.block(ks[k])
		limit[k] = ks[k].MaxBlocksPerSM
		if limit[k] <= 0 {
			limit[k] = math.MaxInt
		}
		if !d.fits(blocks[k]) {
			continue
		}
		left[k] = ks[k].Blocks
		seq = append(seq, k)
	}
	var rounds [][]RoundShare
	for {
		used := make([]usage, d.SMs)
		mine := make([]int, d.SMs) // blocks of the kernel being dispatched, per SM
		var round []RoundShare
		sm := 0
		closed := false
		for _, k := range seq {
			if closed {
				break
			}
			if left[k] == 0 {
				continue
			}
			clear(mine)
			placed := 0
			for left[k] > 0 {
				s := -1
				for t := range d.SMs {
					c := (sm + t) % d.SMs
					if mine[c] < limit[k] && d.fits(used[c].plus(blocks[k])) {
						s = c
						break
					}
				}
				if s < 0 {
					closed = true
					break
				}
				used[s] = used[s].plus(blocks[k])
				mine[s]++
				sm = (s + 1) % d.SMs
				left[k]--
				placed++
			}
			if placed > 0 {
				round = append(round, RoundShare{Kernel: k, Blocks: placed})
			}
		}
		if len(round) == 0 {
			return rounds
		}
		rounds = append(rounds, round)
	}
}
