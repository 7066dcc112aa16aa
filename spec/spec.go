package spec

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/library"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/space"
)

// ObservationNames are the names a metric expression may read besides
// parameters, constants and earlier metrics: every built-in quantity of
// package measure (measure.Quantities lists each with its unit), of the
// whole plan.
var ObservationNames = quantityNames(measure.Quantities())

// energyNames are the observations only an energy measurement gives.
// (sm_clock, temperature and the like come without energy too, from
// measure.ClockObserver).
var energyNames = slices.DeleteFunc(quantityNames(measure.EnergyQuantities), func(n string) bool {
	return slices.Contains(quantityNames(measure.ClockObserver{}.Provides()), n)
})

func quantityNames(qs []measure.Quantity) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

// ObjectiveNeedsEnergy reports whether the objective name (a built-in or
// a metric) can only be had from an energy measurement: it is an energy
// observation, or a metric that reads one, directly or through earlier
// metrics.
func (s *Spec) ObjectiveNeedsEnergy(name string) bool {
	if slices.Contains(energyNames, name) {
		return true
	}
	for _, m := range s.Metrics {
		if m.Name != name {
			continue
		}
		for _, n := range m.Expr.Names() {
			if n != name && s.ObjectiveNeedsEnergy(n) {
				return true
			}
		}
	}
	return false
}

// BuiltinObjectives are the objectives every spec may name; they are all
// minimised unless Gtune.ObjectiveDirection says otherwise.
var BuiltinObjectives = []string{"time", "energy", "power", "edp"}

// DefaultTimeout bounds one configuration's measurement (the other
// measurement defaults are package measure's: DefaultIterations,
// DefaultEnergyWindow, DefaultProtocol).
const DefaultTimeout = 10 * time.Second

// Defaults of verification and of the simulated GPU.
const (
	// DefaultRandomSeed seeds Random fills without a RandomSeed, so that
	// runs repeat.
	DefaultRandomSeed = 42
	// DefaultThreshold is Kernel Tuner's absolute tolerance (atol) for
	// output verification.
	DefaultThreshold = 1e-6
	// DefaultValidationMethod is used when a reference names none.
	DefaultValidationMethod = "AbsoluteDifference"
	// DefaultSimDevice is the simulated GPU when Gtune.Simulation.Device is
	// empty.
	DefaultSimDevice = "h100_sxm"
	// DefaultSimNoise is the relative standard deviation of simulated timing
	// noise.
	DefaultSimNoise = 0.01
	// MaxSimNoise bounds Gtune.Simulation.Noise: a relative standard
	// deviation of 50 % is noisier than any GPU's timer; beyond it the
	// simulated times and powers leave physical ranges (Noise 10 gave
	// 3.7·10^16 W).
	MaxSimNoise = 0.5
	// MaxSimStragglerFactor bounds Gtune.Simulation.StragglerFactor, a
	// straggling launch's mean slow-down.
	MaxSimStragglerFactor = 100.0
)

// Metric is a compiled user metric (Gtune.Metrics).
type Metric struct {
	Name     string
	Expr     *expr.Expr // reads observations, parameters, constants, earlier metrics
	Maximize bool       // direction when the metric is the objective (default true)
	Unit     string
}

// Budget is the resolved T1 Budget; 0 means unset.
type Budget struct {
	MaxConfigurations int           // ConfigurationCount
	Fraction          float64       // ConfigurationFraction, of the valid space, in (0, 1]
	Duration          time.Duration // TuningDuration
}

// Measurement is the resolved Gtune.Measurement.
type Measurement struct {
	Iterations   int           // timed runs after one warm-up (measure.DefaultIterations)
	EnergyWindow time.Duration // back-to-back window for the energy counter (measure.DefaultEnergyWindow)
	Timeout      time.Duration // per configuration (DefaultTimeout)
	Energy       *bool         // as written; nil: observe energy when NeedsEnergy
	// Protocol is the energy protocol (defaults: measure.DefaultProtocol
	// with Warmup on). One trial means one stand-alone counter window of
	// EnergyWindow, as Kernel Tuner measures.
	Protocol measure.Protocol
	// Observers are registered observers run after the timing and energy
	// (measure.Register), by name.
	Observers []string
}

// Plausibility is the resolved Gtune.Plausibility: 0 means the default
// (the device's peaks; plausibility.DefaultOutlierFactor).
type Plausibility struct {
	PeakGFLOPS    float64
	PeakGBs       float64
	OutlierFactor float64
}

// Simulation is the compiled Gtune.Simulation. Expressions are nil where
// the file leaves them out (then the default applies).
type Simulation struct {
	Device       string     // default DefaultSimDevice
	Flops        *expr.Expr // floating-point operations per launch
	Bytes        *expr.Expr // device-memory bytes per launch
	Registers    *expr.Expr // registers per thread (default 32)
	SharedMemory *expr.Expr // static shared memory per thread block, bytes (default 0)
	Efficiency   *expr.Expr // 0..1 (default 1)
	// FP64Flops are double-precision operations per launch (an FMA is 2),
	// run at the GPU's FP64 rate; FP64TensorFlops those on the tensor
	// cores (DMMA), at their rate; WriteBytes the part of Bytes that is
	// stored; L2Bytes the bytes through L2; SharedBytes the shared-memory
	// bytes loaded (model.Work). Optional.
	FP64Flops, FP64TensorFlops, WriteBytes, L2Bytes, SharedBytes *expr.Expr
	Invalid                                                      *expr.Expr // true: the configuration computes a wrong answer
	CompileFails                                                 *expr.Expr // true: the configuration fails to compile
	// CompileCrashes: true when the compiler's process dies on the
	// configuration.
	CompileCrashes *expr.Expr
	Noise          float64 // default DefaultSimNoise
	Seed           int64
	// Stragglers (0 ≤ p < 1) and StragglerFactor (> 1; 0: the
	// simulator's default): launches that take several times as long
	// (sim.Options.Stragglers).
	Stragglers, StragglerFactor float64
	// ColdStartC (°C, 0: none) starts a cold GPU (sim.Options.ColdStart).
	ColdStartC float64

	bound [len(simFields)]*expr.Bound // in simFields order, nil when absent
}

// Spec is a loaded, validated kernel specification. Every expression in it
// has been parsed and every name checked. It is immutable after Load.
//
// Geometry (Job), as Kernel Tuner 1.4 launches a T1 file: LocalSize X/Y/Z
// is the thread block, threads per dimension (missing = 1); where a
// dimension's LocalSize is not a tunable parameter's bare name, its
// block-size name is Kernel Tuner's default (block_size_x, block_size_y,
// block_size_z: 256, 1 and 1 when not parameters). With ProblemSize the
// grid is ceil(ProblemSize_d / D_d) thread blocks, D_d the product of the
// GridDiv_d expressions or, without them, the value of the dimension's
// block-size parameter (1 when there is none), and GlobalSize is not read
// (Kernel Tuner never reads it; Warnings says when it disagrees). Without
// ProblemSize, GlobalSize gives the grid: with GlobalSizeType "CUDA" (the
// default) in thread blocks, with "OpenCL" in threads, the grid being
// ceil(GlobalSize_d / D_d) with D_d from GridDiv_d, else LocalSize_d.
// LocalSize, GlobalSize, GridDiv and SharedMemory may read ProblemSize (a
// list), Gtune.Constants and the configuration's parameters.
//
// In argument Size expressions a parameter name is the list of its values,
// so max(filter_width) is its largest value (T1 usage).
type Spec struct {
	Path string // as given to Load
	Dir  string // absolute directory of the spec; relative files resolve here
	Raw  *File
	Hash string // sha256 hex of the spec bytes followed by the kernel source bytes

	Name            string // General.BenchmarkName, else KernelName
	KernelName      string
	KernelFile      string // absolute path
	Source          string // kernel source text ("" with LoadOptions.NoSource)
	Language        string // as written (CUDA, OpenCL, ...)
	CompilerOptions []string
	GlobalSizeType  string // "CUDA" | "OpenCL", resolved

	Params       []space.Param
	Types        []string // T1 type of each parameter (int, uint, float, bool, string; "" if unwritten)
	Restrictions []space.Restriction
	Constants    expr.MapEnv // Gtune.Constants plus ProblemSize (a list of ints)

	Objective         string // time | energy | power | edp | a metric name
	ObjectiveMaximize bool
	Metrics           []Metric
	NeedsEnergy       bool // the objective or a metric reads energy, power or edp

	Budget          Budget
	Strategy        string         // T1 Search.Name; "" when absent
	StrategyOptions map[string]any // T1 Search.Attributes by name

	Measurement  Measurement
	Simulation   *Simulation // nil when absent
	Plausibility Plausibility

	// Warnings are things the user should know that do not stop a run
	// (e.g. a GlobalSize that the derived grid overrides); set by Load and
	// CheckJobs.
	Warnings []string
	// BracketsChecked says how the kernel source's brackets were checked
	// ("brackets", or along which branches of its #if directives); ""
	// when they were not.
	BracketsChecked string

	paramIndex map[string]int
	routine    *library.Routine // the library routine a cuBLAS spec names; nil for a kernel
	args       []backend.Arg
	verify     *backend.Verification
	refConfig  []expr.Value // nil when no Gtune.Reference
	local      [3]*expr.Bound
	global     [3]*expr.Bound // nil where GlobalSize is not used (or not bindable alongside ProblemSize)
	gridDiv    [3][]*expr.Bound
	shared     *expr.Bound // nil: 0
	hasProblem bool        // KernelSpecification.ProblemSize given: the grid is derived from it
	problem    [3]int64    // ProblemSize, 1 where not given
	// problemSrc and problemBound are the dimensions of a ProblemSize that
	// reads tunable parameters (Kernel Tuner's problem_size="num_blocks"):
	// evaluated per configuration; "" and nil where constant.
	problemSrc   [3]string
	problemBound [3]*expr.Bound
	// gridDivOne: GridDiv of the dimension is an empty list (Kernel
	// Tuner's grid_div_x=[]): the grid is the problem size itself.
	gridDivOne [3]bool
	blockNames [3]string // Kernel Tuner's block_size_names
	divParam   [3]int    // parameter index of blockNames[d], -1 when it is none: the default grid divisor
	ktDefines  bool      // Gtune.KernelTunerDefines
	unrollRE   map[string]*regexp.Regexp
}

// LoadOptions changes what Load requires.
type LoadOptions struct {
	// NoSource skips reading the kernel source and the argument data files
	// (for specs whose kernels are not at hand, e.g. to build the space).
	NoSource bool
	// Device, for a spec with a Gtune.DeclaredSpace, is the GPU whose
	// limits (beast.DeviceConstants) replace the Constants of those names:
	// the declared space of the GPU tuned rather than of the GPU the
	// Constants describe. Nil: the Constants.
	Device *device.Description
}

// Load reads and validates the spec at path (JSON, or YAML when the name
// ends in .yaml/.yml). Every error is a *Error naming the file and, where
// one is at fault, the field.
func Load(path string) (*Spec, error) { return LoadWith(path, LoadOptions{}) }

// hashVersion changes when the same spec and source start to give a
// different kernel instance or launch (see Spec.Hash).
const hashVersion = "gtune-spec-2\n"

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var pyKeywords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "if": true, "else": true,
	"for": true, "True": true, "False": true, "None": true, "is": true, "lambda": true}

func validName(s string) bool { return identRE.MatchString(s) && !pyKeywords[s] }

type loader struct {
	file   string
	s      *Spec
	device *device.Description // LoadOptions.Device
}

func (l *loader) errf(field, format string, a ...any) *Error {
	return &Error{File: l.file, Field: field, Msg: fmt.Sprintf(format, a...)}
}

// parse parses an expression of field, reporting syntax errors there.
func (l *loader) parse(field, src string) (*expr.Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, l.errf(field, "empty expression")
	}
	e, err := expr.Parse(src)
	if err != nil {
		return nil, l.errf(field, "%v", err)
	}
	return e, nil
}

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Spec, error) {
	l := &loader{file: path, device: opts.Device}
	data, err := bounded.ReadFile(path, bounded.Text, "a spec")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, l.errf("", "spec file does not exist")
		}
		return nil, l.errf("", "cannot read spec file: %v", err)
	}
	f := &File{}
	isYAML := false
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		isYAML = true
		err = decodeYAML(path, data, f)
	default:
		err = decodeJSON(path, data, f)
	}
	if err != nil {
		return nil, err
	}
	if err := unknownKeys(path, data, isYAML); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, l.errf("", "%v", err)
	}
	s := &Spec{Path: path, Dir: filepath.Dir(abs), Raw: f}
	l.s = s
	if err := l.load(data, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// Bounds of Gtune.Measurement: more timed launches than maxIterations, or
// an energy window longer than maxEnergyWindowS, is a typo, not a plan
// (an energy window of an hour per configuration would book days).
const (
	maxIterations    = 100_000
	maxEnergyWindowS = 60
)

func (l *loader) load(data []byte, opts LoadOptions) error {
	s, f := l.s, l.s.Raw
	ks := &f.KernelSpecification
	// No number of a spec may be NaN or infinite (YAML writes them .nan
	// and .inf): each check below would let a NaN through its range.
	if field, v := nonFinite(reflect.ValueOf(f), ""); field != "" {
		return l.errf(field, "%v is not a finite number", v)
	}

	// Kernel.
	if ks.KernelName == "" {
		return l.errf("KernelSpecification.KernelName", "missing")
	}
	// A library routine (Language cuBLAS) has no source: KernelName
	// names the routine (package library).
	lib := library.Is(ks.Language)
	switch {
	case ks.KernelFile == "" && !lib:
		return l.errf("KernelSpecification.KernelFile", "missing")
	case ks.KernelFile != "" && lib:
		return l.errf("KernelSpecification.KernelFile", "%s: a %s routine has no kernel source; remove KernelFile (KernelName names the routine)", ks.KernelFile, ks.Language)
	}
	s.KernelName, s.Language = ks.KernelName, ks.Language
	s.CompilerOptions = ks.CompilerOptions
	s.Name = ks.KernelName
	if f.General != nil && f.General.BenchmarkName != "" {
		s.Name = f.General.BenchmarkName
	}
	if lib {
		r, err := library.Lookup(ks.KernelName)
		if err != nil {
			return l.errf("KernelSpecification.KernelName", "%v", err)
		}
		if len(ks.CompilerOptions) > 0 {
			return l.errf("KernelSpecification.CompilerOptions", "a %s routine is not compiled; remove them", ks.Language)
		}
		s.routine = r
	} else {
		s.KernelFile = l.resolvePath(ks.KernelFile)
	}
	h := sha256.New()
	// How a file is compiled and launched is part of what its results
	// mean: results measured under an older reading of the same file
	// (before Kernel Tuner's grid and define rules) must not be reused.
	h.Write([]byte(hashVersion))
	h.Write(data)
	if !opts.NoSource && !lib {
		// Only a kernel about to be compiled must be CUDA: replay, import
		// and space read the parameters of any T1 file.
		if err := l.checkLanguage(); err != nil {
			return err
		}
		s.CompilerOptions = l.includeOptions(ks.CompilerOptions)
		src, err := bounded.ReadFile(s.KernelFile, bounded.Text, "a kernel source")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return l.errf("KernelSpecification.KernelFile", "kernel source %s does not exist (relative paths are relative to the spec's directory)", s.KernelFile)
			}
			return l.errf("KernelSpecification.KernelFile", "cannot read kernel source: %v", err)
		}
		s.Source = string(src)
		h.Write(src)
	}
	s.Hash = hex.EncodeToString(h.Sum(nil))

	if err := l.constants(); err != nil {
		return err
	}
	if err := l.params(); err != nil {
		return err
	}
	if err := l.conditions(); err != nil {
		return err
	}
	if err := l.geometry(); err != nil {
		return err
	}
	if err := l.arguments(opts); err != nil {
		return err
	}
	switch {
	case s.routine != nil:
		if err := l.checkRoutine(); err != nil {
			return err
		}
	case !opts.NoSource:
		if err := l.checkSource(); err != nil {
			return err
		}
		if err := l.checkSignature(); err != nil {
			return err
		}
	}
	if err := l.verification(opts); err != nil {
		return err
	}
	if err := l.gtune(); err != nil {
		return err
	}
	return l.search()
}

func (l *loader) resolvePath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(l.s.Dir, p)
}

func (l *loader) constants() error {
	s := l.s
	s.Constants = expr.MapEnv{}
	if g := s.Raw.Gtune; g != nil {
		names := make([]string, 0, len(g.Constants))
		for n := range g.Constants {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			field := "Gtune.Constants." + n
			if !validName(n) {
				return l.errf(field, "%q is not a valid name (letters, digits, _; not starting with a digit)", n)
			}
			if n == "ProblemSize" {
				return l.errf(field, "ProblemSize is set by KernelSpecification.ProblemSize")
			}
			v, err := expr.FromGo(g.Constants[n])
			if err != nil {
				return l.errf(field, "%v", err)
			}
			s.Constants[n] = v
		}
	}
	return l.problemSize()
}

// evalConst parses and evaluates an expression that may read constants
// only; allowed says which, in the message for an unknown name.
func (l *loader) evalConst(field, src, allowed string) (expr.Value, error) {
	e, err := l.parse(field, src)
	if err != nil {
		return expr.Value{}, err
	}
	v, err := e.Eval(l.s.Constants)
	if err != nil {
		var ne *expr.NameError
		if errors.As(err, &ne) {
			return expr.Value{}, l.errf(field, "reads unknown name %q (%s)", ne.Name, allowed)
		}
		return expr.Value{}, l.errf(field, "%v", err)
	}
	return v, nil
}

// problemSize evaluates KernelSpecification.ProblemSize (integers, or
// expressions over Gtune.Constants) into s.problem and the constant
// ProblemSize (a list, as Kernel Tuner's T1 reader gives the Size
// expressions). Missing dimensions are 1.
func (l *loader) problemSize() error {
	s := l.s
	raw := s.Raw.KernelSpecification.ProblemSize
	if len(raw) > 3 {
		return l.errf("KernelSpecification.ProblemSize", "has %d dimensions; a grid has at most 3", len(raw))
	}
	s.problem = [3]int64{1, 1, 1}
	ps := make([]expr.Value, len(raw))
	for i, x := range raw {
		field := fmt.Sprintf("KernelSpecification.ProblemSize[%d]", i)
		src, ok := exprOf(x)
		if !ok || strings.TrimSpace(src) == "" {
			return l.errf(field, "must be a whole number or an expression over Gtune.Constants")
		}
		v, err := l.evalConst(field, src, "ProblemSize may read Gtune.Constants and tunable parameters only")
		var se *Error
		if err != nil && errors.As(err, &se) && l.readsParam(src) {
			// Read per configuration once the parameters are known
			// (geometry); no constant ProblemSize for the other
			// expressions then.
			l.s.problemSrc[i] = src
			s.hasProblem = true
			continue
		}
		if err != nil {
			return err
		}
		n, ok := toInt(v)
		if !ok || n <= 0 {
			return l.errf(field, "is %s; a problem size must be a positive whole number", v.String())
		}
		ps[i], s.problem[i] = expr.Int(n), n
	}
	s.hasProblem = len(raw) > 0
	for _, src := range s.problemSrc {
		if src != "" {
			return nil // not a constant
		}
	}
	s.Constants["ProblemSize"] = expr.List(ps)
	return nil
}

// readsParam reports whether src names one of the file's tunable
// parameters (read before they are built: ProblemSize is evaluated with the
// constants).
func (l *loader) readsParam(src string) bool {
	e, err := expr.Parse(src)
	if err != nil {
		return false
	}
	names := map[string]bool{}
	for _, tp := range l.s.Raw.ConfigurationSpace.TuningParameters {
		names[tp.Name] = true
	}
	for _, n := range e.Names() {
		if names[n] {
			return true
		}
	}
	return false
}

var paramTypes = []string{"int", "uint", "float", "bool", "string"}

// DeclaredSpace is the name of the declared search space the spec tunes
// (Gtune.DeclaredSpace, package beast), "" for none.
func (s *Spec) DeclaredSpace() string {
	if g := s.Raw.Gtune; g != nil {
		return g.DeclaredSpace
	}
	return ""
}

func (l *loader) params() error {
	s := l.s
	tps := s.Raw.ConfigurationSpace.TuningParameters
	if g := s.Raw.Gtune; g != nil && g.DeclaredSpace != "" {
		return l.declared(g.DeclaredSpace, len(tps))
	}
	if len(tps) == 0 {
		return l.errf("ConfigurationSpace.TuningParameters", "no tunable parameters")
	}
	s.paramIndex = map[string]int{}
	for i, tp := range tps {
		field := fmt.Sprintf("ConfigurationSpace.TuningParameters[%d]", i)
		if tp.Name == "" {
			return l.errf(field+".Name", "missing")
		}
		field = fmt.Sprintf("ConfigurationSpace.TuningParameters[%d] (%s)", i, tp.Name)
		if !validName(tp.Name) {
			return l.errf(field+".Name", "%q is not a valid name (letters, digits, _; not starting with a digit)", tp.Name)
		}
		if j, dup := s.paramIndex[tp.Name]; dup {
			return l.errf(field+".Name", "duplicate tunable parameter %q (also TuningParameters[%d])", tp.Name, j)
		}
		if _, isConst := s.Constants[tp.Name]; isConst {
			return l.errf(field+".Name", "%q is both a tunable parameter and a constant", tp.Name)
		}
		if tp.Type != "" && !slices.Contains(paramTypes, tp.Type) {
			return l.errf(field+".Type", "unknown type %q (valid: %s)", tp.Type, strings.Join(paramTypes, ", "))
		}
		v, err := l.evalConst(field+".Values", tp.Values, "values may read constants and ProblemSize only")
		if err != nil {
			return err
		}
		if v.Kind() != expr.KindList {
			return l.errf(field+".Values", "%s evaluates to %s, not a list", quote(tp.Values), expr.Excerpt(v.String()))
		}
		vals := v.List()
		if len(vals) == 0 {
			return l.errf(field+".Values", "the parameter has no values")
		}
		for j, x := range vals {
			if err := checkType(tp.Type, x); err != nil {
				return l.errf(field+".Values", "value %s: %v", x.String(), err)
			}
			for _, y := range vals[:j] {
				if x.Equal(y) {
					return l.errf(field+".Values", "value %s is listed twice", x.String())
				}
			}
		}
		s.paramIndex[tp.Name] = i
		s.Params = append(s.Params, space.Param{Name: tp.Name, Values: vals})
		s.Types = append(s.Types, tp.Type)
	}
	return nil
}

// CheckValue checks a value given to tunable parameter name from
// outside the spec (a workload fixing or narrowing it): it must have the
// parameter's T1 Type, or, where the spec writes none, the kind all of
// the spec's own values share (an int parameter given 1.5 or "abc" would
// only fail at the first launch). Errors: an unknown parameter, a value
// of another type (the message says which).
func (s *Spec) CheckValue(name string, v expr.Value) error {
	i, ok := s.paramIndex[name]
	if !ok {
		return fmt.Errorf("%s is not a tunable parameter", name)
	}
	typ := ""
	if i < len(s.Types) {
		typ = s.Types[i]
	}
	if typ == "" && len(s.Params[i].Values) > 0 {
		k := s.Params[i].Values[0].Kind()
		same := true
		for _, w := range s.Params[i].Values {
			same = same && w.Kind() == k
		}
		switch {
		case same && k == expr.KindInt:
			typ = "int"
		case same && k == expr.KindString:
			typ = "string"
		case same && k == expr.KindBool:
			typ = "bool"
		}
	}
	if err := checkType(typ, v); err != nil {
		return fmt.Errorf("%s %v (the spec's values of %s are %s)", v, err, name, cmp.Or(typ, "untyped"))
	}
	return nil
}

func checkType(typ string, v expr.Value) error {
	k := v.Kind()
	switch typ {
	case "int", "uint":
		if k != expr.KindInt {
			return fmt.Errorf("is a %s, not an int", k)
		}
		if i, _ := v.Int(); typ == "uint" && i < 0 {
			return fmt.Errorf("is negative, the type is uint")
		}
	case "float":
		if k != expr.KindFloat && k != expr.KindInt {
			return fmt.Errorf("is a %s, not a number", k)
		}
	case "bool":
		if k != expr.KindBool {
			return fmt.Errorf("is a %s, not a bool", k)
		}
	case "string":
		if k != expr.KindString {
			return fmt.Errorf("is a %s, not a string", k)
		}
	default:
		if k == expr.KindList {
			return fmt.Errorf("a value may not be a list")
		}
	}
	return nil
}

func (l *loader) conditions() error {
	s := l.s
	for i, c := range s.Raw.ConfigurationSpace.Conditions {
		field := fmt.Sprintf("ConfigurationSpace.Conditions[%d]", i)
		e, err := l.parse(field+".Expression", c.Expression)
		if err != nil {
			return err
		}
		for _, n := range e.Names() {
			if _, ok := s.paramIndex[n]; ok {
				continue
			}
			if _, ok := s.Constants[n]; ok {
				continue
			}
			return l.errf(field+".Expression", "%s reads %q, which is neither a tunable parameter nor a constant", quote(c.Expression), n)
		}
		for _, n := range c.Parameters {
			if _, ok := s.paramIndex[n]; !ok {
				return l.errf(field+".Parameters", "%q is not a tunable parameter", n)
			}
		}
		s.Restrictions = append(s.Restrictions, space.Restriction{Expr: e, Source: field})
	}
	return nil
}

// bind compiles a per-configuration expression: parameters in slots, then
// constants, then extra names.
func (l *loader) bind(field string, e *expr.Expr, extra expr.MapEnv) (*expr.Bound, error) {
	consts := l.s.Constants
	if extra != nil {
		m := expr.MapEnv{}
		for k, v := range extra {
			m[k] = v
		}
		for k, v := range consts {
			m[k] = v
		}
		consts = m
	}
	b, err := e.Bind(func(n string) (int, bool) { i, ok := l.s.paramIndex[n]; return i, ok }, consts)
	if err != nil {
		var ne *expr.NameError
		if errors.As(err, &ne) {
			return nil, l.errf(field, "%s reads %q, which is neither a tunable parameter nor a constant", quote(e.Source()), ne.Name)
		}
		return nil, l.errf(field, "%v", err)
	}
	return b, nil
}

// exprOf accepts a number or an expression string (JSON/YAML "any").
func exprOf(x any) (string, bool) {
	switch t := x.(type) {
	case nil:
		return "", true
	case string:
		return t, true
	case json.Number:
		return string(t), true
	case int, int64, uint64:
		return fmt.Sprint(t), true
	case float64:
		v := expr.Float(t)
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			v = expr.Int(int64(t))
		}
		return v.String(), true
	}
	return "", false
}

func (l *loader) geometry() error {
	s := l.s
	ks := &s.Raw.KernelSpecification
	switch ks.GlobalSizeType {
	case "", "CUDA":
		s.GlobalSizeType = "CUDA"
	case "OpenCL":
		s.GlobalSizeType = "OpenCL"
	default:
		return l.errf("KernelSpecification.GlobalSizeType", "unsupported %q (valid: CUDA, OpenCL)", ks.GlobalSizeType)
	}
	blockDefaults := expr.MapEnv{"block_size_x": expr.Int(256), "block_size_y": expr.Int(1), "block_size_z": expr.Int(1)}
	dims := [3]string{"X", "Y", "Z"}
	local := [3]string{ks.LocalSize.X, ks.LocalSize.Y, ks.LocalSize.Z}
	global := [3]string{ks.GlobalSize.X, ks.GlobalSize.Y, ks.GlobalSize.Z}
	divs := [3][]string{ks.GridDivX, ks.GridDivY, ks.GridDivZ}
	if !s.hasProblem && strings.TrimSpace(global[0]) == "" {
		return l.errf("KernelSpecification.GlobalSize.X", "missing (give GlobalSize, or ProblemSize to derive the grid as Kernel Tuner does)")
	}
	for d, src := range s.problemSrc {
		if src == "" {
			continue
		}
		field := fmt.Sprintf("KernelSpecification.ProblemSize[%d]", d)
		e, err := l.parse(field, src)
		if err != nil {
			return err
		}
		if s.problemBound[d], err = l.bind(field, e, nil); err != nil {
			return err
		}
	}
	for d := range 3 {
		src := local[d]
		if strings.TrimSpace(src) == "" {
			if d == 0 {
				src = defaultBlockNames[0]
			} else {
				src = "1"
			}
		}
		s.blockNames[d] = blockName(src, d)
		s.divParam[d] = -1
		if i, ok := s.paramIndex[s.blockNames[d]]; ok {
			s.divParam[d] = i
		}
		field := "KernelSpecification.LocalSize." + dims[d]
		e, err := l.parse(field, src)
		if err != nil {
			return err
		}
		if s.local[d], err = l.bind(field, e, blockDefaults); err != nil {
			return err
		}
		if src = global[d]; strings.TrimSpace(src) == "" {
			src = "1"
		}
		// With ProblemSize, GlobalSize is only compared with the derived
		// grid (CheckJobs), so a GlobalSize that does not even evaluate is
		// no reason to refuse a file Kernel Tuner runs.
		field = "KernelSpecification.GlobalSize." + dims[d]
		e, err = l.parse(field, src)
		var b *expr.Bound
		if err == nil {
			b, err = l.bind(field, e, nil)
		}
		switch {
		case err == nil:
			s.global[d] = b
		case !s.hasProblem:
			return err
		}
		s.gridDivOne[d] = divs[d] != nil && len(divs[d]) == 0
		for i, dv := range divs[d] {
			field := fmt.Sprintf("KernelSpecification.GridDiv%s[%d]", dims[d], i)
			e, err := l.parse(field, dv)
			if err != nil {
				return err
			}
			b, err := l.bind(field, e, blockDefaults)
			if err != nil {
				return err
			}
			s.gridDiv[d] = append(s.gridDiv[d], b)
		}
	}
	src, ok := exprOf(ks.SharedMemory)
	if !ok {
		return l.errf("KernelSpecification.SharedMemory", "must be a number of bytes or an expression")
	}
	if strings.TrimSpace(src) != "" {
		e, err := l.parse("KernelSpecification.SharedMemory", src)
		if err != nil {
			return err
		}
		if s.shared, err = l.bind("KernelSpecification.SharedMemory", e, nil); err != nil {
			return err
		}
	}
	return nil
}

var argTypes = []string{"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
	"half", "half2", "half4", "half8", "half16", "float", "float2", "float4", "float8", "float16",
	"double", "double2", "double4", "double8", "double16", "custom"}

// sizeEnv: constants, and every parameter as the list of its values.
func (l *loader) sizeEnv() expr.MapEnv {
	env := expr.MapEnv{}
	for k, v := range l.s.Constants {
		env[k] = v
	}
	for _, p := range l.s.Params {
		env[p.Name] = expr.List(p.Values)
	}
	return env
}

// toInt accepts an int or an integral float.
func toInt(v expr.Value) (int64, bool) {
	if i, ok := v.Int(); ok {
		return i, true
	}
	if f, ok := v.Float(); ok && v.Kind() == expr.KindFloat && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return int64(f), true
	}
	return 0, false
}

func (l *loader) fill(field, fillType string, value *float64, dataSource string, seed *int64, opts LoadOptions) (backend.Fill, error) {
	fl := backend.Fill{Type: fillType}
	if value != nil {
		fl.Value = *value
	}
	switch fillType {
	case "", "Constant":
		fl.Type = "Constant"
	case "Random":
		fl.Seed = DefaultRandomSeed
		if seed != nil {
			fl.Seed = *seed
		}
		if value == nil {
			fl.Value = 1
		}
	case "BinaryRaw":
		if dataSource == "" {
			return fl, l.errf(field+".DataSource", "missing (BinaryRaw reads this file)")
		}
		fl.File = l.resolvePath(dataSource)
		if !opts.NoSource {
			if _, err := os.Stat(fl.File); err != nil {
				return fl, l.errf(field+".DataSource", "data file %s does not exist (relative paths are relative to the spec's directory)", fl.File)
			}
		}
	default:
		return fl, l.errf(field+".FillType", "unsupported %q (valid: Constant, Random, BinaryRaw)", fillType)
	}
	return fl, nil
}

func (l *loader) arguments(opts LoadOptions) error {
	s := l.s
	raw := s.Raw.KernelSpecification.Arguments
	anyOutput := false
	for _, a := range raw {
		anyOutput = anyOutput || a.Output != 0
	}
	env := l.sizeEnv()
	seen := map[string]int{}
	for i, a := range raw {
		field := fmt.Sprintf("KernelSpecification.Arguments[%d]", i)
		if a.Name == "" {
			return l.errf(field+".Name", "missing")
		}
		field = fmt.Sprintf("KernelSpecification.Arguments[%d] (%s)", i, a.Name)
		if j, dup := seen[a.Name]; dup {
			return l.errf(field+".Name", "duplicate argument name (also Arguments[%d])", j)
		}
		seen[a.Name] = i
		if !slices.Contains(argTypes, a.Type) {
			return l.errf(field+".Type", "unknown type %q (valid: %s)", a.Type, strings.Join(argTypes, ", "))
		}
		if a.Type == "custom" && a.TypeSize <= 0 {
			return l.errf(field+".TypeSize", "type custom needs a positive TypeSize")
		}
		arg := backend.Arg{Name: a.Name, Type: a.Type, Constant: a.MemType == "Constant"}
		if a.MemType != "" && a.MemType != "Constant" {
			return l.errf(field+".MemType", "unsupported %q (valid: Constant)", a.MemType)
		}
		switch a.AccessType {
		case "", "ReadOnly", "WriteOnly", "ReadWrite":
		default:
			return l.errf(field+".AccessType", "unknown %q (valid: ReadOnly, WriteOnly, ReadWrite)", a.AccessType)
		}
		switch a.MemoryType {
		case "Scalar":
			arg.Kind = backend.ArgScalar
			if a.FillValue == nil {
				return l.errf(field+".FillValue", "a scalar argument needs a FillValue")
			}
			arg.Scalar = *a.FillValue
		case "Vector":
			arg.Kind = backend.ArgVector
			src, ok := exprOf(a.Size)
			if !ok || strings.TrimSpace(src) == "" {
				return l.errf(field+".Size", "a vector argument needs a Size (number of elements or an expression)")
			}
			e, err := l.parse(field+".Size", src)
			if err != nil {
				return err
			}
			v, err := e.Eval(env)
			if err != nil {
				var ne *expr.NameError
				if errors.As(err, &ne) {
					return l.errf(field+".Size", "%s reads unknown name %q", quote(src), ne.Name)
				}
				return l.errf(field+".Size", "%s: %v", quote(src), err)
			}
			n, ok := toInt(v)
			if !ok {
				return l.errf(field+".Size", "%s evaluates to %s, not a whole number of elements", quote(src), expr.Excerpt(v.String()))
			}
			if n <= 0 {
				return l.errf(field+".Size", "size of argument %s is %d elements; it must be positive", a.Name, n)
			}
			arg.Count = n
			if arg.Fill, err = l.fill(field, a.FillType, a.FillValue, a.DataSource, a.RandomSeed, opts); err != nil {
				return err
			}
			if anyOutput {
				arg.Output = a.Output != 0
			} else {
				arg.Output = a.AccessType != "ReadOnly"
			}
		case "Local", "Symbol":
			return l.errf(field+".MemoryType", "%q arguments are not supported (valid: Scalar, Vector)", a.MemoryType)
		default:
			return l.errf(field+".MemoryType", "unknown %q (valid: Scalar, Vector)", a.MemoryType)
		}
		s.args = append(s.args, arg)
	}
	return nil
}

func (l *loader) verification(opts LoadOptions) error {
	s := l.s
	refs := s.Raw.KernelSpecification.ReferenceArguments
	if len(refs) > 0 {
		v := &backend.Verification{Method: DefaultValidationMethod, Threshold: DefaultThreshold, Expected: map[string]backend.Fill{}}
		method, threshold := "", (*float64)(nil)
		for i, r := range refs {
			field := fmt.Sprintf("KernelSpecification.ReferenceArguments[%d]", i)
			idx := slices.IndexFunc(s.args, func(a backend.Arg) bool { return a.Name == r.TargetName })
			if idx < 0 {
				return l.errf(field+".TargetName", "%q is not an argument", r.TargetName)
			}
			if s.args[idx].Kind != backend.ArgVector || !s.args[idx].Output {
				return l.errf(field+".TargetName", "%q is not an output vector argument", r.TargetName)
			}
			if _, dup := v.Expected[r.TargetName]; dup {
				return l.errf(field+".TargetName", "%q has two references", r.TargetName)
			}
			if err := checkMethod(r.ValidationMethod); err != nil {
				return l.errf(field+".ValidationMethod", "%v", err)
			}
			if method != "" && r.ValidationMethod != "" && r.ValidationMethod != method {
				return l.errf(field+".ValidationMethod", "%q differs from %q of an earlier reference; gtune uses one method for all outputs", r.ValidationMethod, method)
			}
			if r.ValidationMethod != "" {
				method = r.ValidationMethod
			}
			if r.ValidationThreshold != nil {
				if *r.ValidationThreshold < 0 {
					return l.errf(field+".ValidationThreshold", "must not be negative")
				}
				if threshold != nil && *threshold != *r.ValidationThreshold {
					return l.errf(field+".ValidationThreshold", "differs from an earlier reference; gtune uses one threshold for all outputs")
				}
				threshold = r.ValidationThreshold
			}
			fl, err := l.fill(field, r.FillType, r.FillValue, r.DataSource, r.RandomSeed, opts)
			if err != nil {
				return err
			}
			v.Expected[r.TargetName] = fl
		}
		if method != "" {
			v.Method = method
		}
		if threshold != nil {
			v.Threshold = *threshold
		}
		s.verify = v
	}
	g := s.Raw.Gtune
	if g == nil || g.Reference == nil {
		return nil
	}
	ref := g.Reference
	if err := checkMethod(ref.ValidationMethod); err != nil {
		return l.errf("Gtune.Reference.ValidationMethod", "%v", err)
	}
	if ref.ValidationThreshold != nil && *ref.ValidationThreshold < 0 {
		return l.errf("Gtune.Reference.ValidationThreshold", "must not be negative")
	}
	cfg := make([]expr.Value, len(s.Params))
	set := make([]bool, len(s.Params))
	names := make([]string, 0, len(ref.Configuration))
	for n := range ref.Configuration {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		field := "Gtune.Reference.Configuration." + n
		i, ok := s.paramIndex[n]
		if !ok {
			return l.errf(field, "%q is not a tunable parameter", n)
		}
		x, err := expr.FromGo(ref.Configuration[n])
		if err != nil {
			return l.errf(field, "%v", err)
		}
		j := slices.IndexFunc(s.Params[i].Values, x.Equal)
		if j < 0 {
			return l.errf(field, "%s is not one of the values of %s %s", x.String(), n, expr.List(s.Params[i].Values).String())
		}
		cfg[i], set[i] = s.Params[i].Values[j], true
	}
	for i, p := range s.Params {
		if set[i] {
			continue
		}
		// Unnamed parameters take their Default, or their only value.
		if tps := s.Raw.ConfigurationSpace.TuningParameters; i < len(tps) && tps[i].Default != nil {
			d := tps[i].Default
			if x, err := expr.FromGo(d); err == nil {
				if j := slices.IndexFunc(p.Values, x.Equal); j >= 0 {
					cfg[i] = p.Values[j]
					continue
				}
			}
		}
		if len(p.Values) == 1 {
			cfg[i] = p.Values[0]
			continue
		}
		return l.errf("Gtune.Reference.Configuration", "does not give %s, which has no usable Default and several values", p.Name)
	}
	s.refConfig = cfg
	if s.verify == nil {
		v := &backend.Verification{Method: DefaultValidationMethod, Threshold: DefaultThreshold, Expected: map[string]backend.Fill{}}
		if ref.ValidationMethod != "" {
			v.Method = ref.ValidationMethod
		}
		if ref.ValidationThreshold != nil {
			v.Threshold = *ref.ValidationThreshold
		}
		s.verify = v
	}
	return nil
}

var validationMethods = []string{"AbsoluteDifference", "SideBySideComparison", "SideBySideRelativeComparison"}

func checkMethod(m string) error {
	if m == "" || slices.Contains(validationMethods, m) {
		return nil
	}
	return fmt.Errorf("unknown %q (valid: %s)", m, strings.Join(validationMethods, ", "))
}

func (l *loader) gtune() error {
	s := l.s
	g := s.Raw.Gtune
	if g == nil {
		g = &Gtune{}
	}
	// A library routine is not compiled: Kernel Tuner's defines would
	// only be noise among its options.
	s.ktDefines = (g.KernelTunerDefines == nil || *g.KernelTunerDefines) && s.routine == nil
	if s.ktDefines {
		s.unrollRE = map[string]*regexp.Regexp{}
		for _, p := range s.Params {
			if unrollParam(p.Name) {
				s.unrollRE[p.Name] = regexp.MustCompile(`\n\s*#pragma\s+unroll\s+` + regexp.QuoteMeta(p.Name) + `\b`)
			}
		}
	}
	// Metrics.
	known := map[string]bool{}
	for _, n := range ObservationNames {
		known[n] = true
	}
	for n := range s.Constants {
		known[n] = true
	}
	for n := range s.paramIndex {
		known[n] = true
	}
	names := map[string]bool{}
	for i, m := range g.Metrics {
		field := fmt.Sprintf("Gtune.Metrics[%d]", i)
		if m.Name == "" {
			return l.errf(field+".Name", "missing")
		}
		field = fmt.Sprintf("Gtune.Metrics[%d] (%s)", i, m.Name)
		if names[m.Name] {
			return l.errf(field+".Name", "duplicate metric %q", m.Name)
		}
		if slices.Contains(BuiltinObjectives, m.Name) || slices.Contains(ObservationNames, m.Name) {
			return l.errf(field+".Name", "%q is an observation name", m.Name)
		}
		if _, isParam := s.paramIndex[m.Name]; isParam {
			return l.errf(field+".Name", "%q is a tunable parameter", m.Name)
		}
		e, err := l.parse(field+".Expression", m.Expression)
		if err != nil {
			return err
		}
		for _, n := range e.Names() {
			if !known[n] {
				return l.errf(field+".Expression", "%s reads %q, which is not a tunable parameter, constant, earlier metric or observation (observations: %s)", quote(m.Expression), n, strings.Join(ObservationNames, ", "))
			}
		}
		met := Metric{Name: m.Name, Expr: e, Maximize: true, Unit: m.Unit}
		switch strings.ToLower(m.Direction) {
		case "", "maximize", "maximise":
		case "minimize", "minimise":
			met.Maximize = false
		default:
			return l.errf(field+".Direction", "unknown %q (valid: minimize, maximize)", m.Direction)
		}
		names[m.Name] = true
		if validName(m.Name) {
			known[m.Name] = true
		}
		s.Metrics = append(s.Metrics, met)
	}
	// Objective.
	s.Objective = g.Objective
	if s.Objective == "" {
		s.Objective = "time"
	}
	switch {
	case slices.Contains(BuiltinObjectives, s.Objective):
		s.ObjectiveMaximize = false
	default:
		idx := slices.IndexFunc(s.Metrics, func(m Metric) bool { return m.Name == s.Objective })
		if idx < 0 {
			valid := append([]string(nil), BuiltinObjectives...)
			for _, m := range s.Metrics {
				valid = append(valid, m.Name)
			}
			return l.errf("Gtune.Objective", "unknown objective %q (valid: %s)", s.Objective, strings.Join(valid, ", "))
		}
		s.ObjectiveMaximize = s.Metrics[idx].Maximize
	}
	switch strings.ToLower(g.ObjectiveDirection) {
	case "":
	case "minimize", "minimise":
		s.ObjectiveMaximize = false
	case "maximize", "maximise":
		s.ObjectiveMaximize = true
	default:
		return l.errf("Gtune.ObjectiveDirection", "unknown %q (valid: minimize, maximize)", g.ObjectiveDirection)
	}
	s.NeedsEnergy = slices.Contains(energyNames, s.Objective)
	for _, m := range s.Metrics {
		for _, n := range m.Expr.Names() {
			if slices.Contains(energyNames, n) {
				s.NeedsEnergy = true
			}
		}
	}
	// Measurement.
	s.Measurement = Measurement{Iterations: measure.DefaultIterations, EnergyWindow: measure.DefaultEnergyWindow, Timeout: DefaultTimeout,
		Protocol: measure.DefaultProtocol}
	s.Measurement.Protocol.Warmup = true
	// A steady warm-up gave the smallest run-to-run spread of energy on
	// a cold-started H100 (BENCHMARKS.md "Energy from a cold start").
	s.Measurement.Protocol.Thermal = measure.ThermalSteady
	if m := g.Measurement; m != nil {
		if err := CheckMeasurement(l.file, func(name string) string { return "Gtune.Measurement." + name }, m); err != nil {
			return err
		}
		if m.Iterations != nil {
			s.Measurement.Iterations = *m.Iterations
		}
		if m.EnergyWindowSeconds > 0 {
			s.Measurement.EnergyWindow = time.Duration(m.EnergyWindowSeconds * float64(time.Second))
		}
		if m.TimeoutSeconds > 0 {
			s.Measurement.Timeout = time.Duration(m.TimeoutSeconds * float64(time.Second))
		}
		s.Measurement.Energy = m.Energy
		if err := resolveProtocol(l, m, &s.Measurement); err != nil {
			return err
		}
	}
	if pl := g.Plausibility; pl != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"PeakGFLOPS", pl.PeakGFLOPS}, {"PeakGBs", pl.PeakGBs}, {"OutlierFactor", pl.OutlierFactor}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return l.errf("Gtune.Plausibility."+f.name, "must be a positive number (0: the default), got %v", f.v)
			}
		}
		if pl.OutlierFactor != 0 && pl.OutlierFactor <= 1 {
			return l.errf("Gtune.Plausibility.OutlierFactor", "must be above 1, got %v", pl.OutlierFactor)
		}
		s.Plausibility = Plausibility{PeakGFLOPS: pl.PeakGFLOPS, PeakGBs: pl.PeakGBs, OutlierFactor: pl.OutlierFactor}
	}
	// Simulation.
	if sm := g.Simulation; sm != nil {
		sim := &Simulation{Device: sm.Device, Noise: sm.Noise, Seed: sm.Seed, Stragglers: sm.Stragglers, StragglerFactor: sm.StragglerFactor, ColdStartC: sm.ColdStartC}
		if sm.ColdStartC < 0 || sm.ColdStartC > 120 || math.IsNaN(sm.ColdStartC) {
			return l.errf("Gtune.Simulation.ColdStartC", "must be a die temperature between 0 and 120 °C (0: not cold-started), got %v", sm.ColdStartC)
		}
		if !(sm.Stragglers >= 0 && sm.Stragglers < 1) {
			return l.errf("Gtune.Simulation.Stragglers", "must be a chance in [0, 1), got %v", sm.Stragglers)
		}
		if sm.StragglerFactor != 0 && !(sm.StragglerFactor > 1 && sm.StragglerFactor <= MaxSimStragglerFactor) {
			return l.errf("Gtune.Simulation.StragglerFactor", "must be a slow-down above 1 and at most %v, got %v", MaxSimStragglerFactor, sm.StragglerFactor)
		}
		if sim.Device == "" {
			sim.Device = DefaultSimDevice
		}
		if !(sm.Noise >= 0 && sm.Noise <= MaxSimNoise) {
			return l.errf("Gtune.Simulation.Noise", "must be a relative standard deviation between 0 and %v (%v %%), got %v", MaxSimNoise, 100*MaxSimNoise, sm.Noise)
		}
		if sm.Noise == 0 {
			sim.Noise = DefaultSimNoise
		}
		srcs := [len(simFields)]string{sm.Flops, sm.Bytes, sm.Registers, sm.SharedMemory, sm.Efficiency, sm.FP64Flops, sm.FP64TensorFlops, sm.WriteBytes, sm.L2Bytes, sm.SharedBytes, sm.Invalid, sm.CompileFails, sm.CompileCrashes}
		fields := simFields
		dst := [len(simFields)]**expr.Expr{&sim.Flops, &sim.Bytes, &sim.Registers, &sim.SharedMemory, &sim.Efficiency, &sim.FP64Flops, &sim.FP64TensorFlops, &sim.WriteBytes, &sim.L2Bytes, &sim.SharedBytes, &sim.Invalid, &sim.CompileFails, &sim.CompileCrashes}
		for i, src := range srcs {
			field := "Gtune.Simulation." + fields[i]
			if strings.TrimSpace(src) == "" {
				if i < 2 {
					return l.errf(field, "missing (the simulated GPU needs Flops and Bytes)")
				}
				continue
			}
			e, err := l.parse(field, src)
			if err != nil {
				return err
			}
			if sim.bound[i], err = l.bind(field, e, nil); err != nil {
				return err
			}
			*dst[i] = e
		}
		s.Simulation = sim
	}
	return nil
}

func (l *loader) search() error {
	s := l.s
	if sr := s.Raw.Search; sr != nil {
		s.Strategy = sr.Name
		if len(sr.Attributes) > 0 {
			s.StrategyOptions = map[string]any{}
			for i, a := range sr.Attributes {
				if a.Name == "" {
					return l.errf(fmt.Sprintf("Search.Attributes[%d].Name", i), "missing")
				}
				s.StrategyOptions[a.Name] = plain(a.Value)
			}
		}
	}
	for i, b := range s.Raw.Budget {
		field := fmt.Sprintf("Budget[%d]", i)
		v := b.BudgetValue
		if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return l.errf(field+".BudgetValue", "must be positive, got %v", v)
		}
		switch b.Type {
		case "TuningDuration":
			s.Budget.Duration = time.Duration(v * float64(time.Second))
		case "ConfigurationCount":
			if v != math.Trunc(v) || v > math.MaxInt32 {
				return l.errf(field+".BudgetValue", "a ConfigurationCount must be a whole number, got %v", v)
			}
			s.Budget.MaxConfigurations = int(v)
		case "ConfigurationFraction":
			if v > 1 {
				return l.errf(field+".BudgetValue", "a ConfigurationFraction must be in (0, 1], got %v", v)
			}
			s.Budget.Fraction = v
		default:
			return l.errf(field+".Type", "unknown %q (valid: TuningDuration, ConfigurationCount, ConfigurationFraction)", b.Type)
		}
	}
	return nil
}

// plain gives decoded JSON and YAML the same Go types: int64 for integers,
// float64 for other numbers, []any, map[string]any.
func plain(x any) any {
	switch t := x.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case int:
		return int64(t)
	case uint64:
		return float64(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = plain(e)
		}
		return out
	}
	return x
}

// nonFinite finds a float field of v (a decoded spec: structs, pointers,
// slices, maps) that is NaN or infinite: its path as the file spells it
// (the field's json name, [i] for list elements) and its value; "" when
// every number is finite.
func nonFinite(v reflect.Value, path string) (string, float64) {
	if path == "Gtune.Measurement" {
		// CheckMeasurement bounds each of its numbers, NaN and ±Inf
		// included, in the words a workload's section gets too.
		return "", 0
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path)
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path, f
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				name = t.Field(i).Name
			}
			if p, f := nonFinite(v.Field(i), join(path, name)); p != "" {
				return p, f
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p, f := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, f
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if p, f := nonFinite(iter.Value(), join(path, fmt.Sprint(iter.Key().Interface()))); p != "" {
				return p, f
			}
		}
	}
	return "", 0
}
