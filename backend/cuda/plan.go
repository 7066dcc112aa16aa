package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// execError is a CUDA failure of a plan's primitive: what was being done,
// and whether the GPU was running the plan (an error while waiting for a
// kernel is runtime_failed, one while issuing it launch_failed).
type execError struct {
	what    string
	err     error
	running bool
}

func (e *execError) Error() string { return e.what + ": " + e.err.Error() }
func (e *execError) Unwrap() error { return e.err }

// loaded is one launch of a plan ready to issue: its module and function,
// geometry, stream and the pinned parameter array.
type loaded struct {
	mod, fn      uintptr
	grid, block  [3]int
	shared       int
	stream       uintptr
	params       unsafe.Pointer
	ka           *kernelArgs
	kernelName   string
	streamNumber int
	// call, for a library routine (formatLibrary), issues it on a stream
	// in place of cuLaunchKernel (loadRoutine); mod and fn are 0.
	call func(stream uintptr) error
}

// runPlan measures a plan: it loads each launch's module, checks it
// (thread-block limit, large dynamic shared memory, the argument list,
// __constant__ arguments) and hands the primitives to measure.Run. The
// bool is true when the context is dead and the worker must exit.
func (w *worker) runPlan(plan *backend.Plan) (*backend.Result, bool) {
	res := &backend.Result{Status: backend.StatusValid, Launches: make([]backend.LaunchResult, len(plan.Launches))}
	var pin runtime.Pinner
	defer pin.Unpin()
	ls := make([]*loaded, 0, len(plan.Launches))
	defer func() {
		for _, l := range ls {
			if l.mod != 0 {
				w.d.cuModuleUnload(l.mod)
			}
		}
	}()
	t0 := time.Now()
	for i, pl := range plan.Launches {
		prefix := ""
		if len(plan.Launches) > 1 {
			prefix = fmt.Sprintf("launch %d (%s): ", i, w.kernelName(pl.Job))
		}
		l, lr, failed, fatal := w.load(pl, &pin)
		if l != nil {
			ls = append(ls, l)
		}
		res.Launches[i] = lr
		if failed != nil {
			failed.Reason = prefix + failed.Reason
			failed.Launches = res.Launches
			if len(failed.BadBinaries) > 0 {
				failed.BadBinaries = []int{i} // load marks its launch's binary as bad
			}
			return failed, fatal
		}
	}
	if len(plan.Launches) > 1 {
		if err := w.ensureStreams(plan.Streams()); err != nil {
			r, fatal := failure(res, "creating streams", err, false)
			return r, fatal
		}
		for i, l := range ls {
			l.stream = w.streams[plan.Launches[i].Stream]
		}
	}
	if plan.Measure.SaveReference {
		w.traceStep("the reference: modules loaded", t0)
		defer w.traceStep("the reference: run, outputs saved", time.Now())
	}
	x := &cudaExec{w: w, ls: ls, check: plan.Measure.Verify}
	out, err := measure.Run(x, &w.meter, plan.Measure)
	x.destroy()
	if err != nil {
		var ee *execError
		if errors.As(err, &ee) {
			var se *measure.StageError
			what := ee.what
			if errors.As(err, &se) {
				what = se.Stage + ": " + what
			}
			return failure(res, what, ee.err, ee.running)
		}
		// Not the GPU's: an unknown observer or a sensor protocol error.
		res.Status, res.Reason = backend.StatusRuntimeFailed, err.Error()
		return res, false
	}
	res.Record(out)
	return res, false
}

func (w *worker) kernelName(j *backend.Job) string {
	if w.prob != nil && j.Kernel >= 0 && j.Kernel < len(w.prob.Kernels) {
		return w.prob.Kernels[j.Kernel].KernelName
	}
	return fmt.Sprintf("kernel %d", j.Kernel)
}

// load loads one launch's module and checks it. failed is the plan's
// result when the launch cannot run.
func (w *worker) load(pl backend.Launch, pin *runtime.Pinner) (l *loaded, lr backend.LaunchResult, failed *backend.Result, fatal bool) {
	d := w.d
	j, b := pl.Job, pl.Binary
	fail := func(status backend.Status, reason string) (*loaded, backend.LaunchResult, *backend.Result, bool) {
		return l, lr, &backend.Result{Status: status, Reason: reason}, false
	}
	cudaFail := func(what string, err error) (*loaded, backend.LaunchResult, *backend.Result, bool) {
		r, fatal := failure(&backend.Result{}, what, err, false)
		return l, lr, r, fatal
	}
	if j == nil || b == nil {
		return fail(backend.StatusLaunchFailed, "launch without a job or binary")
	}
	if j.Kernel < 0 || j.Kernel >= len(w.ks) {
		return fail(backend.StatusLaunchFailed, fmt.Sprintf("kernel %d of a problem of %d kernels", j.Kernel, len(w.ks)))
	}
	ka := w.ks[j.Kernel]
	// A binary that cannot be decoded or loaded is marked as bad
	// (Result.BadBinaries): from a compile cache it is discarded and
	// compiled again.
	badBinary := func(l *loaded, lr backend.LaunchResult, r *backend.Result, fatal bool) (*loaded, backend.LaunchResult, *backend.Result, bool) {
		if !fatal {
			r.BadBinaries = []int{0}
		}
		return l, lr, r, fatal
	}
	format, lowered, payload, err := decodeImage(b.Image)
	if err != nil {
		return badBinary(fail(backend.StatusLaunchFailed, err.Error()))
	}
	if len(payload) == 0 {
		return badBinary(fail(backend.StatusLaunchFailed, "binary image is empty"))
	}
	if format == formatLibrary {
		l = &loaded{grid: j.Grid, block: j.Block}
		if r, fatal := w.loadRoutine(l, lowered, payload, ka, pin); r != nil {
			return l, lr, r, fatal
		}
		return l, lr, nil, false
	}
	if format == formatPTX && payload[len(payload)-1] != 0 {
		payload = append(payload, 0)
	}
	l = &loaded{grid: j.Grid, block: j.Block, shared: j.DynamicSharedBytes, ka: ka, kernelName: lowered}
	if err := d.check("cuModuleLoadData", d.cuModuleLoadData(&l.mod, unsafe.Pointer(&payload[0]))); err != nil {
		return badBinary(cudaFail("loading the module", err))
	}
	runtime.KeepAlive(payload)
	if err := d.check("cuModuleGetFunction", d.cuModuleGetFunction(&l.fn, l.mod, lowered)); err != nil {
		return badBinary(cudaFail("finding kernel "+lowered, err))
	}
	fa := func(a int32) int {
		var v int32
		d.cuFuncGetAttribute(&v, a, l.fn)
		return int(v)
	}
	lr = backend.LaunchResult{Registers: fa(funcAttrNumRegs), SharedStaticBytes: fa(funcAttrSharedSizeBytes),
		LocalBytes: fa(funcAttrLocalSizeBytes), MaxThreadsPerBlock: fa(funcAttrMaxThreadsPerBlock)}
	threads := j.Block[0] * j.Block[1] * j.Block[2]
	if lr.MaxThreadsPerBlock > 0 && threads > lr.MaxThreadsPerBlock {
		return fail(backend.StatusLaunchFailed, fmt.Sprintf("thread block of %d threads (%dx%dx%d) exceeds the compiled kernel's limit of %d threads per block (%d registers per thread)",
			threads, j.Block[0], j.Block[1], j.Block[2], lr.MaxThreadsPerBlock, lr.Registers))
	}
	if j.DynamicSharedBytes > 48<<10 {
		if err := d.check("cuFuncSetAttribute", d.cuFuncSetAttribute(l.fn, funcAttrMaxDynamicSharedSize, int32(j.DynamicSharedBytes))); err != nil {
			return cudaFail(fmt.Sprintf("allowing %d bytes of dynamic shared memory (device opt-in limit %d bytes per block)", j.DynamicSharedBytes, w.attr(attrMaxSharedPerBlockOptin)), err)
		}
	}
	// The argument list against the compiled kernel's parameters, before
	// anything is launched: a wrong list makes cuLaunchKernel read past
	// the parameter array.
	if msg := w.checkParams(l.fn, format, payload, lowered, ka.args); msg != "" {
		l2, lr2, r, _ := fail(backend.StatusLaunchFailed, msg)
		r.ArgumentMismatch = true
		return l2, lr2, r, false
	}
	// Constant arguments: each module has its own __constant__ symbol,
	// copied at every load when the kernel declares one.
	for _, a := range ka.args {
		if !a.arg.Constant {
			continue
		}
		var ptr, size uint64
		if r := d.cuModuleGetGlobal(&ptr, &size, l.mod, a.arg.Name); r == cuErrorNotFound {
			continue
		} else if err := d.check("cuModuleGetGlobal_v2", r); err != nil {
			return cudaFail(fmt.Sprintf("constant argument %q: looking up its __constant__ symbol", a.arg.Name), err)
		}
		if int64(size) < a.bytes {
			return fail(backend.StatusLaunchFailed, fmt.Sprintf("constant argument %q: __constant__ symbol holds %d bytes, argument has %d", a.arg.Name, size, a.bytes))
		}
		if err := w.upload(ptr, a.init); err != nil {
			return cudaFail(fmt.Sprintf("constant argument %q", a.arg.Name), err)
		}
	}
	// Kernel parameters: one pointer per argument to its value (a device
	// pointer or a packed scalar), in pinned Go memory.
	var params []unsafe.Pointer
	for _, a := range ka.args {
		var words []uint64
		if a.arg.Kind == backend.ArgScalar {
			words = make([]uint64, (len(a.scalar)+7)/8)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8), a.scalar)
		} else {
			words = []uint64{a.ptr}
		}
		pin.Pin(&words[0])
		params = append(params, unsafe.Pointer(&words[0]))
	}
	if len(params) > 0 {
		pin.Pin(&params[0])
		l.params = unsafe.Pointer(&params[0])
	}
	return l, lr, nil, false
}

// ensureStreams creates the worker's streams up to n.
func (w *worker) ensureStreams(n int) error {
	for len(w.streams) < n {
		var s uintptr
		if err := w.d.check("cuStreamCreate", w.d.cuStreamCreate(&s, 1)); err != nil {
			return err
		}
		w.streams = append(w.streams, s)
	}
	return nil
}

// cudaExec is a loaded plan's primitives for measure.Run.
type cudaExec struct {
	w     *worker
	ls    []*loaded
	check bool // compare outputs (the plan's Measure.Verify)
	// events of timed runs and joins, reused across calls.
	pool []uintptr
}

var _ measure.Executor = (*cudaExec)(nil)

func (x *cudaExec) Clock() measure.Clock { return measure.WallClock{} }

func (x *cudaExec) Sensors() measure.Sensors {
	if !x.w.hasEnergy {
		return nil
	}
	return sensors{x.w.nd}
}

func (x *cudaExec) Provenance() (timing, sensors string) { return "cuda", "nvml" }

func (x *cudaExec) Launches() int { return len(x.ls) }

func (x *cudaExec) Sync() error { return x.w.sync() }

func (x *cudaExec) launch(l *loaded) error {
	if l.call != nil {
		return l.call(l.stream)
	}
	return x.w.d.check("cuLaunchKernel", x.w.d.cuLaunchKernel(l.fn,
		uint32(l.grid[0]), uint32(l.grid[1]), uint32(l.grid[2]),
		uint32(l.block[0]), uint32(l.block[1]), uint32(l.block[2]),
		uint32(l.shared), l.stream, l.params, nil))
}

// events returns n fresh events from the pool.
func (x *cudaExec) events(n int) ([]uintptr, error) {
	d := x.w.d
	for len(x.pool) < n {
		var e uintptr
		if err := d.check("cuEventCreate", d.cuEventCreate(&e, 0)); err != nil {
			return nil, err
		}
		x.pool = append(x.pool, e)
	}
	return x.pool[:n], nil
}

func (x *cudaExec) destroy() {
	for _, e := range x.pool {
		x.w.d.cuEventDestroy(e)
	}
	x.pool = nil
}

// issue queues one run of the plan. One launch goes to the legacy stream
// 0 as before plans existed. Several: every launch stream waits for an
// event on stream 0, the launches are issued in plan order on their
// streams, and stream 0 waits for each stream's last event, so the run's
// end on stream 0 is after all of it. timing, when not nil, holds the
// events recorded: [start, end, before_0, after_0, before_1, ...].
func (x *cudaExec) issue(timing []uintptr, join []uintptr) error {
	d := x.w.d
	rec := func(ev, stream uintptr) error { return d.check("cuEventRecord", d.cuEventRecord(ev, stream)) }
	if len(x.ls) == 1 {
		l := x.ls[0]
		if timing != nil {
			if err := rec(timing[0], 0); err != nil {
				return err
			}
		}
		if err := x.launch(l); err != nil {
			return err
		}
		if timing != nil {
			return rec(timing[1], 0)
		}
		return nil
	}
	// join[0] starts the run; join[1+s] ends stream s's part.
	if err := rec(join[0], 0); err != nil {
		return err
	}
	if timing != nil {
		if err := rec(timing[0], 0); err != nil {
			return err
		}
	}
	var used []uintptr
	for _, l := range x.ls {
		if !containsStream(used, l.stream) {
			used = append(used, l.stream)
			if err := d.check("cuStreamWaitEvent", d.cuStreamWaitEvent(l.stream, join[0], 0)); err != nil {
				return err
			}
		}
	}
	for k, l := range x.ls {
		if timing != nil {
			if err := rec(timing[2+2*k], l.stream); err != nil {
				return err
			}
		}
		if err := x.launch(l); err != nil {
			return err
		}
		if timing != nil {
			if err := rec(timing[3+2*k], l.stream); err != nil {
				return err
			}
		}
	}
	for i, s := range used {
		if err := rec(join[1+i], s); err != nil {
			return err
		}
		if err := d.check("cuStreamWaitEvent", d.cuStreamWaitEvent(0, join[1+i], 0)); err != nil {
			return err
		}
	}
	if timing != nil {
		return rec(timing[1], 0)
	}
	return nil
}

func containsStream(ss []uintptr, s uintptr) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// joinEvents are the untimed events one issue of a plan of several
// launches needs (its start, and one per stream), reused by every issue.
func (x *cudaExec) joinEvents(j []uintptr) []uintptr {
	if len(x.ls) == 1 {
		return nil
	}
	return j
}

// Verify resets every kernel's outputs, runs the plan once and compares
// (and saves) each kernel's outputs.
func (x *cudaExec) Verify(save bool) (measure.Verdict, error) {
	w := x.w
	for _, ka := range uniqueKernels(x.ls) {
		for i := range ka.args {
			if a := &ka.args[i]; a.arg.Output && !a.arg.Constant {
				if err := w.resetOutput(a); err != nil {
					return measure.Verdict{}, &execError{"resetting output " + a.arg.Name, err, false}
				}
			}
		}
	}
	evs, err := x.events(1 + len(x.ls))
	if err != nil {
		return measure.Verdict{}, &execError{"creating events", err, false}
	}
	if err := x.issue(nil, x.joinEvents(evs)); err != nil {
		return measure.Verdict{}, &execError{"launching", err, false}
	}
	if err := w.sync(); err != nil {
		return measure.Verdict{}, &execError{"running the verification launch", err, true}
	}
	var v measure.Verdict
	var failures []string
	for i, ka := range uniqueKernels(x.ls) {
		maxErr, f, err := w.verifyKernel(ka, x.check, save)
		if err != nil {
			return measure.Verdict{}, err
		}
		if maxErr > v.MaxError || math.IsNaN(maxErr) {
			v.MaxError = maxErr
		}
		if len(f) > 0 && len(x.ls) > 1 {
			for k := range f {
				f[k] = fmt.Sprintf("kernel %d: %s", i, f[k])
			}
		}
		failures = append(failures, f...)
	}
	if len(failures) > 0 {
		v.Failure = strings.Join(failures, "; ")
	}
	return v, nil
}

// uniqueKernels are the kernels of the plan's launches, each once.
func uniqueKernels(ls []*loaded) []*kernelArgs {
	var out []*kernelArgs
	for _, l := range ls {
		seen := false
		for _, k := range out {
			seen = seen || k == l.ka
		}
		if !seen {
			out = append(out, l.ka)
		}
	}
	return out
}

// Time issues reps runs back to back, synchronises once and reads the
// events: the plan from its start on stream 0 to its end there, each
// launch from the events around it on its stream.
func (x *cudaExec) Time(reps int) ([]measure.PlanTime, error) {
	d := x.w.d
	per := 2
	if len(x.ls) > 1 {
		per = 2 + 2*len(x.ls)
	}
	joins := 0
	if len(x.ls) > 1 {
		joins = 1 + len(x.ls)
	}
	evs, err := x.events(joins + per*reps)
	if err != nil {
		return nil, &execError{"creating events", err, false}
	}
	join, timing := evs[:joins], evs[joins:]
	for i := range reps {
		if err := x.issue(timing[i*per:(i+1)*per], x.joinEvents(join)); err != nil {
			return nil, &execError{"launching", err, false}
		}
	}
	last := timing[(reps-1)*per+1]
	if err := d.check("cuEventSynchronize", d.cuEventSynchronize(last)); err != nil {
		return nil, &execError{"running the timed launches", err, true}
	}
	elapsed := func(a, b uintptr) (float64, error) {
		var ms float32
		if err := d.check("cuEventElapsedTime", d.cuEventElapsedTime(&ms, a, b)); err != nil {
			return 0, &execError{"reading event times", err, true}
		}
		return float64(ms), nil
	}
	out := make([]measure.PlanTime, reps)
	for i := range out {
		t := timing[i*per : (i+1)*per]
		plan, err := elapsed(t[0], t[1])
		if err != nil {
			return nil, err
		}
		out[i].PlanMs = plan
		if len(x.ls) == 1 {
			out[i].LaunchMs = []float64{plan}
			continue
		}
		out[i].LaunchMs = make([]float64, len(x.ls))
		for k := range x.ls {
			if out[i].LaunchMs[k], err = elapsed(t[2+2*k], t[3+2*k]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Load is the plan issued back to back (energy windows).
func (x *cudaExec) Load(estMs float64) (measure.Load, error) {
	join, err := x.events(1 + len(x.ls))
	if err != nil {
		return nil, &execError{"creating events", err, false}
	}
	join = append([]uintptr(nil), join...)
	l, err := newLoad(x.w.d, func() error { return x.issue(nil, x.joinEvents(join)) }, estMs)
	if err != nil {
		return nil, &execError{"creating events", err, false}
	}
	return l, nil
}
