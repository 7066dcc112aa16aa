package spec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// BuildSpace enumerates the valid configurations (see space.Build), with
// space.DefaultMaxConfigurations and no cancellation.
func (s *Spec) BuildSpace() (*space.Space, error) {
	return s.BuildSpaceContext(context.Background(), space.BuildOptions{})
}

// BuildSpaceContext enumerates the valid configurations
// (space.BuildContext): it returns ctx's error, unwrapped, when ctx ends
// first (within well under a second), and otherwise errors as *Error
// naming the spec file and ConfigurationSpace, wrapping the space's own
// (errors.As finds a *space.TooLargeError).
func (s *Spec) BuildSpaceContext(ctx context.Context, opts space.BuildOptions) (*space.Space, error) {
	sp, err := space.BuildContext(ctx, s.Params, s.Restrictions, s.Constants, opts)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, ctx.Err()
		}
		return nil, &Error{File: s.Path, Field: "ConfigurationSpace", Msg: strings.TrimPrefix(err.Error(), "space: "), Err: err}
	}
	return sp, nil
}

// Problem gives what stays the same across configurations: the kernel, its
// arguments with sizes evaluated, and verification (from
// ReferenceArguments, else from Gtune.Reference with Expected empty: the
// tuner runs ReferenceConfig first with SaveReference; nil when the spec
// has neither). Every call returns a fresh copy. Source is empty when the
// spec was loaded with NoSource.
func (s *Spec) Problem() (*backend.Problem, error) {
	k := backend.Kernel{
		KernelName:      s.KernelName,
		Source:          s.Source,
		SourceName:      s.KernelFile,
		Language:        s.Language,
		CompilerOptions: append([]string(nil), s.CompilerOptions...),
		Args:            append([]backend.Arg(nil), s.args...),
	}
	if s.verify != nil {
		v := *s.verify
		v.Expected = maps.Clone(s.verify.Expected)
		k.Verification = &v
	}
	return backend.Single(k), nil
}

// ReferenceConfig gives Gtune.Reference.Configuration as parameter values
// in parameter order (parameters it leaves out take their Default, or their
// only value); ok is false when the spec names no reference. Names and
// values are checked at Load, so err is nil for a loaded spec. Whether the
// configuration satisfies the restrictions is for the caller to check
// (space.IndexesOf, IndexOf).
func (s *Spec) ReferenceConfig() ([]expr.Value, bool, error) {
	if s.refConfig == nil {
		return nil, false, nil
	}
	return append([]expr.Value(nil), s.refConfig...), true, nil
}

type cfgEnv struct {
	s   *Spec
	cfg []expr.Value
}

func (e cfgEnv) Lookup(name string) (expr.Value, bool) {
	if i, ok := e.s.paramIndex[name]; ok && i < len(e.cfg) {
		return e.cfg[i], true
	}
	v, ok := e.s.Constants[name]
	return v, ok
}

// Env gives the parameters of cfg (in parameter order) and the constants
// as names, for evaluating metrics; the caller layers observations on top.
func (s *Spec) Env(cfg []expr.Value) expr.Env { return cfgEnv{s, cfg} }

// Key is the Kernel Tuner cache key of cfg, as space.Space.Key.
func (s *Spec) Key(cfg []expr.Value) string { return KeyOf(cfg) }

// KeyOf is the cache key of any configuration (values as Python prints
// them, joined by commas), as space.Space.Key gives it.
func KeyOf(cfg []expr.Value) string {
	var b strings.Builder
	for i, v := range cfg {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(v.PyStr())
	}
	return b.String()
}

// defineValue writes a parameter for -Dname=value: bools as 1/0, ints as
// written, floats as Python's repr, strings as they are.
func defineValue(v expr.Value) string {
	switch v.Kind() {
	case expr.KindBool:
		if v.Truthy() {
			return "1"
		}
		return "0"
	case expr.KindString:
		return v.Str()
	}
	return v.String()
}

// cfgErr is an *Error at field (relative: "LocalSize.X",
// "Simulation.Flops", a parameter's name) for one configuration, which the
// message names.
func (s *Spec) cfgErr(cfg []expr.Value, field, format string, a ...any) error {
	var b strings.Builder
	b.WriteString("for configuration {")
	for i, v := range cfg {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", s.Params[i].Name, v.String())
	}
	b.WriteString("}: ")
	fmt.Fprintf(&b, format, a...)
	switch {
	case strings.HasPrefix(field, "Simulation."):
		field = "Gtune." + field
	case isSetting(field):
		field = "ConfigurationSpace.TuningParameters (" + field + ")"
	default:
		field = "KernelSpecification." + field
	}
	return &Error{File: s.Path, Field: field, Msg: b.String()}
}

func (s *Spec) evalInt(cfg []expr.Value, field string, b *expr.Bound) (int64, error) {
	v, err := b.Eval(cfg)
	if err != nil {
		return 0, s.cfgErr(cfg, field, "%s: %v", quote(b.Source()), err)
	}
	n, ok := toInt(v)
	if !ok {
		return 0, s.cfgErr(cfg, field, "%s evaluates to %s, not a whole number", quote(b.Source()), expr.Excerpt(v.String()))
	}
	return n, nil
}

// isSetting reports whether a tunable parameter is a GPU setting
// (backend.ParamCoreClock, ParamMemClock, ParamPowerLimit) rather than a
// compile-time value.
func isSetting(name string) bool {
	return name == backend.ParamCoreClock || name == backend.ParamMemClock || name == backend.ParamPowerLimit
}

// setting fills the field of set for the reserved parameter name
// from its value v: clocks in MHz as positive whole numbers, the power
// limit in W as a positive number (Kernel Tuner's nvml_pwr_limit is in
// W as well).
func (s *Spec) setting(set *backend.Settings, cfg []expr.Value, name string, v expr.Value) error {
	if name == backend.ParamPowerLimit {
		f, ok := v.Float()
		if !ok || !(f > 0) || math.IsInf(f, 0) {
			return s.cfgErr(cfg, name, "%s is %s; a power limit must be a positive number of W", name, v.String())
		}
		set.PowerLimitW = f
		return nil
	}
	n, ok := toInt(v)
	if !ok || n <= 0 || n > math.MaxInt32 {
		return s.cfgErr(cfg, name, "%s is %s; a clock must be a positive whole number of MHz", name, v.String())
	}
	if name == backend.ParamCoreClock {
		set.CoreClockMHz = int(n)
	} else {
		set.MemClockMHz = int(n)
	}
	return nil
}

// Job gives the kernel instance of one configuration (its values in
// parameter order): Defines for every tunable parameter but the GPU
// settings nvml_gr_clock, nvml_mem_clock and nvml_pwr_limit (Settings
// gives those), plus Kernel Tuner's defines and source rewrite
// (spec/kerneltuner.go) unless Gtune.KernelTunerDefines is false; the
// grid and thread block (see Spec for the geometry rules), dynamic shared
// memory, and Work from Gtune.Simulation (nil without). What is measured
// is Request's; Plan puts the three together. Errors (an
// *Error naming the field and the configuration): wrong number of values,
// a geometry expression that fails or gives a non-positive grid or thread
// block dimension, a negative shared-memory size, a Simulation expression
// that fails. CheckJobs finds these for a whole space before any GPU work.
func (s *Spec) Job(cfg []expr.Value) (*backend.Job, error) { return s.job(cfg, true) }

// Settings gives the GPU settings of cfg (the tunable parameters
// nvml_gr_clock, nvml_mem_clock and nvml_pwr_limit); nil when the space
// has none. Errors: a value that is not a positive number.
func (s *Spec) Settings(cfg []expr.Value) (*backend.Settings, error) {
	var set *backend.Settings
	for i, v := range cfg {
		if name := s.Params[i].Name; isSetting(name) {
			if set == nil {
				set = &backend.Settings{}
			}
			if err := s.setting(set, cfg, name, v); err != nil {
				return nil, err
			}
		}
	}
	return set, nil
}

// Plan gives the plan of one configuration: its kernel instance (Job;
// the caller compiles it into Launches[0].Binary) on stream 0, its GPU
// settings, and the spec's measurement (Request). Errors as Job and
// Settings.
func (s *Spec) Plan(cfg []expr.Value) (*backend.Plan, error) {
	j, err := s.Job(cfg)
	if err != nil {
		return nil, err
	}
	set, err := s.Settings(cfg)
	if err != nil {
		return nil, err
	}
	return backend.SingleLaunch(j, nil, set, s.Request(), s.Measurement.Timeout), nil
}

// Geometry gives the grid (thread blocks) and thread block (threads) of
// cfg without building its kernel instance: for occupancy and the like.
// Errors as Job.
func (s *Spec) Geometry(cfg []expr.Value) (grid, block [3]int, err error) {
	j, err := s.job(cfg, false)
	if err != nil {
		return grid, block, err
	}
	return j.Grid, j.Block, nil
}

// job is Job; instance false skips building the kernel instance (defines
// and source), which only the compiler needs.
func (s *Spec) job(cfg []expr.Value, instance bool) (*backend.Job, error) {
	if len(cfg) != len(s.Params) {
		return nil, fmt.Errorf("spec %s: configuration has %d values, the spec has %d tunable parameters", s.Path, len(cfg), len(s.Params))
	}
	j := &backend.Job{Key: s.Key(cfg), Defines: make([]backend.Define, 0, len(cfg))}
	for i, v := range cfg {
		name := s.Params[i].Name
		if isSetting(name) {
			continue
		}
		j.Defines = append(j.Defines, backend.Define{Name: name, Value: defineValue(v)})
	}
	for d := range 3 {
		block, err := s.evalInt(cfg, "LocalSize."+dimNames[d], s.local[d])
		if err != nil {
			return nil, err
		}
		if block <= 0 {
			return nil, s.cfgErr(cfg, "LocalSize."+dimNames[d], "the thread block dimension is %d; it must be positive", block)
		}
		grid, err := s.grid(cfg, d, block)
		if err != nil {
			return nil, err
		}
		if grid <= 0 || grid > math.MaxInt32 {
			return nil, s.cfgErr(cfg, s.gridField(d), "grid dimension %s is %d thread blocks; it must be positive and fit 32 bits", dimNames[d], grid)
		}
		j.Grid[d], j.Block[d] = int(grid), int(block)
	}
	if instance {
		s.kernelInstance(j, cfg)
	}
	if s.shared != nil {
		n, err := s.evalInt(cfg, "SharedMemory", s.shared)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, s.cfgErr(cfg, "SharedMemory", "%d bytes; it must not be negative", n)
		}
		j.DynamicSharedBytes = int(n)
	}
	if sim := s.Simulation; sim != nil {
		w, err := s.work(cfg, sim)
		if err != nil {
			return nil, err
		}
		j.Work = w
	}
	return j, nil
}

var dimNames = [3]string{"X", "Y", "Z"}

// gridField names the field that sets dimension d of the grid.
func (s *Spec) gridField(d int) string {
	switch {
	case len(s.gridDiv[d]) > 0 || s.gridDivOne[d]:
		return "GridDiv" + dimNames[d]
	case s.hasProblem:
		return "ProblemSize"
	}
	return "GlobalSize." + dimNames[d]
}

// grid gives the grid's dimension d in thread blocks for cfg, whose thread
// block is block threads in that dimension (see Spec for the rules).
func (s *Spec) grid(cfg []expr.Value, d int, block int64) (int64, error) {
	div := block
	switch {
	case s.gridDivOne[d]:
		div = 1
	case len(s.gridDiv[d]) > 0:
		div = 1
		for i, b := range s.gridDiv[d] {
			x, err := s.evalInt(cfg, fmt.Sprintf("GridDiv%s[%d]", dimNames[d], i), b)
			if err != nil {
				return 0, err
			}
			div *= x
		}
		if div <= 0 {
			return 0, s.cfgErr(cfg, "GridDiv"+dimNames[d], "the divisor is %d; it must be positive", div)
		}
	case s.hasProblem:
		// Kernel Tuner: params.get(block_size_names[d], 1).
		div = 1
		if i := s.divParam[d]; i >= 0 {
			n, ok := toInt(cfg[i])
			if !ok || n <= 0 {
				return 0, s.cfgErr(cfg, "LocalSize."+dimNames[d], "%s is %s; as the default grid divisor of dimension %s it must be a positive whole number", s.blockNames[d], cfg[i].String(), dimNames[d])
			}
			div = n
		}
	}
	if s.hasProblem {
		size := s.problem[d]
		if b := s.problemBound[d]; b != nil {
			n, err := s.evalInt(cfg, fmt.Sprintf("ProblemSize[%d]", d), b)
			if err != nil {
				return 0, err
			}
			if n <= 0 {
				return 0, s.cfgErr(cfg, fmt.Sprintf("ProblemSize[%d]", d), "is %d; a problem size must be positive", n)
			}
			size = n
		}
		return (size + div - 1) / div, nil
	}
	global, err := s.evalInt(cfg, "GlobalSize."+dimNames[d], s.global[d])
	if err != nil || s.GlobalSizeType == "CUDA" {
		return global, err
	}
	return (global + div - 1) / div, nil
}

// simFields are Gtune.Simulation's expression fields in Simulation.bound
// order: simNumbers numbers, then three flags.
var simFields = [...]string{"Flops", "Bytes", "Registers", "SharedMemory", "Efficiency", "FP64Flops", "FP64TensorFlops", "WriteBytes", "L2Bytes", "SharedBytes", "Invalid", "CompileFails", "CompileCrashes"}

const simNumbers = 10

func (s *Spec) work(cfg []expr.Value, sim *Simulation) (*backend.Work, error) {
	names := simFields
	w := &backend.Work{Registers: 32, Efficiency: 1}
	for i, b := range sim.bound {
		if b == nil {
			continue
		}
		field := "Simulation." + names[i]
		v, err := b.Eval(cfg)
		if err != nil {
			return nil, s.cfgErr(cfg, field, "%s: %v", quote(b.Source()), err)
		}
		if i >= simNumbers { // the flags
			*[...]*bool{&w.Invalid, &w.CompileFails, &w.CompileCrashes}[i-simNumbers] = v.Truthy()
			continue
		}
		f, ok := v.Float()
		if !ok {
			return nil, s.cfgErr(cfg, field, "%s evaluates to %s, not a number", quote(b.Source()), expr.Excerpt(v.String()))
		}
		if f < 0 {
			return nil, s.cfgErr(cfg, field, "%s is %v; it must not be negative", quote(b.Source()), f)
		}
		switch i {
		case 0:
			w.Flops = f
		case 1:
			w.Bytes = f
		case 2:
			w.Registers = int(f)
		case 3:
			w.SharedMemory = int(f)
		case 4:
			w.Efficiency = f
		case 5:
			w.FP64Flops = f
		case 6:
			w.FP64TensorFlops = f
		case 7:
			w.WriteBytes = f
		case 8:
			w.L2Bytes = f
		case 9:
			w.SharedBytes = f
		}
	}
	if w.WriteBytes > w.Bytes {
		return nil, s.cfgErr(cfg, "Simulation.WriteBytes", "%s is %v, more than Bytes (%v): the stores are part of the bytes moved", quote(sim.WriteBytes.Source()), w.WriteBytes, w.Bytes)
	}
	return w, nil
}

// WithoutVerification returns a copy of s that checks no output: no
// reference run and no comparison (a profiling pass measures a
// configuration already verified; a reference run would be profiled
// too). The copy shares everything else with s.
func (s *Spec) WithoutVerification() *Spec {
	c := *s
	c.verify = nil
	return &c
}
