package emulate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gtune/gtune/backend"
)

// Work scales the emulated blocks' counts to a grid of blocks thread
// blocks, as performance-projection-heterogeneous-gpus.md section IV-C2
// extrapolates a single workgroup's statistics to the full kernel (every
// block taken to do what the emulated ones did on average): FP32 and
// FP64 FLOP, integer and special-function operations (per thread),
// shared-memory bytes as the wavefronts served (128 bytes each: bank
// conflicts included, so SharedConflict is 1), and global memory through
// the caches (issue 49): DRAM bytes as the sample's footprint (the
// distinct 32-byte sectors all the emulated blocks loaded and stored,
// per block: what the blocks of a wave resident together fetch once),
// of them WriteBytes the stored sectors, and L2Bytes as each block's own
// footprint (its reuse within the block served by L1). Registers and
// static shared memory are the compiler's, not the emulator's: the
// caller sets them. Counts of one block (Emulate) have no reuse across
// blocks to show: their DRAM bytes are the block's footprint.
func (c *Counts) Work(blocks int) backend.Work {
	n := float64(blocks) / float64(max(c.Blocks, 1))
	width := 0.0
	if loads := c.ThreadInstructions[LoadGlobal]; loads > 0 {
		width = float64(c.GlobalLoadBytes) / float64(loads)
	}
	return backend.Work{
		LoadWidth:      width,
		Flops:          n * float64(c.FP32Flops),
		FP64Flops:      n * float64(c.FP64Flops),
		IntOps:         n * float64(c.ThreadInstructions[Int]),
		SFUOps:         n * float64(c.ThreadInstructions[SFU]),
		Bytes:          n * 32 * float64(c.SampleLoadFootprint+c.SampleStoreFootprint),
		WriteBytes:     n * 32 * float64(c.SampleStoreFootprint),
		L2Bytes:        n * 32 * float64(c.LoadFootprint+c.StoreFootprint),
		SharedBytes:    n * 128 * float64(c.SharedWavefronts),
		SharedConflict: 1,
	}
}

// Find returns the entry of kernels named name: an extern "C" kernel
// keeps its name, a C++ one is mangled (_Z<length><name>...), as NVRTC's
// lowered name is; nil where none is.
func Find(kernels []*Kernel, name string) *Kernel {
	var k *Kernel
	mangled := "_Z" + strconv.Itoa(len(name)) + name
	for _, e := range kernels {
		if e.Name == name {
			return e
		}
		if k == nil && strings.HasPrefix(e.Name, mangled) {
			k = e
		}
	}
	return k
}

// JobWork is the work of the launch j of kernel k (its arguments made
// by ArgsOf) from emulating j's first thread blocks (those of its centre
// where the first move no global memory) in the PTX text
// (EmulateSample, DefaultSampleBlocks and DefaultSampleInstructions),
// scaled to j's grid (Counts.Work); static shared memory is the PTX's,
// registers are left 0 (the compiler allots them after PTX: the caller
// sets them). It returns the block's counts too. Errors: a text that
// does not parse, no entry of k's name, an argument ArgsOf cannot make,
// an instruction the emulator does not support.
func JobWork(text []byte, k backend.Kernel, j *backend.Job) (backend.Work, *Counts, error) {
	ks, err := Parse(string(text))
	if err != nil {
		return backend.Work{}, nil, err
	}
	e := Find(ks, k.KernelName)
	if e == nil {
		return backend.Work{}, nil, fmt.Errorf("the PTX has no entry %s", k.KernelName)
	}
	args, err := ArgsOf(k)
	if err != nil {
		return backend.Work{}, nil, err
	}
	l := Launch{Grid: j.Grid, Block: j.Block, Args: args, DynamicSharedBytes: j.DynamicSharedBytes}
	c, err := e.EmulateSample(l, DefaultSampleBlocks, DefaultSampleInstructions)
	if err != nil {
		return backend.Work{}, nil, err
	}
	if c.GlobalLoadRequests+c.GlobalStoreRequests == 0 {
		// The first blocks of a stencil's grid lie on the domain's
		// border, where its threads return before touching memory (the
		// stencil at 256,1 was projected with no DRAM traffic from
		// them): take the sample from the grid's centre instead. Not
		// always: a grid-stride kernel's last blocks may have nothing
		// to do (blackscholes staged in 120 KiB chunks has 410 chunks
		// for up to 1,056 blocks), where its first are the busy ones.
		l.BlockIdx = [3]int{j.Grid[0] / 2, j.Grid[1] / 2, j.Grid[2] / 2}
		if c, err = e.EmulateSample(l, DefaultSampleBlocks, DefaultSampleInstructions); err != nil {
			return backend.Work{}, nil, err
		}
	}
	w := c.Work(j.Grid[0] * j.Grid[1] * j.Grid[2])
	w.Registers, w.SharedMemory = 0, int(e.SharedBytes)
	return w, c, nil
}
