// Package cuda is gtune's real-GPU backend: NVRTC compiles kernels in the
// calling process (CPU work, many at once), and one worker process per GPU
// owns the CUDA context, the arguments and every launch. libcuda.so.1,
// libnvrtc and libnvidia-ml.so.1 are called through purego, so the
// package builds with CGO_ENABLED=0 and loads the libraries only when used.
//
// Why a worker process: a sticky CUDA error (illegal address, misaligned
// address, ...) kills the context for the rest of the process, and a kernel
// that never ends cannot be stopped from inside it. The parent never
// touches the GPU; it kills and restarts the worker, re-prepares the
// problem and carries on (design.md, "Rules of the house").
//
// Wiring: the worker is the same binary re-executed with WorkerArg, so a
// program using this package must start with
//
//	if len(os.Args) > 1 && os.Args[1] == cuda.WorkerArg {
//		cuda.WorkerMain() // never returns
//	}
//
// The backend only reads the GPU's state: it changes no clock, power limit
// or mode. Setting a function's dynamic shared memory limit
// (cuFuncSetAttribute) is a property of the loaded kernel, not of the GPU.
package cuda

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/workerproc"
	"github.com/gtune/gtune/measure"
)

// Options tunes how Open runs the worker. The zero value is usable.
type Options struct {
	// Executable is the program started as the worker with
	// "WorkerArg --device N"; default os.Executable(). It must call
	// WorkerMain when its first argument is WorkerArg.
	Executable string
	// Wrapper, when set, is a command the worker is started under: the
	// worker runs as Wrapper[0] Wrapper[1:]... Executable WorkerArg
	// --device N. A profiler that follows only the process it starts
	// (Nsight Compute: Go starts the worker without libc's exec, which
	// ncu's --target-processes all does not see) wraps the worker this
	// way; it must leave the worker's stdin and stdout to it (ncu:
	// --log-file).
	Wrapper []string
	// Env is added to the parent's environment for the worker ("K=V"),
	// e.g. GTUNE_LIBCUDA or CUDA_DEVICE_ORDER.
	Env []string
	// Stderr, when set, also receives the worker's stderr; a tail of it
	// is always kept for error messages.
	Stderr io.Writer
	// StartTimeout bounds the worker's start (cuInit, context, NVML);
	// default 2 min.
	StartTimeout time.Duration
	// PrepareTimeout bounds Prepare (allocating and filling arguments);
	// default 30 min.
	PrepareTimeout time.Duration
	// RunTimeout is used for a Plan with Timeout 0; default 10 min.
	RunTimeout time.Duration
	// Silence bounds the time between two messages of the worker busy
	// with a request (it sends a keep-alive every KeepAliveInterval);
	// default Silence. A worker started through a Wrapper (srun) on a
	// node that died is given up then.
	Silence time.Duration
	// AllowSettings accepts plans with Plan.Settings. The backend does not
	// apply them itself: clocks and the power limit are NVML device
	// settings, applied by the caller in this (the parent) process before
	// Run (gpuctl.Wrap); the worker observes the clocks in the energy
	// window. False (the default) reports such a job as launch_failed
	// without running it, so that nothing measures a configuration at
	// settings other than the ones it names.
	AllowSettings bool
}

func (o Options) withDefaults() (Options, error) {
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("cuda: finding this program to start the worker: %w", err)
		}
		o.Executable = exe
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.PrepareTimeout <= 0 {
		o.PrepareTimeout = 30 * time.Minute
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 10 * time.Minute
	}
	return o, nil
}

// Backend is one GPU driven through its worker process. Compile is safe
// for concurrent use; Prepare, Run and Close are serialised.
type Backend struct {
	opts  Options
	index int

	mu     sync.Mutex // one request to the worker at a time
	w      *workerproc.Proc
	closed bool
	// warmedBy is the worker that has made an energy measurement, and so
	// its warm-up (measure.Meter warms up once per worker): until then a
	// plan's time limit is lengthened by the warm-up's longest.
	warmedBy *workerproc.Proc
	// fit is the leakage model the warmed worker fitted (its results'
	// leakage_slope and temperature_ref, where not a prior), handed to a
	// worker that replaces it.
	fit *measure.ThermalFit
	// refPlan is the last reference plan that ran (Measure.SaveReference),
	// as sent to the worker: a worker that replaces this one runs it
	// again.
	refPlan *backend.Plan

	// pmu guards what Compile and the accessors read, so they never wait
	// behind a long Run.
	pmu      sync.RWMutex
	prob     *backend.Problem
	dev      backend.DeviceInfo
	idleW    float64
	restarts int
}

var _ backend.Backend = (*Backend)(nil)

// Open starts the worker for CUDA device deviceIndex and asks it to
// describe the GPU. Errors: the worker cannot be started, or it cannot
// load libcuda/NVML or create a context (the message carries the worker's
// own error, e.g. "cuda: libcuda.so.1 not found (...)").
func Open(ctx context.Context, deviceIndex int, opts Options) (*Backend, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Backend{opts: o, index: deviceIndex}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.startLocked(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// startLocked starts a worker and reads the device description.
func (b *Backend) startLocked(ctx context.Context) error {
	env := append(os.Environ(), b.opts.Env...)
	exe, args := b.opts.Executable, []string{WorkerArg, "--device", strconv.Itoa(b.index)}
	if len(b.opts.Wrapper) > 0 {
		exe, args = b.opts.Wrapper[0], append(append(slices.Clone(b.opts.Wrapper[1:]), exe), args...)
	}
	p, err := workerproc.Start(exe, args, env, b.opts.Stderr)
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	rep, err := call(ctx, p, &request{Op: opHello}, b.opts.StartTimeout, b.opts.Silence)
	if err != nil {
		p.Kill()
		if errors.Is(err, workerproc.ErrTimeout) {
			return fmt.Errorf("cuda: worker for device %d did not start within %v; stderr: %s", b.index, b.opts.StartTimeout, p.Tail())
		}
		return fmt.Errorf("cuda: worker for device %d: %w", b.index, err)
	}
	if rep.Err != "" {
		p.WaitExit(5 * time.Second)
		return fmt.Errorf("cuda: worker for device %d: %s", b.index, rep.Err)
	}
	if rep.Device == nil {
		p.Kill()
		return fmt.Errorf("cuda: worker for device %d sent no device description", b.index)
	}
	b.w = p
	b.pmu.Lock()
	b.dev = *rep.Device
	b.pmu.Unlock()
	return nil
}

// restartLocked replaces the worker and prepares the current problem
// again in the new one.
func (b *Backend) restartLocked(ctx context.Context) error {
	if b.w != nil {
		b.w.Kill()
		b.w = nil
	}
	b.pmu.Lock()
	b.restarts++
	b.pmu.Unlock()
	if err := b.startLocked(ctx); err != nil {
		return err
	}
	b.pmu.RLock()
	p := b.prob
	b.pmu.RUnlock()
	if p == nil {
		return nil
	}
	if err := b.prepareLocked(ctx, p); err != nil {
		return err
	}
	return b.referenceAgainLocked(ctx)
}

// referenceAgainLocked runs the reference plan again on a worker that
// replaced one: the reference outputs lived in the old worker's memory
// (keepReference), and every later verification needs them. Errors: the
// reference no longer runs.
func (b *Backend) referenceAgainLocked(ctx context.Context) error {
	if b.refPlan == nil {
		return nil
	}
	rep, err := call(ctx, b.w, &request{Op: opRun, Plan: b.refPlan}, b.opts.RunTimeout, b.opts.Silence)
	switch {
	case err != nil:
		return fmt.Errorf("the reference configuration again: %w", err)
	case rep.Err != "":
		return fmt.Errorf("the reference configuration again: %s", rep.Err)
	case rep.Result == nil || rep.Result.Status != backend.StatusValid:
		reason := "no result"
		if rep.Result != nil {
			reason = string(rep.Result.Status) + ": " + rep.Result.Reason
		}
		return fmt.Errorf("the reference configuration again: %s", reason)
	}
	return nil
}

// Device describes the GPU: the device database's entry for its name
// (device.MatchName) overridden by what the worker found at Open
// (device.FromLocal), or, for a GPU the driver reports no compute
// capability of, those answers alone (Description.Local).
func (b *Backend) Device() device.Description {
	b.pmu.RLock()
	info := b.dev
	b.pmu.RUnlock()
	d, err := device.FromLocal(device.MatchName(info.Name), info)
	if err != nil {
		return device.Description{Name: info.Name, ComputeMajor: info.ComputeMajor, ComputeMinor: info.ComputeMinor, SMs: info.SMs,
			MaxThreadsPerBlock: info.MaxThreadsPerBlock, MemoryBytes: info.MemoryBytes, Local: info}
	}
	return *d
}

// Restarts is how many times the worker was replaced (after a timeout, a
// sticky error or a crash).
func (b *Backend) Restarts() int {
	b.pmu.RLock()
	defer b.pmu.RUnlock()
	return b.restarts
}

// IdlePowerW is the GPU's idle power measured after the last Prepare, W
// (0 when the GPU has no energy counter).
func (b *Backend) IdlePowerW() float64 {
	b.pmu.RLock()
	defer b.pmu.RUnlock()
	return b.idleW
}

// Prepare allocates and fills p's arguments in the worker (data is
// generated or read there, never sent over the pipe) and, when the GPU has
// an energy counter, measures its idle power. Errors: invalid arguments,
// device memory exhausted, an unreadable BinaryRaw file, or a worker that
// dies or exceeds Options.PrepareTimeout.
func (b *Backend) Prepare(ctx context.Context, p *backend.Problem) error {
	if p == nil {
		return errors.New("cuda: Prepare: nil problem")
	}
	if err := RoutinesAvailable(p); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("cuda: Prepare on a closed backend")
	}
	if b.w == nil {
		if err := b.restartLocked(ctx); err != nil {
			return err
		}
	}
	if err := b.prepareLocked(ctx, p); err != nil {
		return err
	}
	b.refPlan = nil // the reference of another problem
	b.pmu.Lock()
	b.prob = p
	b.pmu.Unlock()
	return nil
}

func (b *Backend) prepareLocked(ctx context.Context, p *backend.Problem) error {
	rep, err := call(ctx, b.w, &request{Op: opPrepare, Problem: p}, b.opts.PrepareTimeout, b.opts.Silence)
	if err != nil {
		b.w.Kill()
		b.w = nil
		if errors.Is(err, workerproc.ErrTimeout) {
			return fmt.Errorf("cuda: Prepare took longer than %v", b.opts.PrepareTimeout)
		}
		return fmt.Errorf("cuda: Prepare: %w", err)
	}
	if rep.Err != "" {
		if rep.Fatal {
			b.w.WaitExit(5 * time.Second)
			b.w = nil
		}
		return fmt.Errorf("cuda: Prepare: %s", rep.Err)
	}
	b.traced(rep.Trace)
	b.pmu.Lock()
	b.idleW = rep.IdlePowerW
	b.pmu.Unlock()
	return nil
}

// Compile compiles the prepared problem's kernel for one configuration
// with NVRTC, in this process (see the package-level Compile). Errors:
// *backend.CompileError when NVRTC rejects it; an error when no problem
// is prepared or NVRTC cannot be loaded.
func (b *Backend) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	r, err := b.compileRequest(j)
	if err != nil {
		return nil, err
	}
	return Compile(ctx, r)
}

// CompileTask is compileproc.Remote: compiling j, as the package-level
// Compile's request, for a compile worker process. Errors: no problem is
// prepared, or j names no kernel of it.
func (b *Backend) CompileTask(j *backend.Job) (compileproc.Task, error) {
	r, err := b.compileRequest(j)
	if err != nil {
		return compileproc.Task{}, err
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&r); err != nil {
		return compileproc.Task{}, fmt.Errorf("cuda: encoding the compilation of %s: %w", j.Key, err)
	}
	return compileproc.Task{Kind: taskKind, Key: j.Key, Payload: buf.Bytes()}, nil
}

// taskKind names NVRTC compilations in compile workers.
const taskKind = "nvrtc"

func init() {
	compileproc.Register(taskKind, func(ctx context.Context, payload []byte) (*backend.Binary, error) {
		var r CompileRequest
		if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&r); err != nil {
			return nil, fmt.Errorf("cuda: decoding a compilation: %w", err)
		}
		return Compile(ctx, r)
	})
}

var _ compileproc.Warmer = (*Backend)(nil)

// warmSource is the kernel a compile process compiles before the run's
// first configuration (WarmTask): empty, so that its time is NVRTC's
// loading and first use.
const warmSource = `extern "C" __global__ void gtune_warm() {}`

// WarmTask is compileproc.Warmer: an empty kernel compiled for this GPU's
// architecture, which loads NVRTC and its builtins into a compile
// process. ok is false before the GPU is known.
func (b *Backend) WarmTask() (compileproc.Task, bool) {
	b.pmu.RLock()
	dev := b.dev
	b.pmu.RUnlock()
	if dev.ComputeMajor == 0 {
		return compileproc.Task{}, false
	}
	r := CompileRequest{Source: warmSource, SourceName: "gtune_warm.cu", KernelName: "gtune_warm", ComputeMajor: dev.ComputeMajor, ComputeMinor: dev.ComputeMinor}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&r); err != nil {
		return compileproc.Task{}, false
	}
	return compileproc.Task{Kind: taskKind, Key: "warm-up", Payload: buf.Bytes()}, true
}

var _ compileproc.Remote = (*Backend)(nil)

// compileRequest is what compiling j for the prepared problem on this GPU
// asks of NVRTC.
func (b *Backend) compileRequest(j *backend.Job) (CompileRequest, error) {
	b.pmu.RLock()
	p, dev := b.prob, b.dev
	b.pmu.RUnlock()
	if p == nil {
		return CompileRequest{}, errors.New("cuda: Compile before Prepare")
	}
	if j.Kernel < 0 || j.Kernel >= len(p.Kernels) {
		return CompileRequest{}, fmt.Errorf("cuda: Compile: configuration %s names kernel %d of a problem of %d", j.Key, j.Kernel, len(p.Kernels))
	}
	k := p.Kernels[j.Kernel]
	src := k.Source
	if j.Source != "" {
		src = j.Source
	}
	return CompileRequest{
		Source:       src,
		SourceName:   k.SourceName,
		KernelName:   k.KernelName,
		Options:      k.CompilerOptions,
		Defines:      j.Defines,
		ComputeMajor: dev.ComputeMajor,
		ComputeMinor: dev.ComputeMinor,
		Language:     k.Language,
	}, nil
}

// CompilerID is backend.Compiler: NVRTC's version and the target Compile
// builds for this GPU (an sm_XY CUBIN, or compute_XY PTX when NVRTC does
// not know the GPU's architecture). Errors: NVRTC cannot be loaded.
func (b *Backend) CompilerID() (string, error) {
	n, err := loadNVRTC()
	if err != nil {
		return "", err
	}
	b.pmu.RLock()
	dev := b.dev
	b.pmu.RUnlock()
	arch, cubin := targetArch(dev.ComputeMajor*10+dev.ComputeMinor, n.archs())
	if cubin && (n.getCUBINSize == nil || n.getCUBIN == nil) {
		arch, cubin = "compute_"+strings.TrimPrefix(arch, "sm_"), false
	}
	return fmt.Sprintf("nvrtc %s %s cubin=%v", n.Version(), arch, cubin), nil
}

var _ backend.Compiler = (*Backend)(nil)

// Run measures a plan in the worker with measure.Run: the launches'
// modules are loaded and checked there, then verification, warm-up, timed
// runs (CUDA events per launch and per plan, ms) and the observers
// (energy windows) run as Plan.Measure asks; a plan of several launches
// issues each on its own non-blocking stream.
//
// A configuration's failure is in the Result: launch_failed (bad launch
// configuration, too many resources), runtime_failed (a sticky CUDA error
// or a crashed worker; the worker is restarted and the problem prepared
// again), timeout (no answer within Plan.Timeout; the worker is killed and
// restarted), verification_failed. BenchmarkMs is the wall time until the
// outcome was known, ms, not counting a restart. Run returns an error
// only when no working worker can be had afterwards, or when ctx ends
// (the worker is then killed and restarted at the next call).
func (b *Backend) Run(ctx context.Context, plan *backend.Plan) (*backend.Result, error) {
	if plan == nil || len(plan.Launches) == 0 {
		return nil, errors.New("cuda: Run needs a plan of launches")
	}
	for i, l := range plan.Launches {
		if l.Job == nil || l.Binary == nil {
			return nil, fmt.Errorf("cuda: Run: launch %d has no job or binary", i)
		}
	}
	if plan.Settings != nil && !b.opts.AllowSettings {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: backend.SettingsRefused}, nil
	}
	start := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("cuda: Run on a closed backend")
	}
	if b.w == nil {
		if err := b.restartLocked(ctx); err != nil {
			return nil, fmt.Errorf("cuda: restarting the worker: %w", err)
		}
	}
	timeout := plan.Timeout
	if timeout <= 0 {
		timeout = b.opts.RunTimeout
	}
	warming := false
	if t := plan.Measure.Trials; plan.Measure.Energy && t != nil && (t.Warmup && b.warmedBy != b.w || t.Settle) {
		// The first energy measurement of this worker warms the GPU up
		// first (up to WarmupMax: 90 s under the steady thermal policy),
		// and so may a re-measurement under the settle policy (until the
		// GPU is steady): not the configuration's time.
		timeout += t.WithDefaults().WarmupMax + time.Second
		warming = t.Warmup
	}
	w := b.w
	rep, err := call(ctx, b.w, &request{Op: opRun, Plan: wirePlan(plan)}, timeout, b.opts.Silence)
	if err == nil {
		b.traced(rep.Trace)
	}
	valid := err == nil && rep.Err == "" && rep.Result != nil && rep.Result.Status == backend.StatusValid
	if warming && valid {
		b.warmedBy = w
	}
	if valid {
		b.noteFit(rep.Result)
	}
	// A worker killed or dead mid-run leaves the GPU at its working
	// temperature: its replacement is told so instead of warming up again.
	hot := b.warmedBy == w
	if plan.Measure.SaveReference && valid {
		b.refPlan = wirePlan(plan) // run again by a worker that replaces this one
	}
	elapsed := float64(time.Since(start).Microseconds()) / 1000
	var res *backend.Result
	var died *workerproc.DiedError
	switch {
	case err == nil && rep.Err != "":
		if rep.Fatal {
			b.w.WaitExit(5 * time.Second)
			b.w = nil
		}
		return nil, fmt.Errorf("cuda: Run: %s", rep.Err)
	case err == nil:
		res = rep.Result
		if res == nil {
			res = &backend.Result{Status: backend.StatusRuntimeFailed, Reason: "worker sent no result"}
		}
		if rep.Fatal {
			b.w.WaitExit(5 * time.Second)
			b.w = nil
		}
	case errors.Is(err, workerproc.ErrTimeout):
		b.w = nil
		res = &backend.Result{Status: backend.StatusTimeout, Reason: fmt.Sprintf("no answer within %v; worker killed", timeout)}
	case errors.As(err, &died):
		b.w = nil
		res = &backend.Result{Status: backend.StatusRuntimeFailed, Reason: died.Error()}
	default: // ctx ended: the worker was killed mid-run
		b.w = nil
		return nil, err
	}
	res.BenchmarkMs = elapsed
	if b.w == nil {
		if rerr := b.restartLocked(context.WithoutCancel(ctx)); rerr != nil {
			return res, fmt.Errorf("cuda: restarting the worker after %s: %w", res.Status, rerr)
		}
		if hot {
			b.inheritLocked(context.WithoutCancel(ctx))
		}
	}
	return res, nil
}

// noteFit keeps the leakage model a result was corrected with, where it
// was fitted on this GPU's warm-up (not the prior).
func (b *Backend) noteFit(r *backend.Result) {
	slope, ok := r.Observations.Get("leakage_slope")
	ref, okRef := r.Observations.Get("temperature_ref")
	if prior, _ := r.Observations.Get("leakage_prior"); !ok || !okRef || prior != 0 {
		return
	}
	b.fit = &measure.ThermalFit{SlopeWPerC: slope, RefC: ref}
}

// inheritLocked tells the worker that replaced a warmed one that the GPU
// is warm (measure.Meter.Inherit), with the old worker's leakage model;
// it counts as warmed from then on. A worker that cannot take it warms
// up at its first energy measurement, as before.
func (b *Backend) inheritLocked(ctx context.Context) {
	rep, err := call(ctx, b.w, &request{Op: opInherit, Fit: b.fit}, b.opts.PrepareTimeout, b.opts.Silence)
	if err == nil && rep.Err == "" {
		b.warmedBy = b.w
	}
}

// wirePlan is the plan as the worker needs it: the kernel instances'
// sources stay in this process (the binaries carry what the worker loads).
func wirePlan(p *backend.Plan) *backend.Plan {
	w := *p
	w.Launches = make([]backend.Launch, len(p.Launches))
	for i, l := range p.Launches {
		j := *l.Job
		j.Source = ""
		// The worker loads Image; the PTX kept beside it for emulation
		// would only lengthen every message.
		bin := l.Binary
		if bin != nil && bin.PTX != nil {
			b := *bin
			b.PTX = nil
			bin = &b
		}
		w.Launches[i] = backend.Launch{Job: &j, Binary: bin, Stream: l.Stream}
	}
	return &w
}

// Close stops the worker (asking it first, killing it after 5 s). The
// backend cannot be used afterwards.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.w == nil {
		return nil
	}
	p := b.w
	b.w = nil
	if _, err := call(context.Background(), p, &request{Op: opShutdown}, 5*time.Second, 0); err != nil {
		p.Kill()
		return nil
	}
	p.WaitExit(5 * time.Second)
	return nil
}

// traced writes the steps a worker traced (GTUNE_TRACE) to the run's
// standard error.
func (b *Backend) traced(steps []string) {
	for _, step := range steps {
		fmt.Fprintf(os.Stderr, "gtune: trace: cuda worker %d: %s\n", b.index, step)
	}
}
