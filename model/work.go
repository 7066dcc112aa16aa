package model

import "fmt"

// Work is the simulated GPU's description of one configuration, evaluated
// from the spec's Gtune.Simulation section (backend.Work is this type):
// the model's input. Ignored by real GPUs.
type Work struct {
	Flops float64 `json:"flops"` // FP32 floating-point operations per launch (an FMA is 2)
	Bytes float64 `json:"bytes"` // device-memory bytes per launch
	// WriteBytes is the part of Bytes that is stored (0: unknown, all
	// taken as loads); L2Bytes the bytes loaded and stored through L2
	// per launch, what the blocks' L1 does not serve (0: unknown). The
	// emulator counts both (emulate.Counts.Work); a spec may declare them.
	WriteBytes float64 `json:"write_bytes,omitempty"`
	L2Bytes    float64 `json:"l2_bytes,omitempty"`
	// LoadWidth is the bytes a thread loads from global memory per load
	// instruction, on average (4 for one float, 16 for a float4; 0:
	// unknown, taken as 16): the projection reads the profile's 4-byte
	// load curve for narrow loads (emulate.Counts.Work counts it).
	LoadWidth float64 `json:"load_width,omitempty"`
	// The other instruction classes and shared memory, per launch, for
	// kernels that are bound by them (package model; the microbenchmarks
	// of package probe): FP64 operations, 32-bit integer multiply-adds,
	// special-function operations (__sinf, exp2, rsqrt), shared-memory
	// bytes loaded (SharedConflict-way bank conflicts: 1 or 0 none).
	FP64Flops float64 `json:"fp64_flops,omitempty"`
	// FP64TensorFlops are FP64 operations on the tensor cores (DMMA: what
	// cuBLAS's DGEMM issues on sm_80 and later), run at the GPU's FP64
	// tensor-core rate, or at its FP64 rate where it has none.
	FP64TensorFlops float64 `json:"fp64_tensor_flops,omitempty"`
	IntOps          float64 `json:"int_ops,omitempty"`
	SFUOps          float64 `json:"sfu_ops,omitempty"`
	SharedBytes     float64 `json:"shared_bytes,omitempty"`
	SharedConflict  int     `json:"shared_conflict,omitempty"`
	Registers       int     `json:"registers"`     // registers per thread
	SharedMemory    int     `json:"shared_memory"` // static shared memory per thread block, bytes
	Efficiency      float64 `json:"efficiency"`    // 0..1
	Invalid         bool    `json:"invalid"`       // computes a wrong answer
	CompileFails    bool    `json:"compile_fails"`
	// CompileCrashes: the compiler's process dies on this configuration
	// (a compile worker crashes; in-process it is a compile failure).
	CompileCrashes bool `json:"compile_crashes,omitempty"`
}

// Settings are GPU settings as tunable parameters (backend.Settings is
// this type); 0 means "leave as is".
type Settings struct {
	CoreClockMHz int     `json:"core_clock_mhz"`
	MemClockMHz  int     `json:"mem_clock_mhz"`
	PowerLimitW  float64 `json:"power_limit_w"`
}

// StateKey names the device state these settings put the GPU in ("" for
// the GPU as found): measure.Meter measures idle power once per state.
func (s *Settings) StateKey() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%d/%d/%g", s.CoreClockMHz, s.MemClockMHz, s.PowerLimitW)
}

// Geometry is a launch's geometry as the model reads it: thread blocks
// per grid dimension, threads per thread-block dimension, dynamic shared
// memory per thread block (bytes). backend.Job.Geometry gives a job's.
type Geometry struct {
	Grid               [3]int
	Block              [3]int
	DynamicSharedBytes int
}
