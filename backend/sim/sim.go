// Package sim is a simulated GPU: a backend.Backend whose timings and
// energy come from an occupancy-aware roofline model (package model) of a
// device.Description, driven by the per-configuration backend.Work that
// the tuner evaluates from a spec's Gtune.Simulation section. It lets the
// whole tuner run in CI, for GPUs one does not have, and for clock and
// power-limit studies where real settings may not be changed.
//
// Everything is deterministic: the noise of a configuration derives from
// (Options.Seed, Plan.Key, repetition), never from call order. No time
// passes: Run returns at once and reports simulated durations.
//
// The calibration (model.PowerModel, latency-hiding constants, launch overhead)
// is provisional: fitted to a few H100 and A100 measurements and, for the
// K20 boards, to the published K20m figures of
// autotuning-energy-efficiency-power-capping.md Table 3.3 (calibration.go),
// not to a systematic study.
package sim

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/model"
)

// Options configure a simulated GPU. Zero values select the defaults.
type Options struct {
	Seed  int64   // seeds the noise together with Plan.Key
	Noise float64 // relative standard deviation of timing noise; 0: 0.01; < 0: none
	// LaunchOverheadUs is the host-side cost of one launch, µs; 0: 3 µs
	// (typical cudaLaunchKernel + event timing on a recent driver).
	LaunchOverheadUs float64
	// CoreClockMHz is the SM clock; 0: the highest supported. Other values
	// are taken down to the nearest supported clock (the lowest if below it).
	CoreClockMHz int
	// PowerLimitW is the enforced power limit; 0: the default. Values are
	// clamped into [PowerLimitMinW, PowerLimitMaxW].
	PowerLimitW float64
	// Power overrides the power model; zero: model.PowerModelFor(device).
	Power model.PowerModel
	// Index is the simulated GPU's ordinal among several of one model
	// (a run over several GPUs, gtune tune --devices): GPU 0 is
	// "SIM-<id>", GPU i "SIM-<id>-i". The model's answers do not depend
	// on it: N simulated GPUs of one model measure alike.
	Index int
	// Profile, when set, makes this a projection rather than a
	// simulation (gtune --backend model): each launch takes the time
	// model.Project gives over this device profile (measured by gtune
	// probe, or the specifications'), without noise; power and energy
	// follow the power model at that time. The GPU is named "Projected
	// <name>", its backend "model", its UUID "MODEL-<id>".
	Profile *model.Profile
	// AllowSettings accepts plans with Plan.Settings (the GPU's clocks
	// and power limit), as the CUDA backend's Options.AllowSettings
	// does; without it such a plan fails with backend.SettingsRefused,
	// so that what works on the simulated GPU works on a real one.
	AllowSettings bool
	// RunWall, when positive, is the wall time each Run takes, held
	// before it answers (interrupted by the context): a simulated GPU
	// that stands for a real kernel's evaluation time, for the scaling
	// and fault tests of runs over several GPUs and cluster nodes. The
	// times it reports stay the model's.
	RunWall time.Duration
	// Stragglers is the chance, per launch and timed run, that the
	// launch straggles: it takes StragglerFactor times as long (drawn
	// uniformly within ±25 % of it), as launches on an H100 did in the
	// launch-order measurements (BENCHMARKS.md "Does one order have one
	// time?": one launch of 12.7–22.5 ms where the order's others took
	// 4.9–5.3 ms, in 58 % of the runs of six-kernel plans). 0: none.
	Stragglers float64
	// StragglerFactor is the mean slow-down of a straggling launch;
	// 0: DefaultStragglerFactor.
	StragglerFactor float64
	// ColdStart, when set, gives the GPU a heat sink that warms over a
	// run and a die whose leakage power follows its temperature, from a
	// GPU started cold: what made a cold H100's energies drift (thermal
	// policies, measure.Thermal*). Nil: every plan starts at the steady
	// temperature of its power and power does not depend on temperature.
	ColdStart *ColdStart
	// PowerOffsetW is added to the board power this GPU draws, idle and
	// busy, W (may be negative): GPUs of one model differ, as four H100s
	// measured the same configuration 4.7 % apart in energy
	// (BENCHMARKS.md, "The executor owns a GPU's life"). 0: none.
	PowerOffsetW float64
}

// ColdStart is the simulated GPU's thermal state across plans (zero
// fields take the defaults named). The steady die temperature at board
// power P is the power model's SteadyTempC(P) = ambient + R·P; of the
// rise R·P a share SinkShare is the heat sink's, reached with SinkTau,
// the rest the die's over the sink, reached in 1.5 s. Board power is the
// model's at its steady temperature plus LeakageWPerC per °C the die is
// above it (below: less).
type ColdStart struct {
	StartC       float64       // die and heat sink at the first plan, °C (default: ambient + 10)
	SinkTau      time.Duration // the heat sink's time constant (default 60 s)
	SinkShare    float64       // share of the temperature rise that is the heat sink's (default 0.4)
	LeakageWPerC float64       // W/°C (default 1.2: an H100's 0.24 %/°C at 500 W)
	// GapS is the idle time between plans (compilations, the strategy),
	// s (default 0.25).
	GapS float64
}

func (c ColdStart) withDefaults(ambientC float64) ColdStart {
	if c.StartC == 0 {
		c.StartC = ambientC + 10
	}
	if c.SinkTau <= 0 {
		c.SinkTau = 60 * time.Second
	}
	if c.SinkShare <= 0 {
		c.SinkShare = 0.4
	}
	if c.LeakageWPerC <= 0 {
		c.LeakageWPerC = 1.2
	}
	if c.GapS <= 0 {
		c.GapS = 0.25
	}
	return c
}

// thermalState is a cold-started GPU's die and heat-sink temperatures,
// carried from plan to plan.
type thermalState struct {
	cfg         ColdStart
	dieC, sinkC float64
}

// DefaultStragglerFactor is the mean slow-down of a straggling launch:
// 16.1 ms against 4.9 ms on the H100 (Options.Stragglers).
const DefaultStragglerFactor = 3.2

// Format identifies a simulated binary image.
const Format = "gtune-sim/1"

// compileMs is the simulated compile time of one configuration (NVRTC
// compiles of tuning kernels take a few hundred ms).
const compileMs = 250

// Sim is a simulated GPU. Compile is safe for concurrent use; Run is
// serialised.
type Sim struct {
	runWall     time.Duration // Options.RunWall
	stragglers  float64       // Options.Stragglers
	straggleF   float64       // Options.StragglerFactor
	dev         *device.Description
	seed        int64
	noise       float64
	overheadMs  float64
	clockMHz    int
	powerLimitW float64
	power       model.PowerModel
	index       int            // Options.Index
	profile     *model.Profile // Options.Profile
	allowSet    bool           // Options.AllowSettings
	offsetW     float64        // Options.PowerOffsetW

	mu      sync.Mutex
	problem *backend.Problem
	closed  bool
	// meter is the measurement state measure.Run keeps across plans: idle
	// power per device state, warm-up.
	meter measure.Meter
	// thermal is the carried temperature state (Options.ColdStart); nil
	// without one.
	thermal *thermalState
}

// New returns a simulated d with opts (see Options for defaults). d is
// copied; it must be a valid description (device.Lookup's are).
func New(d *device.Description, opts Options) *Sim {
	dc := *d
	s := &Sim{dev: &dc, seed: opts.Seed, noise: opts.Noise, overheadMs: opts.LaunchOverheadUs / 1e3, power: opts.Power, index: opts.Index, profile: opts.Profile, runWall: opts.RunWall,
		stragglers: opts.Stragglers, straggleF: opts.StragglerFactor, allowSet: opts.AllowSettings}
	if s.straggleF <= 0 {
		s.straggleF = DefaultStragglerFactor
	}
	if s.profile != nil {
		s.noise = -1 // a projection has no noise
	}
	if s.noise == 0 {
		s.noise = 0.01
	} else if s.noise < 0 {
		s.noise = 0
	}
	if opts.LaunchOverheadUs == 0 {
		s.overheadMs = 0.003
	}
	s.clockMHz = snapClock(d, opts.CoreClockMHz)
	s.powerLimitW = opts.PowerLimitW
	if s.powerLimitW == 0 {
		s.powerLimitW = d.PowerLimitDefaultW
	}
	s.powerLimitW = math.Min(math.Max(s.powerLimitW, d.PowerLimitMinW), d.PowerLimitMaxW)
	if s.power == (model.PowerModel{}) {
		s.power = model.PowerModelFor(d)
	}
	s.offsetW = opts.PowerOffsetW
	if opts.ColdStart != nil {
		c := opts.ColdStart.withDefaults(s.power.AmbientC)
		s.thermal = &thermalState{cfg: c, dieC: c.StartC, sinkC: c.StartC}
	}
	return s
}

func snapClock(d *device.Description, want int) int {
	clocks := d.CoreClocksMHz
	if want <= 0 {
		return d.MaxCoreClockMHz()
	}
	for _, c := range clocks { // descending
		if c <= want {
			return c
		}
	}
	return clocks[len(clocks)-1]
}

// Description returns a copy of the simulated device's description.
func (s *Sim) Description() device.Description { return *s.dev }

// Simulated marks the backend.Simulator capability.
func (s *Sim) Simulated() {}

// Traits implements backend.TraitDeclarer: the simulated GPU compiles
// nothing, models its results and takes resources from the declared
// work.
func (s *Sim) Traits() backend.Traits {
	return backend.Traits{InstantCompile: true, Modelled: true, DeclaredResources: true}
}

var _ backend.Simulator = (*Sim)(nil)

// Device describes the simulated GPU: its description, named "Simulated
// <name>", with what a driver would answer in Local (the simulator's SM
// clock and power limit; an energy counter when the device has a power
// sensor).
func (s *Sim) Device() device.Description {
	d := s.dev.Clone()
	d.Name = "Simulated " + s.dev.Name
	uuid, be := "SIM-"+d.ID, "sim"
	if s.profile != nil {
		d.Name, uuid, be = "Projected "+s.dev.Name, "MODEL-"+d.ID, "model"
	}
	if s.index > 0 {
		uuid += "-" + strconv.Itoa(s.index)
	}
	d.Local = backend.DeviceInfo{
		Backend: be, Index: s.index, Name: d.Name, UUID: uuid, Driver: Format,
		ComputeMajor: d.ComputeMajor, ComputeMinor: d.ComputeMinor, SMs: d.SMs, MemoryBytes: d.MemoryBytes,
		MaxThreadsPerBlock: d.MaxThreadsPerBlock, SMClockMHz: s.clockMHz, MaxSMClockMHz: d.MaxCoreClockMHz(),
		MemClockMHz: d.MemoryClockMHz, PowerLimitW: s.powerLimitW, MinPowerLimitW: d.PowerLimitMinW,
		MaxPowerLimitW: d.PowerLimitMaxW, HasEnergyCounter: d.HasPowerSensor,
	}
	return *d
}

var errClosed = errors.New("sim: backend is closed")

// typeBytes are the sizes of T1 argument types, bytes.
var typeBytes = map[string]int64{
	"bool": 1, "char": 1, "uchar": 1, "int8": 1, "uint8": 1,
	"half": 2, "bfloat16": 2, "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
	"float": 4, "int": 4, "uint": 4, "int32": 4, "uint32": 4, "half2": 4,
	"double": 8, "long": 8, "ulong": 8, "int64": 8, "uint64": 8, "float2": 8, "int2": 8, "uint2": 8,
	"float3": 12, "int3": 12, "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "double3": 24, "double4": 32,
}

// Prepare checks the problem's arguments and that the vectors fit in
// device memory, and keeps p for verification thresholds. Errors: an
// unknown argument type, a negative count, or more bytes than MemoryBytes.
func (s *Sim) Prepare(ctx context.Context, p *backend.Problem) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		return errors.New("sim: Prepare: nil problem")
	}
	var total int64
	for _, k := range p.Kernels {
		for _, a := range k.Args {
			if a.Kind != backend.ArgVector {
				continue
			}
			size, ok := typeBytes[a.Type]
			if !ok {
				return fmt.Errorf("sim: Prepare: kernel %s: argument %q has unknown type %q", k.KernelName, a.Name, a.Type)
			}
			if a.Count < 0 {
				return fmt.Errorf("sim: Prepare: kernel %s: argument %q has negative count %d", k.KernelName, a.Name, a.Count)
			}
			total += size * a.Count
		}
	}
	if total > s.dev.MemoryBytes {
		return fmt.Errorf("sim: Prepare: out of device memory: arguments need %d bytes, %s has %d", total, s.dev.Name, s.dev.MemoryBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.problem = p
	return nil
}

// image is what a simulated binary holds.
type image struct {
	Format             string       `json:"format"`
	Device             string       `json:"device"`
	Key                string       `json:"key"`
	Work               backend.Work `json:"work"`
	MaxThreadsPerBlock int          `json:"max_threads_per_block"`
}

// Compile "compiles" one configuration: it checks j.Work and encodes it in
// the Binary's Image. Errors: a nil Job.Work (the spec has no
// Gtune.Simulation section) is a plain error; Work.CompileFails,
// Work.CompileCrashes (in this process the crash is reported, not
// performed), static shared memory above the 48 KiB static limit,
// registers above the per-thread maximum or a Work value out of range are
// *backend.CompileError with a compiler-style log.
func (s *Sim) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	t, err := s.compileTask(ctx, j)
	if err != nil {
		return nil, err
	}
	if j.Work.CompileCrashes {
		return nil, &backend.CompileError{Log: fmt.Sprintf("%s: the compiler crashed (simulated: Gtune.Simulation.CompileCrashes) on configuration %q", t.File, j.Key)}
	}
	return t.compile()
}

// CompileTask is compileproc.Remote: compiling j as data for a compile
// worker process, where a configuration with Work.CompileCrashes crashes
// the process as a broken compiler would. Errors: as Compile's plain
// errors.
func (s *Sim) CompileTask(j *backend.Job) (compileproc.Task, error) {
	t, err := s.compileTask(context.Background(), j)
	if err != nil {
		return compileproc.Task{}, err
	}
	payload, err := json.Marshal(t)
	if err != nil {
		return compileproc.Task{}, fmt.Errorf("sim: encoding the compilation of %s: %w", j.Key, err)
	}
	return compileproc.Task{Kind: taskKind, Key: j.Key, Payload: payload}, nil
}

var _ compileproc.Remote = (*Sim)(nil)

// taskKind names simulated compilations in compile workers.
const taskKind = "sim"

func init() {
	compileproc.Register(taskKind, func(ctx context.Context, payload []byte) (*backend.Binary, error) {
		var t compileTask
		if err := json.Unmarshal(payload, &t); err != nil {
			return nil, fmt.Errorf("sim: decoding a compilation: %w", err)
		}
		if t.Job.Work != nil && t.Job.Work.CompileCrashes {
			panic(fmt.Sprintf("sim: simulated compiler crash on configuration %q (Gtune.Simulation.CompileCrashes)", t.Job.Key))
		}
		return t.compile()
	})
}

// compileTask is everything a simulated compilation depends on.
type compileTask struct {
	Device *device.Description `json:"device"`
	Seed   int64               `json:"seed"`
	Kernel string              `json:"kernel"`
	File   string              `json:"file"`
	Job    *backend.Job        `json:"job"`
}

func (s *Sim) compileTask(ctx context.Context, j *backend.Job) (*compileTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if j == nil || j.Work == nil {
		return nil, errors.New("sim: Compile: the job has no simulated work (the spec needs a Gtune.Simulation section)")
	}
	s.mu.Lock()
	closed, p := s.closed, s.problem
	s.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if p == nil {
		// As the CUDA backend: a kernel compiles against the problem the
		// GPU prepared (its arguments' types).
		return nil, errors.New("sim: Compile before Prepare")
	}
	kernel, file := "kernel", "kernel.cu"
	if p != nil && j.Kernel >= 0 && j.Kernel < len(p.Kernels) {
		kernel, file = p.Kernels[j.Kernel].KernelName, p.Kernels[j.Kernel].SourceName
	}
	return &compileTask{Device: s.dev, Seed: s.seed, Kernel: kernel, File: file, Job: j}, nil
}

// compile checks the job's work against the device and encodes it.
func (t *compileTask) compile() (*backend.Binary, error) {
	j, w, d := t.Job, *t.Job.Work, t.Device
	kernel, file := t.Kernel, t.File
	fail := func(format string, a ...any) (*backend.Binary, error) {
		return nil, &backend.CompileError{Log: fmt.Sprintf("%s: ", file) + fmt.Sprintf(format, a...) + fmt.Sprintf("\n(simulated compile of configuration %q on %s)\n", j.Key, d.Name)}
	}
	switch {
	case w.CompileFails:
		return fail("error: configuration rejected: Gtune.Simulation.CompileFails is true")
	case w.Flops < 0 || w.Bytes < 0 || math.IsNaN(w.Flops) || math.IsNaN(w.Bytes) || math.IsInf(w.Flops, 0) || math.IsInf(w.Bytes, 0):
		return fail("error: Gtune.Simulation Flops %g and Bytes %g must be finite and >= 0", w.Flops, w.Bytes)
	case w.Efficiency < 0 || w.Efficiency > 1 || math.IsNaN(w.Efficiency):
		return fail("error: Gtune.Simulation.Efficiency %g must lie in (0, 1] (0 means 1)", w.Efficiency)
	case w.Registers < 0 || w.SharedMemory < 0:
		return fail("error: Gtune.Simulation Registers %d and SharedMemory %d must be >= 0", w.Registers, w.SharedMemory)
	case w.Registers > d.MaxRegistersPerThread:
		return fail("ptxas error   : Entry function '%s' uses %d registers, more than the maximum %d per thread", kernel, w.Registers, d.MaxRegistersPerThread)
	case w.SharedMemory > d.SharedMemoryPerBlock:
		return fail("ptxas error   : Entry function '%s' uses too much shared data (0x%x bytes, 0x%x max)", kernel, w.SharedMemory, d.SharedMemoryPerBlock)
	}
	img, err := json.Marshal(image{Format: Format, Device: d.ID, Key: j.Key, Work: w, MaxThreadsPerBlock: model.MaxThreadsPerBlock(d, w.Registers)})
	if err != nil {
		return nil, fmt.Errorf("sim: Compile: %w", err)
	}
	ms := compileMs * (1 + 0.05*normal(t.Seed, j.Key, "compile", 0))
	return &backend.Binary{
		Image:     img,
		Log:       fmt.Sprintf("ptxas info    : Used %d registers, %d bytes smem (simulated)\n", w.Registers, w.SharedMemory),
		CompileMs: ms,
	}, nil
}

// CompilerID is backend.Compiler: the simulated image format and device
// (a simulated binary is decided by the job's work and the device).
func (s *Sim) CompilerID() (string, error) { return "sim " + Format + " " + s.dev.ID, nil }

var _ backend.Compiler = (*Sim)(nil)

// Predict evaluates the model for a compiled binary and job without noise
// (see Prediction for the equations). A configuration that cannot launch
// returns an error whose text is the launch failure reason.
func (s *Sim) Predict(j *backend.Job, b *backend.Binary, set *backend.Settings) (model.Prediction, error) {
	img, err := s.decode(b)
	if err != nil {
		return model.Prediction{}, err
	}
	return s.predict(&img.Work, j, set)
}

func (s *Sim) decode(b *backend.Binary) (image, error) {
	var img image
	if b == nil {
		return img, errors.New("sim: nil binary")
	}
	if err := json.Unmarshal(b.Image, &img); err != nil || img.Format != Format {
		return img, fmt.Errorf("sim: binary is not a %s image", Format)
	}
	if img.Device != s.dev.ID {
		return img, fmt.Errorf("sim: binary was compiled for %s, this is %s", img.Device, s.dev.ID)
	}
	return img, nil
}

// Run measures a plan in simulation with measure.Run: each launch is
// checked and predicted (model.go) under the plan's GPU settings (nearest
// supported clock; a clock or power limit out of the device's range makes
// the plan launch_failed), the launches of a plan of several are placed by
// the block-scheduler model (model.ConcurrentTimes), and the executor's
// primitives advance a simulated clock and sensor surface. Timing noise is
// deterministic: run i of launch k gets factor max(0.5, 1 + noise·z) with
// z from (Seed, Plan.Key, "time" or "time/k", i). A device without a power
// sensor has no sensors: energy is not observed. Failures of the plan are
// in the Result; errors mean a closed backend, a cancelled context, a
// missing Prepare or a binary Compile did not make.
func (s *Sim) Run(ctx context.Context, plan *backend.Plan) (*backend.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runWall > 0 {
		t := time.NewTimer(s.runWall)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if s.closed {
		return nil, errClosed
	}
	if s.problem == nil {
		return nil, errors.New("sim: Run before Prepare")
	}
	if len(plan.Launches) == 0 {
		return nil, errors.New("sim: Run of a plan without launches")
	}
	if plan.Settings != nil && !s.allowSet {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: backend.SettingsRefused}, nil
	}
	res := &backend.Result{Launches: make([]backend.LaunchResult, len(plan.Launches))}
	x := &simExec{s: s, plan: plan}
	for i, l := range plan.Launches {
		if l.Job == nil || l.Job.Kernel < 0 || l.Job.Kernel >= len(s.problem.Kernels) {
			return nil, fmt.Errorf("sim: Run: launch %d names no kernel of the prepared problem (%d kernels)", i, len(s.problem.Kernels))
		}
		img, err := s.decode(l.Binary)
		if err != nil {
			return nil, &backend.BinaryError{Launch: i, Err: err}
		}
		res.Launches[i] = backend.LaunchResult{Registers: img.Work.Registers, SharedStaticBytes: img.Work.SharedMemory, MaxThreadsPerBlock: img.MaxThreadsPerBlock}
		p, err := s.predict(&img.Work, l.Job, plan.Settings)
		if err != nil {
			var le *model.LaunchError
			if errors.As(err, &le) {
				res.Status, res.Reason = backend.StatusLaunchFailed, s.launchName(plan, i)+le.Reason
				return res, nil
			}
			return nil, err
		}
		x.preds = append(x.preds, p)
		x.works = append(x.works, img.Work)
	}
	x.model()
	launches := plan.Measure.Iterations
	if launches <= 0 {
		launches = measure.DefaultIterations
	}
	launches++
	if plan.Measure.Verify {
		launches++
	}
	if total := time.Duration(float64(launches) * x.planMs * float64(time.Millisecond)); plan.Timeout > 0 && total > plan.Timeout {
		res.Status = backend.StatusTimeout
		res.Reason = fmt.Sprintf("timeout: %d runs of %.3f ms take %v, more than %v", launches, x.planMs, total, plan.Timeout)
		res.BenchmarkMs = float64(plan.Timeout) / float64(time.Millisecond)
		return res, nil
	}
	x.newSurface()
	out, err := measure.Run(x, &s.meter, plan.Measure)
	if err != nil {
		// The simulated primitives do not fail: an error is the
		// measurement's own (an unknown observer, a sensor protocol error).
		return nil, err
	}
	res.Status = backend.StatusValid
	res.Record(out)
	if x.overLimit() {
		p := x.preds[0]
		res.Reason = fmt.Sprintf("the power limit of %g W was not met even at the lowest SM clock, %d MHz, where the kernel ran drawing %.0f W (the software power cap lowers only the SM clock)",
			p.PowerLimitW, p.SMClockMHz, x.powerW)
	}
	return res, nil
}

// launchName prefixes a reason with the launch's kernel when the plan
// has several.
func (s *Sim) launchName(plan *backend.Plan, i int) string {
	if len(plan.Launches) == 1 {
		return ""
	}
	k := plan.Launches[i].Job.Kernel
	name := fmt.Sprintf("kernel %d", k)
	if k < len(s.problem.Kernels) {
		name = s.problem.Kernels[k].KernelName
	}
	return fmt.Sprintf("launch %d (%s): ", i, name)
}

// NVML clock-event reasons (nvmlClocksEventReason*).
const (
	reasonApplicationsClocksSetting = 0x2
	reasonSwPowerCap                = 0x4
)

// normal is a standard normal variate determined by (seed, key, stream,
// repetition) alone.
func (s *Sim) normal(key, stream string, rep int) float64 {
	return normal(s.seed, key, stream, rep)
}

// uniform is a deviate uniform in [0, 1) decided by seed, key, stream
// and rep alone.
func (s *Sim) uniform(key, stream string, rep int) float64 {
	// Φ of a standard normal deviate is uniform.
	return 0.5 * math.Erfc(-normal(s.seed, key, stream, rep)/math.Sqrt2)
}

// normal is a standard normal deviate decided by seed, key, stream and
// rep alone.
func normal(seed int64, key, stream string, rep int) float64 {
	h := fnv.New64a()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(seed))
	h.Write(buf[:])
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(stream))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(rep)))
	return r.NormFloat64()
}

// Close releases the simulated GPU; later calls fail.
func (s *Sim) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

var _ backend.Backend = (*Sim)(nil)

// predict is model.Predict for this simulated GPU: the plan's settings
// resolved against the simulator's clock and power limit.
func (s *Sim) predict(w *backend.Work, j *backend.Job, set *backend.Settings) (model.Prediction, error) {
	clock, mem, limit, err := s.settings(set)
	if err != nil {
		return model.Prediction{}, err
	}
	c := model.Conditions{ClockMHz: clock, MemClockMHz: mem, PowerLimitW: limit, Power: s.power, OverheadMs: s.overheadMs}
	p, err := model.Predict(s.dev, w, j.Geometry(), c)
	if err != nil || s.profile == nil {
		return p, err
	}
	return s.projected(p, w, j, c)
}

// projected replaces prediction p's time by the projection over the
// device profile (Options.Profile; model.Project), scaled by the SM clock
// where the power limit or a setting lowered it below the profile's (the
// arithmetic slows with the clock; DRAM does not), and recomputes the
// utilisations and the power at that time. A configuration the model
// cannot project (no work) keeps the roofline's time.
func (s *Sim) projected(p model.Prediction, w *backend.Work, j *backend.Job, c model.Conditions) (model.Prediction, error) {
	pr, err := model.Project(s.dev, *s.profile, w, j.Geometry())
	if err != nil {
		if _, bad := errors.AsType[*model.LaunchError](err); bad {
			return p, &model.LaunchError{Reason: err.Error()}
		}
		return p, nil
	}
	if f, pf := float64(p.SMClockMHz), s.profile.SMClockMHz; pf > 0 && f < pf {
		pr.ComputeMs *= pf / f
		pr.SharedMs *= pf / f
		pr.BlocksMs *= pf / f
	}
	kernel := pr.KernelMs()
	old := p.LaunchMs
	p.ComputeMs, p.MemoryMs, p.SharedMs = pr.ComputeMs, pr.GlobalMs, pr.SharedMs
	p.KernelMs = kernel
	p.LaunchMs = kernel + s.profile.LaunchOverheadUs/1e3
	if old > 0 && p.LaunchMs > 0 {
		// The same work in another time: the utilisations scale
		// inversely; the SMs' share of the launch is the kernel's.
		r := old / p.LaunchMs
		p.ComputeUtil, p.MemoryUtil, p.SharedUtil, p.WriteUtil = min(1, p.ComputeUtil*r), min(1, p.MemoryUtil*r), min(1, p.SharedUtil*r), min(1, p.WriteUtil*r)
		p.TensorUtil = min(p.ComputeUtil, p.TensorUtil*r)
		fill := model.SMFill(p.Blocks, s.dev.SMs*p.Occupancy.ActiveBlocksPerSM, s.dev.SMs)
		p.BusyUtil = p.KernelMs / p.LaunchMs * fill
	}
	p.PowerW, p.TempC = c.Power.BoardPower(s.dev, float64(p.SMClockMHz), float64(p.MemClockMHz), p.Activity())
	return p, nil
}

// settings is model.ResolveSettings against the simulator's own clock and
// power limit.
func (s *Sim) settings(st *backend.Settings) (clock, memClock int, limit float64, err error) {
	return model.ResolveSettings(s.dev, st, s.clockMHz, s.powerLimitW)
}
