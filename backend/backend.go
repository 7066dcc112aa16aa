// Package backend is the contract between the tuner and a GPU: a real one
// (backend/cuda: libcuda, NVRTC and NVML through purego, driven by a worker
// process) or a simulated one (backend/sim). The tuner sees only this
// package, so the same strategy runs on either.
//
// Life of a run: Open a backend, Prepare the Problem once (each kernel's
// arguments are allocated and filled once per run), then for each
// configuration Compile every kernel instance (CPU only, safe to call from
// many goroutines ahead of the GPU) and Run the Plan of launches
// (serialised: one plan on the GPU at a time). A backend keeps only the
// primitives (load, launch on a stream, events, sensors); what is measured,
// and in which order, is package measure's (measure.Run). A failure of one
// configuration is reported in its Result, never as an error of the run.
package backend

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/model"
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

// DeviceInfo describes the GPU behind a backend as its driver (or
// simulator) reports it: device.Local. device.FromLocal merges it with the
// device database's description of the same GPU.
type DeviceInfo = device.Local

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
// expected contents are either a Fill (from T1 ReferenceArguments) or,
// with Reference, the outputs of the reference configuration, which a
// backend keeps when a plan with SaveReference runs on it (each GPU its
// own: nothing goes through a file).
type Verification struct {
	Method    string          `json:"method"`    // AbsoluteDifference | SideBySideComparison | SideBySideRelativeComparison
	Threshold float64         `json:"threshold"` // largest acceptable error
	Expected  map[string]Fill `json:"expected"`  // output argument name -> expected contents
	// Reference: outputs not in Expected are compared with the reference
	// configuration's (SaveReference).
	Reference bool `json:"reference,omitempty"`
}

// Kernel is one kernel of a problem and what stays the same across its
// configurations: source, compiler options, arguments, verification.
type Kernel struct {
	KernelName      string        `json:"kernel_name"`
	Source          string        `json:"source"`      // kernel source text
	SourceName      string        `json:"source_name"` // file name, for compiler messages
	Language        string        `json:"language"`    // "CUDA"
	CompilerOptions []string      `json:"compiler_options"`
	Args            []Arg         `json:"args"`
	Verification    *Verification `json:"verification,omitempty"` // nil: outputs are not checked
}

// Problem is what stays the same across the configurations of a run: one
// kernel, or several that run together (each with its own arguments).
// Job.Kernel indexes Kernels.
type Problem struct {
	Kernels []Kernel `json:"kernels"`
	// Energy says the run measures energy: a GPU is then read idle when
	// the problem is prepared (about 1 s, the idle power and the energy
	// counter's update period from a GPU that has run nothing yet). A
	// run of time alone skips it.
	Energy bool `json:"energy,omitempty"`
}

// Single returns a problem of one kernel.
func Single(k Kernel) *Problem { return &Problem{Kernels: []Kernel{k}} }

// Define is one -Dname=value passed to the compiler.
type Define struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Work is the simulated GPU's description of one configuration
// (model.Work: the model's input, defined where the model is, below
// this package).
type Work = model.Work

// Job is one kernel instance of a configuration: what to compile and its
// launch geometry.
type Job struct {
	Kernel  int      `json:"kernel"`  // index into Problem.Kernels
	Key     string   `json:"key"`     // canonical configuration key (values joined by ",")
	Defines []Define `json:"defines"` // -D NAME=VALUE for the compiler: the tunable parameters, in spec order, and the defines Kernel Tuner adds
	// Source, when not empty, is this configuration's kernel source in
	// place of Kernel.Source (Kernel Tuner's loop-unroll parameters
	// rewrite it). The compiler reads it in this process; the worker never
	// needs it, so it does not travel.
	Source             string `json:"-"`
	Grid               [3]int `json:"grid"`  // thread blocks per dimension
	Block              [3]int `json:"block"` // threads per thread block per dimension
	DynamicSharedBytes int    `json:"dynamic_shared_bytes"`
	Work               *Work  `json:"work,omitempty"`
}

// Geometry is the job's launch geometry, as the model reads it.
func (j *Job) Geometry() model.Geometry {
	return model.Geometry{Grid: j.Grid, Block: j.Block, DynamicSharedBytes: j.DynamicSharedBytes}
}

// Settings are GPU settings as tunable parameters (model.Settings).
type Settings = model.Settings

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
	// PTX is the kernel's PTX as the compiler made it on the way to
	// Image (nil where the backend makes none: the simulator). The tuner
	// keeps it with the configuration's evaluation (store.KernelPTX), so
	// that package emulate can count the configuration's work later on a
	// machine without GPU or compiler
	// (performance-projection-heterogeneous-gpus.md section IV-C). It is
	// not what runs: the GPU worker is sent Image alone.
	PTX []byte `json:"ptx,omitempty"`
}

// CompileError is returned by Compile when the compiler rejects the source.
// The tuner records the configuration as compile_failed with Log as reason.
type CompileError struct {
	Log string
	// Process: the compiler's process died or was killed at its deadline
	// (package compileproc), which says nothing certain about the source:
	// the compile cache does not keep such a failure.
	Process bool
}

func (e *CompileError) Error() string { return "compile failed: " + e.Log }

// Launch is one kernel launch of a plan: a compiled kernel instance and
// the stream it is issued on. Launches on one stream run in plan order;
// launches on different streams may run concurrently, their thread blocks
// placed by the GPU's block scheduler in issue order
// (symbiotic-scheduling-concurrent-kernels.md, section 3).
type Launch struct {
	Job    *Job    `json:"job"`
	Binary *Binary `json:"binary"`
	Stream int     `json:"stream"` // 0, 1, ...: one CUDA stream each
}

// Plan is the unit a backend runs and measures: launches in issue order,
// the GPU settings they run under, and what to measure. One kernel on
// stream 0 is a plan of one launch (SingleLaunch).
type Plan struct {
	Key      string          `json:"key"` // the configuration's key (the launches' keys for several kernels)
	Launches []Launch        `json:"launches"`
	Settings *Settings       `json:"settings,omitempty"` // nil: the GPU as found
	Measure  measure.Request `json:"measure"`
	// Timeout bounds the whole Run, after which the configuration is a
	// timeout (0: none).
	Timeout time.Duration `json:"timeout"`
	// Repeat numbers the measurements of one plan (0: the first), so
	// that a backend whose answers are decided by the plan (the
	// simulated GPU's noise) answers a repeat afresh.
	Repeat int `json:"repeat,omitempty"`
}

// SingleLaunch is the plan of one compiled kernel instance on stream 0.
func SingleLaunch(j *Job, b *Binary, settings *Settings, m measure.Request, timeout time.Duration) *Plan {
	return &Plan{Key: j.Key, Launches: []Launch{{Job: j, Binary: b}}, Settings: settings, Measure: m, Timeout: timeout}
}

// Streams is the number of streams the plan uses (highest Stream + 1).
func (p *Plan) Streams() int {
	n := 1
	for _, l := range p.Launches {
		n = max(n, l.Stream+1)
	}
	return n
}

// LaunchResult is what was found of one launch of a plan: the compiled
// kernel's resources and its own event times.
type LaunchResult struct {
	Registers          int       `json:"registers"`             // per thread, as compiled
	SharedStaticBytes  int       `json:"shared_static_bytes"`   // per thread block
	LocalBytes         int       `json:"local_bytes"`           // per thread
	MaxThreadsPerBlock int       `json:"max_threads_per_block"` // as compiled
	TimesMs            []float64 `json:"times_ms"`              // one per timed run of the plan, ms
}

// Result is the outcome of running one plan.
type Result struct {
	Status   Status         `json:"status"`
	Reason   string         `json:"reason,omitempty"`
	Launches []LaunchResult `json:"launches"` // indexed like Plan.Launches
	// TimesMs are the whole plan's times, one per timed run, ms.
	TimesMs []float64 `json:"times_ms"`
	// Observations are every measured quantity with its unit and method
	// (measure.Run): the whole plan's and each launch's.
	Observations measure.Observations `json:"observations,omitempty"`
	MaxError     float64              `json:"max_error"`    // largest error found by verification
	BenchmarkMs  float64              `json:"benchmark_ms"` // GPU time of the measurement, ms
	// ArgumentMismatch marks a launch_failed whose cause is the argument
	// list: the compiled kernel's parameters (count or byte sizes) differ
	// from Kernel.Args, so it was never launched. Every configuration of a
	// spec usually shares the cause, so the tuner stops rather than record
	// each.
	ArgumentMismatch bool `json:"argument_mismatch,omitempty"`
	// BadBinaries are the launches (indices into Plan.Launches) whose
	// binary could not be used: an image this backend's Compile did not
	// make, or one the driver cannot load. Status is then launch_failed.
	// A binary from a compile cache that fails so is stale or corrupt:
	// the tuner discards it and compiles the kernel again.
	BadBinaries []int `json:"bad_binaries,omitempty"`
}

// BinaryError is an error of Run whose cause is launch Launch's binary:
// one this backend's Compile did not make (or made for another device).
// The tuner discards such a binary from the compile cache and compiles
// it again; a fresh binary that fails so ends the run.
type BinaryError struct {
	Launch int
	Err    error
}

func (e *BinaryError) Error() string { return e.Err.Error() }
func (e *BinaryError) Unwrap() error { return e.Err }

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
	// Device describes the GPU: the device database's description of it
	// overridden by what its driver answers (device.FromLocal), with those
	// answers as found in Description.Local (DeviceInfo).
	Device() device.Description
	// Prepare allocates and fills the arguments of p. It returns an error
	// for a problem that cannot run at all (e.g. out of device memory).
	Prepare(ctx context.Context, p *Problem) error
	// Compile builds the kernel for one configuration on the CPU. It is
	// safe for concurrent use. A compiler rejection is a *CompileError.
	Compile(ctx context.Context, j *Job) (*Binary, error)
	// Run launches and measures a plan with measure.Run. Failures of the
	// configuration (launch, runtime, timeout, verification) are reported
	// in the Result; an error means the backend itself is unusable.
	Run(ctx context.Context, p *Plan) (*Result, error)
	// Close releases the GPU (and stops any worker process).
	Close() error
}

// Record copies what measure.Run measured into r: the plan's and each
// launch's times, the observations, the verification's verdict (a failed
// one makes r verification_failed) and the GPU time; notes of missing
// sensor readings join Reason. r.Launches must already hold one entry per
// launch.
func (r *Result) Record(o *measure.Outcome) {
	if v := o.Verdict; v != nil {
		r.MaxError = v.MaxError
		if v.Failure != "" {
			r.Status, r.Reason = StatusVerificationFailed, v.Failure
		}
	}
	r.TimesMs = make([]float64, len(o.Times))
	for i, t := range o.Times {
		r.TimesMs[i] = t.PlanMs
		for k := range r.Launches {
			if k < len(t.LaunchMs) {
				r.Launches[k].TimesMs = append(r.Launches[k].TimesMs, t.LaunchMs[k])
			}
		}
	}
	r.Observations = o.Observations
	r.BenchmarkMs = o.GPUSeconds * 1e3
	for _, n := range o.Notes {
		if r.Reason == "" {
			r.Reason = n
		} else {
			r.Reason += "; " + n
		}
	}
}

// CheckCompilerOptions checks compiler options (--compiler-option, a
// spec's CompilerOptions passed to NVRTC) as far as can be done without
// NVRTC (the simulated GPU compiles nothing, so garbage was accepted
// there and kept apart under its own key): each is one option, "-NAME"
// or "--NAME[=VALUE]", without control characters or spaces around it.
// Errors: the first bad one, as bad input (badinput).
func CheckCompilerOptions(opts []string) error {
	for _, o := range opts {
		switch {
		case strings.TrimSpace(o) != o || o == "":
			return badinput.New("--compiler-option %q: an option has no spaces around it", o)
		case !strings.HasPrefix(o, "-") || o == "-" || o == "--":
			return badinput.New("--compiler-option %q: not an NVRTC option (they start with - or --, e.g. -ftz=true, --use_fast_math, -DNAME=VALUE)", o)
		case strings.ContainsFunc(o, unicode.IsControl):
			return badinput.New("--compiler-option %q: holds a control character", o)
		}
	}
	return nil
}
