package emulate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Class is an instruction class of Counts.
type Class int

// The classes: arithmetic by pipe, memory by space and direction,
// control.
const (
	FP32 Class = iota
	FP64
	Int
	SFU
	LoadGlobal
	StoreGlobal
	LoadShared
	StoreShared
	LoadConst
	Branch
	Sync
	Other
	numClasses
)

var classNames = [...]string{"fp32", "fp64", "int", "sfu", "ld.global", "st.global", "ld.shared", "st.shared", "ld.const", "branch", "sync", "other"}

func (c Class) String() string { return classNames[c] }

// Counts is what one thread block did.
type Counts struct {
	Threads, Warps int
	// WarpInstructions are instructions issued per warp (once however
	// many of its threads were active), by class; ThreadInstructions the
	// same per active thread.
	WarpInstructions   [numClasses]int64
	ThreadInstructions [numClasses]int64
	// FP32Flops and FP64Flops count an FMA as 2, per thread.
	FP32Flops, FP64Flops int64
	// Global memory: requests (warp instructions), the distinct 32-byte
	// sectors each touched, summed, and the bytes the threads asked for.
	GlobalLoadRequests, GlobalLoadSectors, GlobalLoadBytes    int64
	GlobalStoreRequests, GlobalStoreSectors, GlobalStoreBytes int64
	// Shared memory: requests, and wavefronts: per request the largest
	// number of distinct 4-byte words that fall in one of the 32 banks
	// (1 without conflicts, 32 for 32-way conflicts).
	SharedRequests, SharedWavefronts int64
	SharedBytes                      int64
	// Local memory (a thread's spilled arrays, served by L1 mostly):
	// requests and the bytes the threads asked for.
	LocalRequests, LocalBytes int64
	// Branches are branch instructions issued per warp; DivergentBranches
	// those whose active threads went two ways.
	Branches, DivergentBranches int64
	// Blocks is how many thread blocks these counts are of (EmulateSample;
	// 1 for Emulate). Every other count is their sum.
	Blocks int
	// The footprint in global memory: the distinct 32-byte sectors each
	// block loaded and stored, summed over the blocks (what misses a
	// block's L1 at most: its reuse within the block removed), and the
	// distinct sectors of all the blocks together (what misses L2 where
	// the blocks are resident at once: their reuse of each other's data
	// removed too).
	LoadFootprint, StoreFootprint             int64
	SampleLoadFootprint, SampleStoreFootprint int64
}

// Launch is the block to emulate: the grid and thread block of the
// launch, the block's index, and the kernel's arguments in order.
type Launch struct {
	Grid, Block [3]int
	BlockIdx    [3]int
	Args        []Arg
	// DynamicSharedBytes is the launch's dynamic shared memory (bytes),
	// what the kernel's extern shared arrays may use.
	DynamicSharedBytes int
	// MaxInstructions bounds the thread instructions emulated (default
	// 1e9): a kernel that does not end is an error, not a hang.
	MaxInstructions int64
}

// Arg is one kernel argument: a scalar's bits, or a buffer.
type Arg struct {
	Scalar uint64
	Buffer *Buffer
}

// Buffer is device memory an argument points to: Bytes long, its
// contents Fill's (element i of ElemBytes bytes, little-endian; nil:
// zeros), materialised page by page as the block touches it.
type Buffer struct {
	Name      string
	Bytes     int64
	ElemBytes int
	Fill      func(i int64) uint64
	// Stored, when set, is told of every store into the buffer: its
	// offset (bytes), size (bytes) and value (little-endian bits).
	Stored func(off int64, size int, v uint64)
}

const (
	pageBits   = 8
	bufferBase = uint64(1) << 44
	bufferSpan = uint64(1) << 40
)

// memory is the sparse global memory of the buffers.
type memory struct {
	bufs  []*Buffer
	pages map[uint64][]byte
	// The page last returned (most accesses are to the page before).
	lastKey  uint64
	lastPage []byte
}

func (m *memory) locate(addr uint64, n int) (*Buffer, uint64, error) {
	if addr >= bufferBase {
		i := (addr - bufferBase) / bufferSpan
		off := (addr - bufferBase) % bufferSpan
		if i < uint64(len(m.bufs)) && off+uint64(n) <= uint64(m.bufs[i].Bytes) {
			return m.bufs[i], off, nil
		}
	}
	return nil, 0, fmt.Errorf("global access of %d bytes at %#x is outside every argument's buffer", n, addr)
}

func (m *memory) page(addr uint64, b *Buffer, off uint64) []byte {
	key := addr >> pageBits
	if m.lastPage != nil && key == m.lastKey {
		return m.lastPage
	}
	p, ok := m.pages[key]
	if !ok {
		p = make([]byte, 1<<pageBits)
		if b.Fill != nil && b.ElemBytes > 0 {
			start := int64(off) - int64(addr-key<<pageBits)
			for j := 0; j < len(p); j += b.ElemBytes {
				i := (start + int64(j)) / int64(b.ElemBytes)
				if i < 0 || (i+1)*int64(b.ElemBytes) > b.Bytes {
					continue
				}
				v := b.Fill(i)
				var tmp [8]byte
				binary.LittleEndian.PutUint64(tmp[:], v)
				copy(p[j:j+b.ElemBytes], tmp[:b.ElemBytes])
			}
		}
		m.pages[key] = p
	}
	m.lastKey, m.lastPage = key, p
	return p
}

func (m *memory) load(addr uint64, n int) (uint64, error) {
	b, off, err := m.locate(addr, n)
	if err != nil {
		return 0, err
	}
	var tmp [8]byte
	if in := addr & (1<<pageBits - 1); in+uint64(n) <= 1<<pageBits {
		// Within one page (nearly every access): one lookup.
		return leN(m.page(addr, b, off)[in:], n), nil
	}
	for i := 0; i < n; i++ {
		a := addr + uint64(i)
		tmp[i] = m.page(a, b, off+uint64(i))[a&(1<<pageBits-1)]
	}
	return binary.LittleEndian.Uint64(tmp[:]), nil
}

func (m *memory) store(addr uint64, n int, v uint64) error {
	b, off, err := m.locate(addr, n)
	if err != nil {
		return err
	}
	if b.Stored != nil {
		b.Stored(int64(off), n, v)
	}
	var tmp [8]byte
	binary.LittleEndian.PutUint64(tmp[:], v)
	if in := addr & (1<<pageBits - 1); in+uint64(n) <= 1<<pageBits {
		copy(m.page(addr, b, off)[in:in+uint64(n)], tmp[:n])
		return nil
	}
	for i := 0; i < n; i++ {
		a := addr + uint64(i)
		m.page(a, b, off+uint64(i))[a&(1<<pageBits-1)] = tmp[i]
	}
	return nil
}

type thread struct {
	regs    []uint64
	pc      int
	done    bool
	barrier bool // waiting at bar.sync
	tid     [3]int
	lane    int
	local   []byte // the thread's local memory (Kernel.LocalBytes)
}

type block struct {
	k      *Kernel
	l      Launch
	mem    *memory
	shared []byte
	cmem   []byte // constant memory
	params map[string]uint64
	c      *Counts
	budget int64
	// Scratch reused by every instruction: the warp's active threads,
	// those the guard lets run, sectors and shared words touched.
	active, on []*thread
	sectors    []uint64
	words      []uint64
	// The global sectors loaded and stored by this block (each
	// request's distinct ones; reset for each block of a sample), and the
	// distinct ones of the sample's blocks so far: sorted and made
	// distinct when a block ends, cheaper than a set per request.
	loaded, stored             []uint64
	sampleLoaded, sampleStored []uint64
}

// ErrUnsupported wraps an instruction the emulator does not know.
var ErrUnsupported = errors.New("emulate: unsupported PTX instruction")

// Emulate runs thread block l.BlockIdx of kernel k and counts what it
// did. Errors: an unsupported instruction (wrapping ErrUnsupported, with
// its line), an access outside the arguments' buffers or shared memory,
// more than MaxInstructions, or arguments that do not match the
// parameters.
func (k *Kernel) Emulate(l Launch) (*Counts, error) {
	return k.EmulateSample(l, 1, 0)
}

// Sample bounds of JobWork: at most DefaultSampleBlocks blocks, and no
// further block once DefaultSampleInstructions thread instructions ran
// (a block of matmul at WIDTH 4096 runs 10 million, so it gets 2; one of
// benchmark_hub's convolution 741,000 on average, 4). Each block costs
// what the first did: the sample multiplies the emulation's time by its
// size (BENCHMARKS.md, "Traffic that sees the caches").
const (
	DefaultSampleBlocks       = 4
	DefaultSampleInstructions = 8_000_000
)

// EmulateSample runs consecutive thread blocks of kernel k, in the order
// of their linear index from l.BlockIdx (x fastest), one after another
// on the same global memory, and counts what they did together: at most
// maxBlocks, and no further block once budget thread instructions ran
// (0: no bound but maxBlocks; the first block always runs, and a second
// where the grid has one), and none after the second where the blocks so
// far shared no 32-byte sector. Blocks of a wave share data (a row of
// matmul's A, a stencil's halo), which one block cannot show: the sample's
// footprint (Counts.SampleLoadFootprint) against the blocks' own is that
// reuse (performance-projection-heterogeneous-gpus.md section IV-C2
// extrapolates one workgroup; issue 49 asks for the caches). Errors: as
// Emulate's.
func (k *Kernel) EmulateSample(l Launch, maxBlocks int, budget int64) (*Counts, error) {
	if len(l.Args) != len(k.Params) {
		return nil, fmt.Errorf("emulate: %s has %d parameters, %d arguments given", k.Name, len(k.Params), len(l.Args))
	}
	for i := range 3 {
		l.Block[i], l.Grid[i] = max(l.Block[i], 1), max(l.Grid[i], 1)
	}
	if l.MaxInstructions <= 0 {
		l.MaxInstructions = 1e9
	}
	b := &block{k: k, l: l, mem: &memory{pages: map[uint64][]byte{}}, cmem: make([]byte, k.ConstBytes),
		params: map[string]uint64{}, c: &Counts{}, budget: l.MaxInstructions}
	b.setArgs()
	n := l.Block[0] * l.Block[1] * l.Block[2]
	b.c.Threads, b.c.Warps = n, (n+31)/32
	grid := l.Grid[0] * l.Grid[1] * l.Grid[2]
	first := l.BlockIdx[0] + l.Grid[0]*(l.BlockIdx[1]+l.Grid[1]*l.BlockIdx[2])
	for i := first; i < grid && i-first < max(maxBlocks, 1); i++ {
		if i-first >= 2 && budget > 0 && l.MaxInstructions-b.budget >= budget {
			break
		}
		// Blocks that shared no sector so far (elementwise kernels)
		// show no reuse a further block would: one is enough after two.
		if i-first >= 2 && int64(len(b.sampleLoaded)+len(b.sampleStored)) == b.c.LoadFootprint+b.c.StoreFootprint {
			break
		}
		b.l.BlockIdx = [3]int{i % l.Grid[0], i / l.Grid[0] % l.Grid[1], i / (l.Grid[0] * l.Grid[1])}
		if err := b.run(n); err != nil {
			return b.c, err
		}
		b.c.Blocks++
		b.loaded, b.stored = distinct(b.loaded), distinct(b.stored)
		b.c.LoadFootprint += int64(len(b.loaded))
		b.c.StoreFootprint += int64(len(b.stored))
		b.sampleLoaded = distinct(append(b.sampleLoaded, b.loaded...))
		b.sampleStored = distinct(append(b.sampleStored, b.stored...))
	}
	b.c.SampleLoadFootprint, b.c.SampleStoreFootprint = int64(len(b.sampleLoaded)), int64(len(b.sampleStored))
	return b.c, nil
}

// distinct sorts xs and drops its repeats, in place.
func distinct(xs []uint64) []uint64 {
	slices.Sort(xs)
	return slices.Compact(xs)
}

// setArgs places the arguments: a buffer named as a __constant__ symbol
// fills it, every buffer gets its span of the address space, and each
// parameter its value.
func (b *block) setArgs() {
	k, l := b.k, b.l
	for _, a := range l.Args {
		if a.Buffer == nil || a.Buffer.Fill == nil || a.Buffer.ElemBytes == 0 {
			continue
		}
		if off, ok := k.Const[a.Buffer.Name]; ok {
			n := min(k.constSize[a.Buffer.Name], a.Buffer.Bytes)
			for i := int64(0); i*int64(a.Buffer.ElemBytes) < n; i++ {
				var tmp [8]byte
				putLeUint64(tmp[:], a.Buffer.Fill(i))
				copy(b.cmem[off+i*int64(a.Buffer.ElemBytes):off+n], tmp[:a.Buffer.ElemBytes])
			}
		}
	}
	for i, a := range l.Args {
		v := a.Scalar
		if a.Buffer != nil {
			v = bufferBase + uint64(len(b.mem.bufs))*bufferSpan
			b.mem.bufs = append(b.mem.bufs, a.Buffer)
		}
		b.params[k.Params[i].Name] = v
	}
}

// run runs the block b.l.BlockIdx of n threads to its end, from fresh
// registers and shared memory.
func (b *block) run(n int) error {
	k, l := b.k, b.l
	sharedBytes := k.SharedBytes
	if k.DynamicShared >= 0 {
		sharedBytes = k.DynamicShared + int64(l.DynamicSharedBytes)
	}
	b.shared = make([]byte, sharedBytes)
	b.loaded, b.stored = b.loaded[:0], b.stored[:0]
	warps := make([][]*thread, (n+31)/32)
	for t := 0; t < n; t++ {
		th := &thread{regs: make([]uint64, len(k.regs)), tid: [3]int{t % l.Block[0], t / l.Block[0] % l.Block[1], t / (l.Block[0] * l.Block[1])}, lane: t % 32}
		if k.LocalBytes > 0 {
			th.local = make([]byte, k.LocalBytes)
		}
		warps[t/32] = append(warps[t/32], th)
	}
	for {
		progressed := false
		for _, w := range warps {
			ran, err := b.runWarp(w)
			if err != nil {
				return err
			}
			progressed = progressed || ran
		}
		// Every warp ended or waits at a barrier: release the barrier.
		waiting := false
		for _, w := range warps {
			for _, t := range w {
				if t.barrier {
					t.barrier, t.pc, waiting = false, t.pc+1, true
				}
			}
		}
		if !waiting && !progressed {
			return nil
		}
	}
}

// runWarp runs warp w until all its threads ended or wait at a barrier;
// it reports whether it ran anything. The threads at the lowest pc run
// together (reconverging structured branches); a branch that sends them
// two ways is counted divergent.
func (b *block) runWarp(w []*thread) (bool, error) {
	ran, rescan, converged := false, true, false
	pc := -1
	for {
		if rescan {
			// One pass: the lowest pc of the threads still running, and
			// those at it.
			pc = -1
			live := 0
			active := b.active[:0]
			for _, t := range w {
				if t.done || t.barrier {
					continue
				}
				live++
				switch {
				case pc < 0 || t.pc < pc:
					pc, active = t.pc, append(active[:0], t)
				case t.pc == pc:
					active = append(active, t)
				}
			}
			b.active = active
			if pc < 0 {
				return ran, nil
			}
			converged = len(active) == live
		} else {
			// Every live thread ran the last instruction, which moved
			// each to the next: they are still the ones at the lowest pc.
			pc++
		}
		active := b.active
		ran = true
		if pc >= len(b.k.instrs) {
			return ran, fmt.Errorf("emulate: %s ran past its last instruction", b.k.Name)
		}
		in := &b.k.instrs[pc]
		if err := b.exec(in, active); err != nil {
			return ran, err
		}
		rescan = !converged || (in.flow != flowALU && in.flow != flowMemory)
	}
}

// exec runs one instruction for the warp's active threads (those at its
// pc); the guard predicate decides which execute it.
func (b *block) exec(in *instr, active []*thread) error {
	on := b.on[:0]
	for _, t := range active {
		if in.guard < 0 || (t.regs[in.guard] != 0) != in.guardNeg {
			on = append(on, t)
		}
	}
	b.on = on
	b.budget -= int64(len(on))
	if b.budget < 0 {
		return fmt.Errorf("emulate: %s ran more than %d thread instructions (line %d)", b.k.Name, b.l.MaxInstructions, in.line)
	}
	cls := in.cls
	b.c.WarpInstructions[cls]++
	b.c.ThreadInstructions[cls] += int64(len(on))
	switch in.flow {
	case flowBranch:
		b.c.Branches++
		taken := 0
		for _, t := range active {
			t.pc++
		}
		for _, t := range on {
			t.pc = in.target
			taken++
		}
		if taken > 0 && taken < len(active) {
			b.c.DivergentBranches++
		}
		return nil
	case flowBarrier:
		for _, t := range active {
			t.barrier = true // pc advances at release
		}
		return nil
	case flowExit:
		for _, t := range on {
			t.done = true
		}
		for _, t := range active {
			if !t.done {
				t.pc++
			}
		}
		return nil
	case flowMemory:
		if err := b.memoryOp(in, on); err != nil {
			return err
		}
	default:
		if in.f32op != 0 {
			fastF32(in, on)
			break
		}
		for _, t := range on {
			if err := b.alu(in, t); err != nil {
				return err
			}
		}
	}
	if cls == FP32 || cls == FP64 {
		per := int64(1)
		if in.op == "fma" || in.op == "mad" {
			per = 2
		}
		if cls == FP32 {
			b.c.FP32Flops += per * int64(len(on))
		} else {
			b.c.FP64Flops += per * int64(len(on))
		}
	}
	for _, t := range active {
		t.pc++
	}
	return nil
}

// Opcode kinds of instr.flow.
const (
	flowALU = iota
	flowBranch
	flowBarrier
	flowExit
	flowMemory
)

func has(mods []string, m string) bool {
	for _, x := range mods {
		if x == m {
			return true
		}
	}
	return false
}

// typ is the instruction's (last) type modifier.
func typ(mods []string) string {
	for i := len(mods) - 1; i >= 0; i-- {
		if typeSize(mods[i]) > 0 {
			return mods[i]
		}
	}
	return ""
}

func classOf(in *instr) Class {
	t := typ(in.mods)
	switch in.op {
	case "bra":
		return Branch
	case "bar", "barrier":
		return Sync
	case "ld":
		switch {
		case has(in.mods, "global"):
			return LoadGlobal
		case has(in.mods, "shared"):
			return LoadShared
		case has(in.mods, "const"):
			return LoadConst
		}
		return Other
	case "st":
		switch {
		case has(in.mods, "global"):
			return StoreGlobal
		case has(in.mods, "shared"):
			return StoreShared
		}
		return Other
	case "sin", "cos", "ex2", "lg2", "rsqrt", "rcp", "sqrt", "tanh":
		if t == "f32" {
			return SFU
		}
		return FP64
	case "add", "sub", "mul", "fma", "mad", "div", "neg", "abs", "min", "max", "rem", "shl", "shr", "and", "or", "xor", "not", "setp", "selp", "slct", "popc", "clz", "brev", "bfe", "bfi":
		switch t {
		case "f32":
			if in.op == "div" {
				return SFU // a reciprocal and refinement
			}
			return FP32
		case "f64":
			return FP64
		}
		return Int
	}
	return Other
}

// fastF32 runs an FP32 add, mul or fma of register or immediate operands
// (instr.f32op) for the threads on, as alu would, without its general
// decoding.
func fastF32(in *instr, on []*thread) {
	d := in.args[0].reg
	get := func(o *operand, t *thread) float32 {
		if o.kind == opReg {
			return math.Float32frombits(uint32(t.regs[o.reg]))
		}
		return math.Float32frombits(uint32(o.imm))
	}
	a, b := &in.args[1], &in.args[2]
	for _, t := range on {
		x, y := get(a, t), get(b, t)
		var r float32
		switch in.f32op {
		case 1:
			r = x + y
		case 2:
			r = x * y
		default:
			r = float32(float64(x)*float64(y) + float64(get(&in.args[3], t)))
		}
		t.regs[d] = uint64(math.Float32bits(r))
	}
}
