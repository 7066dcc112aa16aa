// Package spec reads a kernel specification: the auto-tuning community's T1
// input format (../shared/datasets/formats/T1_1.0.0_input-schema.json), as
// JSON or YAML with the same field names, plus gtune's own top-level object
// "Gtune". Every expression in the file is parsed once, at load time, by
// package expr; a file that loads is a file whose expressions all parse.
package spec

// File mirrors the T1 document as written (field names are T1's). It is the
// raw, unvalidated form; Load turns it into a Spec.
type File struct {
	General             *General            `json:"General,omitempty" yaml:"General,omitempty"`
	ConfigurationSpace  ConfigurationSpace  `json:"ConfigurationSpace" yaml:"ConfigurationSpace"`
	Search              *Search             `json:"Search,omitempty" yaml:"Search,omitempty"`
	Budget              []BudgetEntry       `json:"Budget,omitempty" yaml:"Budget,omitempty"`
	KernelSpecification KernelSpecification `json:"KernelSpecification" yaml:"KernelSpecification"`
	Gtune               *Gtune              `json:"Gtune,omitempty" yaml:"Gtune,omitempty"`
}

// General is T1's General object.
type General struct {
	BenchmarkName string `json:"BenchmarkName,omitempty" yaml:"BenchmarkName,omitempty"`
	OutputFormat  string `json:"OutputFormat,omitempty" yaml:"OutputFormat,omitempty"`
	TimeUnit      string `json:"TimeUnit,omitempty" yaml:"TimeUnit,omitempty"`
	FormatVersion int    `json:"FormatVersion,omitempty" yaml:"FormatVersion,omitempty"`
}

// ConfigurationSpace holds the tunable parameters and the restrictions
// (T1 "Conditions").
type ConfigurationSpace struct {
	TuningParameters []TuningParameter `json:"TuningParameters" yaml:"TuningParameters"`
	Conditions       []Condition       `json:"Conditions,omitempty" yaml:"Conditions,omitempty"`
}

// TuningParameter is one tunable parameter. Values is a Python expression
// that evaluates to a list ("[16*i for i in range(1,9)]").
type TuningParameter struct {
	Name    string `json:"Name" yaml:"Name"`
	Type    string `json:"Type" yaml:"Type"` // int | uint | float | bool | string
	Values  string `json:"Values" yaml:"Values"`
	Default any    `json:"Default,omitempty" yaml:"Default,omitempty"`
}

// Condition is a restriction: a Python boolean expression over parameter
// names. Parameters lists the names it reads, as T1 requires; gtune checks
// the list against the names the expression really reads.
type Condition struct {
	Expression string   `json:"Expression" yaml:"Expression"`
	Parameters []string `json:"Parameters,omitempty" yaml:"Parameters,omitempty"`
}

// Search is T1's strategy selection.
type Search struct {
	Name       string      `json:"Name" yaml:"Name"`
	Attributes []Attribute `json:"Attributes,omitempty" yaml:"Attributes,omitempty"`
}

// Attribute is a strategy hyperparameter.
type Attribute struct {
	Name  string `json:"Name" yaml:"Name"`
	Value any    `json:"Value" yaml:"Value"`
}

// BudgetEntry is one T1 budget entry; Type is TuningDuration (seconds),
// ConfigurationCount or ConfigurationFraction (0..1 of the valid space).
type BudgetEntry struct {
	Type        string  `json:"Type" yaml:"Type"`
	BudgetValue float64 `json:"BudgetValue" yaml:"BudgetValue"`
}

// KernelSpecification is T1's kernel description.
type KernelSpecification struct {
	Language           string              `json:"Language" yaml:"Language"`
	CompilerOptions    []string            `json:"CompilerOptions,omitempty" yaml:"CompilerOptions,omitempty"`
	BenchmarkName      string              `json:"BenchmarkName,omitempty" yaml:"BenchmarkName,omitempty"`
	KernelName         string              `json:"KernelName" yaml:"KernelName"`
	KernelFile         string              `json:"KernelFile" yaml:"KernelFile"`
	GlobalSizeType     string              `json:"GlobalSizeType,omitempty" yaml:"GlobalSizeType,omitempty"` // CUDA (grid in blocks) | OpenCL (total threads)
	LocalSize          Dim3                `json:"LocalSize" yaml:"LocalSize"`
	GlobalSize         Dim3                `json:"GlobalSize" yaml:"GlobalSize"`
	GridDivX           []string            `json:"GridDivX,omitempty" yaml:"GridDivX,omitempty"`
	GridDivY           []string            `json:"GridDivY,omitempty" yaml:"GridDivY,omitempty"`
	GridDivZ           []string            `json:"GridDivZ,omitempty" yaml:"GridDivZ,omitempty"`
	ProblemSize        []any               `json:"ProblemSize,omitempty" yaml:"ProblemSize,omitempty"`   // Kernel Tuner's problem_size: integers or expressions over Gtune.Constants, up to 3
	SharedMemory       any                 `json:"SharedMemory,omitempty" yaml:"SharedMemory,omitempty"` // bytes of dynamic shared memory: integer or expression
	Arguments          []Argument          `json:"Arguments" yaml:"Arguments"`
	ReferenceArguments []ReferenceArgument `json:"ReferenceArguments,omitempty" yaml:"ReferenceArguments,omitempty"`
}

// Dim3 holds the X, Y, Z expressions of a size (missing Y/Z mean "1").
type Dim3 struct {
	X string `json:"X" yaml:"X"`
	Y string `json:"Y,omitempty" yaml:"Y,omitempty"`
	Z string `json:"Z,omitempty" yaml:"Z,omitempty"`
}

// Argument is one kernel argument. Size (vectors) is an integer or an
// expression over ProblemSize, Gtune.Constants and parameter value lists
// (so that max(filter_width) is the largest value of filter_width).
type Argument struct {
	Name       string   `json:"Name" yaml:"Name"`
	Type       string   `json:"Type" yaml:"Type"`
	MemoryType string   `json:"MemoryType" yaml:"MemoryType"`               // Scalar | Vector | Local | Symbol
	MemType    string   `json:"MemType,omitempty" yaml:"MemType,omitempty"` // "Constant": copy into the module's __constant__ symbol of this Name
	AccessType string   `json:"AccessType,omitempty" yaml:"AccessType,omitempty"`
	FillType   string   `json:"FillType,omitempty" yaml:"FillType,omitempty"` // Constant | Random | BinaryRaw
	FillValue  *float64 `json:"FillValue,omitempty" yaml:"FillValue,omitempty"`
	Size       any      `json:"Size,omitempty" yaml:"Size,omitempty"`
	TypeSize   int      `json:"TypeSize,omitempty" yaml:"TypeSize,omitempty"`
	DataSource string   `json:"DataSource,omitempty" yaml:"DataSource,omitempty"`
	RandomSeed *int64   `json:"RandomSeed,omitempty" yaml:"RandomSeed,omitempty"`
	Output     int      `json:"Output,omitempty" yaml:"Output,omitempty"`
}

// ReferenceArgument gives the expected contents of an output argument
// (TargetName) and how to compare.
type ReferenceArgument struct {
	Name                string   `json:"Name" yaml:"Name"`
	TargetName          string   `json:"TargetName" yaml:"TargetName"`
	FillType            string   `json:"FillType" yaml:"FillType"`
	FillValue           *float64 `json:"FillValue,omitempty" yaml:"FillValue,omitempty"`
	DataSource          string   `json:"DataSource,omitempty" yaml:"DataSource,omitempty"`
	RandomSeed          *int64   `json:"RandomSeed,omitempty" yaml:"RandomSeed,omitempty"`
	ValidationMethod    string   `json:"ValidationMethod,omitempty" yaml:"ValidationMethod,omitempty"` // AbsoluteDifference | SideBySideComparison | SideBySideRelativeComparison
	ValidationThreshold *float64 `json:"ValidationThreshold,omitempty" yaml:"ValidationThreshold,omitempty"`
}

// Gtune is gtune's own section. Every field is optional.
type Gtune struct {
	// Objective: "time" (ms, minimise), "energy" (J per launch, minimise),
	// "power" (W, minimise), "edp" (J·s, minimise) or the name of a metric.
	Objective string `json:"Objective,omitempty" yaml:"Objective,omitempty"`
	// ObjectiveDirection overrides the direction: "minimize" | "maximize".
	ObjectiveDirection string `json:"ObjectiveDirection,omitempty" yaml:"ObjectiveDirection,omitempty"`
	// Constants are names usable in every expression of the file: numbers
	// (an integer stays a Python int), bools, strings or lists of them.
	Constants map[string]any `json:"Constants,omitempty" yaml:"Constants,omitempty"`
	// Metrics are user metrics: expressions over observations (time in ms,
	// energy in J, power in W, ...), parameters, constants and earlier
	// metrics, in the order written. Written either as an object
	// {"GB/s": "expression", ...} (order kept) or as a list of RawMetric.
	Metrics MetricList `json:"Metrics,omitempty" yaml:"Metrics,omitempty"`
	// Reference names a configuration whose outputs are the reference for
	// verification (when ReferenceArguments are absent).
	Reference   *Reference      `json:"Reference,omitempty" yaml:"Reference,omitempty"`
	Measurement *RawMeasurement `json:"Measurement,omitempty" yaml:"Measurement,omitempty"`
	Simulation  *RawSimulation  `json:"Simulation,omitempty" yaml:"Simulation,omitempty"`
	// KernelTunerDefines (default true) builds each kernel instance as
	// Kernel Tuner 1.4 does: kernel_tuner=1, grid_size_x/y/z and the
	// block-size names defined, loop_unroll_factor parameters as constexpr
	// (see spec/kerneltuner.go). false passes the tunable parameters as
	// -D and nothing else, for kernels that must not see kernel_tuner.
	KernelTunerDefines *bool `json:"KernelTunerDefines,omitempty" yaml:"KernelTunerDefines,omitempty"`
	// Plausibility changes the checks that flag impossible measurements
	// (package plausibility).
	Plausibility *RawPlausibility `json:"Plausibility,omitempty" yaml:"Plausibility,omitempty"`
	// DeclaredSpace names a declared search space (package beast's Texts:
	// "dgemm", autotuning-gemm-energy-beast.md Figure 3 and section 2.3.2)
	// whose iterators are the tunable parameters and whose filters are
	// restrictions, in place of ConfigurationSpace.TuningParameters (which
	// must then be empty); its device limits are read from Constants
	// (beast.DeviceConstants' names, e.g. max_threads_per_block), and
	// ConfigurationSpace.Conditions still apply.
	DeclaredSpace string `json:"DeclaredSpace,omitempty" yaml:"DeclaredSpace,omitempty"`
}

// RawPlausibility overrides the ceilings a measurement is checked against.
type RawPlausibility struct {
	PeakGFLOPS    float64 `json:"PeakGFLOPS,omitempty" yaml:"PeakGFLOPS,omitempty"`       // FLOP ceiling, GFLOP/s (default: the device's FP32 CUDA-core peak; raise it for tensor-core kernels)
	PeakGBs       float64 `json:"PeakGBs,omitempty" yaml:"PeakGBs,omitempty"`             // device-memory ceiling, GB/s (default: the device's bandwidth)
	OutlierFactor float64 `json:"OutlierFactor,omitempty" yaml:"OutlierFactor,omitempty"` // flag unverified configurations this many times faster than their neighbours (default 10)
}

// RawMetric is a named expression as written. Direction ("minimize" | "maximize",
// default "maximize") is used when the metric is the objective.
type RawMetric struct {
	Name       string `json:"Name" yaml:"Name"`
	Expression string `json:"Expression" yaml:"Expression"`
	Direction  string `json:"Direction,omitempty" yaml:"Direction,omitempty"`
	Unit       string `json:"Unit,omitempty" yaml:"Unit,omitempty"`
}

// Reference selects the reference configuration and the comparison.
type Reference struct {
	Configuration       map[string]any `json:"Configuration" yaml:"Configuration"`
	ValidationMethod    string         `json:"ValidationMethod,omitempty" yaml:"ValidationMethod,omitempty"`
	ValidationThreshold *float64       `json:"ValidationThreshold,omitempty" yaml:"ValidationThreshold,omitempty"`
}

// RawMeasurement holds the measurement settings as written.
type RawMeasurement struct {
	Iterations          *int    `json:"Iterations,omitempty" yaml:"Iterations,omitempty"`                   // timed launches after one warm-up (default 7; at least 1)
	EnergyWindowSeconds float64 `json:"EnergyWindowSeconds,omitempty" yaml:"EnergyWindowSeconds,omitempty"` // with Trials 1: one stand-alone back-to-back window between two energy-counter reads (default 1 s)
	Energy              *bool   `json:"Energy,omitempty" yaml:"Energy,omitempty"`                           // force energy observation on/off (default: when the objective or a metric needs it)
	TimeoutSeconds      float64 `json:"TimeoutSeconds,omitempty" yaml:"TimeoutSeconds,omitempty"`           // per-configuration limit before the worker is killed (default 10 s)
	// Energy protocol (package measure): repeated trials, early stopping,
	// warm-up.
	Trials           int     `json:"Trials,omitempty" yaml:"Trials,omitempty"`                     // energy trials per configuration at most (default 5; 1: one window of EnergyWindowSeconds)
	MinTrials        int     `json:"MinTrials,omitempty" yaml:"MinTrials,omitempty"`               // trials before early stopping (default 3)
	TargetCI         float64 `json:"TargetCI,omitempty" yaml:"TargetCI,omitempty"`                 // stop once the 95 % interval's half-width / median is below this (default 0.01)
	CVFlag           float64 `json:"CVFlag,omitempty" yaml:"CVFlag,omitempty"`                     // flag configurations whose coefficient of variation exceeds this (default 0.02)
	Warmup           *bool   `json:"Warmup,omitempty" yaml:"Warmup,omitempty"`                     // warm up until the temperature is steady before the first window (default true)
	WarmupSlope      float64 `json:"WarmupSlope,omitempty" yaml:"WarmupSlope,omitempty"`           // steady: temperature slope below this, °C/s (default 0.25)
	WarmupMaxSeconds float64 `json:"WarmupMaxSeconds,omitempty" yaml:"WarmupMaxSeconds,omitempty"` // longest warm-up (default 5 s)
	// Thermal is the temperature policy: none, steady (warm up to a
	// thermal steady state first), model (correct energy to
	// ReferenceTemperature with a leakage slope fitted on the warm-up),
	// steady+model or settle (re-measure what was measured warming and could be the best; measure.Thermal*); default steady.
	Thermal              string  `json:"Thermal,omitempty" yaml:"Thermal,omitempty"`
	ReferenceTemperature float64 `json:"ReferenceTemperature,omitempty" yaml:"ReferenceTemperature,omitempty"` // °C, with Thermal model (default 60)
	// Observers are measurements besides time and energy, by the names
	// package measure registers (e.g. "power-samples").
	Observers []string `json:"Observers,omitempty" yaml:"Observers,omitempty"`
}

// RawSimulation describes a kernel's work for the simulated GPU. Each field but
// Device/Noise/Seed is an expression over parameters and constants.
type RawSimulation struct {
	Device       string `json:"Device,omitempty" yaml:"Device,omitempty"`             // device-database id, default "h100_sxm"
	Flops        string `json:"Flops" yaml:"Flops"`                                   // floating-point operations per launch
	Bytes        string `json:"Bytes" yaml:"Bytes"`                                   // bytes moved to/from device memory per launch
	Registers    string `json:"Registers,omitempty" yaml:"Registers,omitempty"`       // registers per thread (default 32)
	SharedMemory string `json:"SharedMemory,omitempty" yaml:"SharedMemory,omitempty"` // static shared memory per thread block, bytes (default 0)
	Efficiency   string `json:"Efficiency,omitempty" yaml:"Efficiency,omitempty"`     // 0..1 factor on achievable throughput (default 1)
	// FP64Flops: double-precision operations per launch (an FMA is 2),
	// run at the GPU's FP64 rate; WriteBytes: the part of Bytes that is
	// stored; L2Bytes: bytes loaded and stored through L2 per launch;
	// SharedBytes: shared-memory bytes loaded per launch (the power
	// model's on-chip term, a third bound on time).
	FP64Flops string `json:"FP64Flops,omitempty" yaml:"FP64Flops,omitempty"`
	// FP64TensorFlops: double-precision operations per launch on the
	// tensor cores (DMMA, a library's DGEMM), run at the GPU's FP64
	// tensor-core rate (device.Description.PeakFP64TensorGFLOPS), at its
	// FP64 rate where it has none.
	FP64TensorFlops string `json:"FP64TensorFlops,omitempty" yaml:"FP64TensorFlops,omitempty"`
	WriteBytes      string `json:"WriteBytes,omitempty" yaml:"WriteBytes,omitempty"`
	L2Bytes         string `json:"L2Bytes,omitempty" yaml:"L2Bytes,omitempty"`
	SharedBytes     string `json:"SharedBytes,omitempty" yaml:"SharedBytes,omitempty"`
	Invalid         string `json:"Invalid,omitempty" yaml:"Invalid,omitempty"`           // true: the configuration computes a wrong answer
	CompileFails    string `json:"CompileFails,omitempty" yaml:"CompileFails,omitempty"` // true: the configuration fails to compile
	// CompileCrashes: true when the compiler's process dies on the
	// configuration (tests a compile pool's crash handling).
	CompileCrashes string  `json:"CompileCrashes,omitempty" yaml:"CompileCrashes,omitempty"`
	Noise          float64 `json:"Noise,omitempty" yaml:"Noise,omitempty"` // relative standard deviation of timing noise (default 0.01)
	Seed           int64   `json:"Seed,omitempty" yaml:"Seed,omitempty"`
	// Stragglers is the chance per launch and timed run that a launch
	// straggles, StragglerFactor its mean slow-down (default 3.2, the
	// H100's): sim.Options.
	Stragglers      float64 `json:"Stragglers,omitempty" yaml:"Stragglers,omitempty"`
	StragglerFactor float64 `json:"StragglerFactor,omitempty" yaml:"StragglerFactor,omitempty"`
	// ColdStartC, when set, starts the simulated GPU's die and heat sink
	// at this temperature (°C) and gives it leakage power that follows
	// the temperature (sim.Options.ColdStart): a cold-started GPU.
	ColdStartC float64 `json:"ColdStartC,omitempty" yaml:"ColdStartC,omitempty"`
}
