// Package backend is the contract between the tuner and a GPU: a real one
// (backend/cuda: libcuda, NVRTC and NVML through purego, driven by a worker
// process) or a simulated one (backend/sim). The tuner sees only this
// package, so the same strategy runs on either.
//
// Life of a run: Open a backend, Prepare the Problem once (arguments are
// allocated and filled once per run), then for each configuration Compile
// (CPU only, safe to call from many goroutines ahead of the GPU) and Run
// (serialised: one configuration on the GPU at a time). A failure of one
// configuration is reported in its Result, never as an error of the run.
package backend

import (
	"context"
	"time"
)

// Status is the outcome of evaluating one configuration. The names are the
// ones stored in the results database.
type Status string

// The statuses of an evaluation.
const (
	StatusValid              Status = "valid"
	StatusCompileFailed      Status = "compile_failed"
	StatusLaunchFailed       Status = "launch_failed"
	StatusRuntimeFailed      Status = "runtime_failed"
	StatusTimeout            Status = "timeout"
	StatusVerificationFailed Status = "verification_failed"
)

// DeviceInfo describes the GPU behind a backend.
type DeviceInfo struct {
	Backend            string  `json:"backend"` // "cuda" | "sim"
	Index              int     `json:"index"`
	Name               string  `json:"name"`
	UUID               string  `json:"uuid"`
	Driver             string  `json:"driver"` // driver version string
	ComputeMajor       int     `json:"compute_major"`
	ComputeMinor       int     `json:"compute_minor"`
	SMs                int     `json:"sms"`
	MemoryBytes        int64   `json:"memory_bytes"`
	MaxThreadsPerBlock int     `json:"max_threads_per_block"`
	SMClockMHz         int     `json:"sm_clock_mhz"`     // current SM clock
	MaxSMClockMHz      int     `json:"max_sm_clock_mhz"` // highest supported SM clock
	MemClockMHz        int     `json:"mem_clock_mhz"`
	PowerLimitW        float64 `json:"power_limit_w"` // enforced power limit
	MinPowerLimitW     float64 `json:"min_power_limit_w"`
	MaxPowerLimitW     float64 `json:"max_power_limit_w"`
	HasEnergyCounter   bool    `json:"has_energy_counter"`

	// Occupancy limits as the driver reports them (cuDeviceGetAttribute);
	// 0 where the backend does not report them. Bytes and registers.
	WarpSize                     int   `json:"warp_size,omitempty"`
	MaxThreadsPerSM              int   `json:"max_threads_per_sm,omitempty"`
	MaxBlocksPerSM               int   `json:"max_blocks_per_sm,omitempty"`
	RegistersPerSM               int   `json:"registers_per_sm,omitempty"`
	MaxRegistersPerBlock         int   `json:"max_registers_per_block,omitempty"`
	SharedMemoryPerSM            int   `json:"shared_memory_per_sm,omitempty"`
	SharedMemoryPerBlock         int   `json:"shared_memory_per_block,omitempty"`
	SharedMemoryPerBlockOptin    int   `json:"shared_memory_per_block_optin,omitempty"`
	ReservedSharedMemoryPerBlock int   `json:"reserved_shared_memory_per_block,omitempty"`
	L2Bytes                      int64 `json:"l2_bytes,omitempty"`
	// From NVML (read-only): the default power limit (W) and the supported
	// SM clocks (MHz, descending) keyed by supported memory clock (MHz).
	DefaultPowerLimitW float64       `json:"default_power_limit_w,omitempty"`
	SupportedClocksMHz map[int][]int `json:"supported_clocks_mhz,omitempty"`
}

// ArgKind tells scalars from device buffers.
type ArgKind string

// Kinds of kernel arguments.
const (
	ArgScalar ArgKind = "scalar"
	ArgVector ArgKind = "vector" // device buffer passed as a pointer
)

// Fill says how a buffer is initialised.
type Fill struct {
	Type  string  `json:"type"`  // "Constant" | "Random" | "BinaryRaw"
	Value float64 `json:"value"` // constant value; for Random the upper bound of U[0, Value) (1 if 0)
	Seed  int64   `json:"seed"`  // Random: generator seed (fixed default so runs repeat)
	File  string  `json:"file"`  // BinaryRaw: absolute path of raw little-endian data of Arg.Type
}

// Arg is one kernel argument with every size already evaluated.
type Arg struct {
	Name   string  `json:"name"`
	Type   string  `json:"type"` // T1 type: float, double, int32, uint32, int64, uint64, int16, uint16, int8, uint8, bool, half, float2, float4, double2 ...
	Kind   ArgKind `json:"kind"`
	Count  int64   `json:"count"`  // vector: number of elements of Type
	Scalar float64 `json:"scalar"` // scalar: value, converted to Type with exact C width
	Fill   Fill    `json:"fill"`   // vector: initial contents
	Output bool    `json:"output"` // compared with the reference after a verification launch
	// Constant (T1 MemType "Constant"): the vector is also copied into the
	// module's __constant__ symbol of the same name when the kernel
	// declares one; it stays a pointer parameter in its position, as
	// Kernel Tuner passes its cmem_args.
	Constant bool `json:"constant"`
}

// Verification says how outputs are checked. For each output argument the
// expected contents are either a Fill (from T1 ReferenceArguments) or the
// outputs of a reference configuration, saved by the backend into
// ReferenceDir when a Job with SaveReference runs.
type Verification struct {
	Method    string          `json:"method"`    // AbsoluteDifference | SideBySideComparison | SideBySideRelativeComparison
	Threshold float64         `json:"threshold"` // largest acceptable error
	Expected  map[string]Fill `json:"expected"`  // output argument name -> expected contents
	// ReferenceDir holds <arg>.bin files written by a SaveReference run;
	// used for outputs not in Expected.
	ReferenceDir string `json:"reference_dir"`
}

// Problem is what stays the same across the configurations of a run.
type Problem struct {
	KernelName      string        `json:"kernel_name"`
	Source          string        `json:"source"`      // kernel source text
	SourceName      string        `json:"source_name"` // file name, for compiler messages
	Language        string        `json:"language"`    // "CUDA"
	CompilerOptions []string      `json:"compiler_options"`
	Args            []Arg         `json:"args"`
	Verification    *Verification `json:"verification,omitempty"` // nil: outputs are not checked
}

// Define is one -Dname=value passed to the compiler.
type Define struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Work is the simulated GPU's description of one configuration, evaluated
// from the spec's Gtune.Simulation section. Ignored by real GPUs.
type Work struct {
	Flops        float64 `json:"flops"`         // floating-point operations per launch
	Bytes        float64 `json:"bytes"`         // device-memory bytes per launch
	Registers    int     `json:"registers"`     // registers per thread
	SharedMemory int     `json:"shared_memory"` // static shared memory per thread block, bytes
	Efficiency   float64 `json:"efficiency"`    // 0..1
	Invalid      bool    `json:"invalid"`       // computes a wrong answer
	CompileFails bool    `json:"compile_fails"`
}

// Job is one configuration to compile and measure.
type Job struct {
	Key     string   `json:"key"`     // canonical configuration key (values joined by ",")
	Defines []Define `json:"defines"` // -D NAME=VALUE for the compiler: the tunable parameters, in spec order, and the defines Kernel Tuner adds
	// Source, when not empty, is this configuration's kernel source in
	// place of Problem.Source (Kernel Tuner's loop-unroll parameters
	// rewrite it). The compiler reads it in this process; the worker never
	// needs it, so it does not travel.
	Source             string        `json:"-"`
	Grid               [3]int        `json:"grid"`  // thread blocks per dimension
	Block              [3]int        `json:"block"` // threads per thread block per dimension
	DynamicSharedBytes int           `json:"dynamic_shared_bytes"`
	Iterations         int           `json:"iterations"`    // timed launches after one warm-up
	Energy             bool          `json:"energy"`        // also run the energy window
	EnergyWindow       time.Duration `json:"energy_window"` // length of the back-to-back window
	Timeout            time.Duration `json:"timeout"`       // the whole Run, after which the configuration is a timeout
	Verify             bool          `json:"verify"`        // run one verification launch against Problem.Verification
	SaveReference      bool          `json:"save_reference"`
	Work               *Work         `json:"work,omitempty"`
	// Settings are GPU settings this configuration asks for (from the
	// tunable parameters nvml_gr_clock, nvml_mem_clock, nvml_pwr_limit, as
	// Kernel Tuner names them); nil when the space has none. A backend that
	// may not apply them reports the configuration as failed.
	Settings *Settings `json:"settings,omitempty"`
	// Protocol, when set, measures energy with repeated trials cut from
	// one continuous run (measure.RunProtocol) instead of one window of
	// EnergyWindow.
	Protocol *EnergyProtocol `json:"protocol,omitempty"`
}

// Settings are GPU settings as tunable parameters; 0 means "leave as is".
type Settings struct {
	CoreClockMHz int     `json:"core_clock_mhz"`
	MemClockMHz  int     `json:"mem_clock_mhz"`
	PowerLimitW  float64 `json:"power_limit_w"`
}

// Reserved names of the tunable parameters that are GPU settings (Kernel
// Tuner's cache names, so caches interoperate). They are not passed to the
// compiler.
const (
	ParamCoreClock  = "nvml_gr_clock"
	ParamMemClock   = "nvml_mem_clock"
	ParamPowerLimit = "nvml_pwr_limit"
)

// Binary is a compiled kernel ready for Run.
type Binary struct {
	Image     []byte  `json:"image"` // CUBIN or PTX
	Log       string  `json:"log"`
	CompileMs float64 `json:"compile_ms"`
}

// CompileError is returned by Compile when the compiler rejects the source.
// The tuner records the configuration as compile_failed with Log as reason.
type CompileError struct {
	Log string
}

func (e *CompileError) Error() string { return "compile failed: " + e.Log }

// Energy holds one energy window's observations.
type Energy struct {
	WindowS           float64 `json:"window_s"`            // length of the window, s
	Launches          int     `json:"launches"`            // launches inside the window
	EnergyJ           float64 `json:"energy_j"`            // counter difference over the window, J
	EnergyPerLaunchJ  float64 `json:"energy_per_launch_j"` // J
	MeanPowerW        float64 `json:"mean_power_w"`        // EnergyJ / WindowS, W
	SMClockMHz        float64 `json:"sm_clock_mhz"`        // observed during the window
	MemClockMHz       float64 `json:"mem_clock_mhz"`       // observed during the window
	TemperatureC      float64 `json:"temperature_c"`       // at the end of the window
	ClockEventReasons uint64  `json:"clock_event_reasons"` // NVML clock-event-reason bitmask, OR over the window
	Method            string  `json:"method"`              // how energy was measured, e.g. "nvml-energy-counter"

	// Added with the measurement protocol (package measure); zero where a
	// backend does not measure them.
	IdlePowerW       float64   `json:"idle_power_w,omitempty"`       // idle power of this device state, W
	DynamicEnergyJ   float64   `json:"dynamic_energy_j,omitempty"`   // EnergyJ − IdlePowerW·WindowS, J
	PowerThrottleS   float64   `json:"power_throttle_s,omitempty"`   // power-cap throttle time inside the window, s
	ThermalThrottleS float64   `json:"thermal_throttle_s,omitempty"` // thermal throttle time inside the window, s
	Throttled        bool      `json:"throttled,omitempty"`          // thermal or hardware slowdown seen: the window is suspect
	TrialsJ          []float64 `json:"trials_j,omitempty"`           // energy per launch of each trial, J; EnergyPerLaunchJ is their median
	CILowJ           float64   `json:"ci_low_j,omitempty"`           // bootstrap 95 % interval of the median energy per launch, J
	CIHighJ          float64   `json:"ci_high_j,omitempty"`          // J
	CV               float64   `json:"cv,omitempty"`                 // coefficient of variation of the trials
	Unstable         bool      `json:"unstable,omitempty"`           // CV above the protocol's flag (2 %)
	WarmupS          float64   `json:"warmup_s,omitempty"`           // warm-up before the trials, s
	GPUSeconds       float64   `json:"gpu_seconds,omitempty"`        // GPU time the energy measurement took (warm-up included), s
	SampleEnergyJ    float64   `json:"sample_energy_j,omitempty"`    // sample-buffer integral over the same span as EnergyJ (cross-check), J
}

// EnergyProtocol configures repeated energy trials (measure.Protocol);
// zero fields take measure's defaults.
type EnergyProtocol struct {
	Trials      int     `json:"trials"`       // at most (5)
	MinTrials   int     `json:"min_trials"`   // before early stopping (3)
	TargetCI    float64 `json:"target_ci"`    // stop once the 95 % interval's half-width / median is below this (0.01)
	CVFlag      float64 `json:"cv_flag"`      // flag a configuration above this CV (0.02)
	Warmup      bool    `json:"warmup"`       // warm up until the temperature is steady before the first window
	WarmupSlope float64 `json:"warmup_slope"` // °C/s (0.25)
	WarmupMaxS  float64 `json:"warmup_max_s"` // s (5)
}

// Result is the outcome of running one configuration.
type Result struct {
	Status             Status    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Registers          int       `json:"registers"`             // per thread, as compiled
	SharedStaticBytes  int       `json:"shared_static_bytes"`   // per thread block
	LocalBytes         int       `json:"local_bytes"`           // per thread
	MaxThreadsPerBlock int       `json:"max_threads_per_block"` // as compiled
	TimesMs            []float64 `json:"times_ms"`              // one per timed launch
	Energy             *Energy   `json:"energy,omitempty"`
	MaxError           float64   `json:"max_error"`    // largest error found by verification
	BenchmarkMs        float64   `json:"benchmark_ms"` // wall time of Run, ms
	// ArgumentMismatch marks a launch_failed whose cause is the argument
	// list: the compiled kernel's parameters (count or byte sizes) differ
	// from Problem.Args, so it was never launched. Every configuration of a
	// spec usually shares the cause, so the tuner stops rather than record
	// each.
	ArgumentMismatch bool `json:"argument_mismatch,omitempty"`
}

// Resources are what the compiler allotted to one compiled configuration:
// the inputs of theoretical occupancy (package occupancy) besides the
// launch geometry. The same quantities appear in Result after a Run.
type Resources struct {
	Registers          int `json:"registers"`             // per thread
	SharedStaticBytes  int `json:"shared_static_bytes"`   // static shared memory per thread block, bytes (dynamic shared memory is Job.DynamicSharedBytes)
	LocalBytes         int `json:"local_bytes"`           // local memory (spills, stack) per thread, bytes
	MaxThreadsPerBlock int `json:"max_threads_per_block"` // the largest thread block the compiled kernel can launch with
}

// ResourceReporter is an optional capability of a Backend: reading a
// compiled configuration's Resources without launching it, so that
// occupancy-guided strategies (multi-kernel-autotuning-performance-
// energy.md, Algorithms 1 and 2) can reduce the search space before
// measuring anything. b is what Compile returned for j; like Compile,
// Resources needs a prepared problem on backends that compile against
// it. It is cheap next to Run (backend/cuda loads the module in its
// worker and reads cuFuncGetAttribute; backend/sim decodes the Work) and
// safe for concurrent use (backends serialise it with Run as needed).
// Errors: a binary this backend did not make, or a module the driver
// cannot load (the message names the configuration, j.Key).
type ResourceReporter interface {
	Resources(ctx context.Context, j *Job, b *Binary) (Resources, error)
}

// Backend is a GPU, real or simulated.
type Backend interface {
	// Device describes the GPU.
	Device() DeviceInfo
	// Prepare allocates and fills the arguments of p. It returns an error
	// for a problem that cannot run at all (e.g. out of device memory).
	Prepare(ctx context.Context, p *Problem) error
	// Compile builds the kernel for one configuration on the CPU. It is
	// safe for concurrent use. A compiler rejection is a *CompileError.
	Compile(ctx context.Context, j *Job) (*Binary, error)
	// Run launches and measures a compiled configuration. Failures of the
	// configuration (launch, runtime, timeout, verification) are reported
	// in the Result; an error means the backend itself is unusable.
	Run(ctx context.Context, j *Job, b *Binary) (*Result, error)
	// Close releases the GPU (and stops any worker process).
	Close() error
}
