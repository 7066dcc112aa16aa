package cuda

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"time"
	"unsafe"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/trace"
	"github.com/gtune/gtune/internal/workerproc"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/nvml"
)

// WorkerArg is the first command-line argument that makes a gtune binary
// run as a CUDA worker: Open re-executes os.Executable() as
// "<exe> __gtune_cuda_worker --device N". The program's main must call
// WorkerMain before anything else when os.Args[1] == WorkerArg.
const WorkerArg = "__gtune_cuda_worker"

// chunkBytes is the host staging size for filling device buffers: data is
// generated (or read) and copied piecewise so a buffer of many GiB never
// needs the same amount of host memory. A multiple of fillChunk × 8.
const chunkBytes = 64 << 20

// WorkerMain runs this process as the CUDA worker of one GPU and never
// returns. It holds the CUDA context in the calling OS thread (locked for
// the process' life), answers the parent's requests on stdin/stdout and
// exits on Shutdown, on end of input, or after a sticky CUDA error has
// been reported. Whatever else writes to stdout (a library, a panic) is
// redirected to stderr so it cannot corrupt the protocol.
func WorkerMain() {
	runtime.LockOSThread()
	dev := 0
	for i := 2; i < len(os.Args); i++ {
		if os.Args[i] == "--device" && i+1 < len(os.Args) {
			n, err := strconv.Atoi(os.Args[i+1])
			if err != nil {
				fmt.Fprintf(os.Stderr, "gtune cuda worker: bad --device %q\n", os.Args[i+1])
				os.Exit(2)
			}
			dev = n
			i++
		}
	}
	out, err := workerproc.ProtocolOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gtune cuda worker: %v\n", err)
		os.Exit(2)
	}
	c := workerproc.NewConn(os.Stdin, out)
	w := &worker{index: dev}
	initErr := w.init(dev)
	for {
		var req request
		if err := c.Dec.Decode(&req); err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "gtune cuda worker: reading request: %v\n", err)
			}
			w.close()
			os.Exit(0)
		}
		var rep reply
		if initErr != nil {
			rep.Err = initErr.Error()
			rep.Fatal = true
		} else {
			stop := c.KeepAlive(KeepAliveInterval, &reply{Alive: true})
			rep = w.handle(&req)
			stop()
		}
		if err := c.Enc.Encode(&rep); err != nil {
			fmt.Fprintf(os.Stderr, "gtune cuda worker: writing reply: %v\n", err)
			os.Exit(3)
		}
		if rep.Fatal {
			fmt.Fprintf(os.Stderr, "gtune cuda worker: exiting after fatal error: %s\n", firstNonEmpty(rep.Err, reasonOf(rep.Result)))
			os.Exit(4)
		}
		if req.Op == opShutdown {
			w.close()
			os.Exit(0)
		}
	}
}

func reasonOf(r *backend.Result) string {
	if r == nil {
		return ""
	}
	return r.Reason
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// devArg is one prepared kernel argument.
type devArg struct {
	arg    backend.Arg
	typ    elemType
	ptr    uint64 // device buffer (vector, not constant)
	bytes  int64  // buffer size, bytes
	scalar []byte // packed scalar value
	// pristine is a device copy of an output's initial contents, from
	// which it is reset before each verification launch; 0 when there is
	// no verification, or no device memory for it (reset from init).
	pristine uint64
	// init holds the initial contents of constant arguments (copied into
	// each module's __constant__ symbol) and of outputs whose pristine
	// copy did not fit on the device.
	init []byte
	// ref is a device buffer with an output's expected contents, compared
	// with it on the GPU; 0 when the host compares (no device memory, or
	// a type the comparison kernel lacks). It holds the
	// Verification.Expected fill when expFill, else the reference once
	// refLoaded (kept by a SaveReference run of this worker).
	ref       uint64
	expFill   bool
	refLoaded bool
	// inArena: ptr lies in the worker's argument arena, freed with it.
	inArena bool
	// expected holds the expected contents from Verification.Expected
	// when the host compares them.
	expected []byte
	// refHost holds the reference a SaveReference run of this worker
	// computed when the host compares it (ref is 0).
	refHost []byte
}

// kernelArgs are one kernel's prepared arguments and verification.
type kernelArgs struct {
	args  []devArg
	arena uint64 // one allocation holding every vector argument (0: each has its own)
	v     *backend.Verification
}

// worker is the GPU side: one context, one prepared problem.
type worker struct {
	trace []string // the steps of the Prepare in progress (traceStep)
	// cmpBin waits for the comparison kernel's binary (compileCompare);
	// cmpNoted is set once its failure has been told.
	cmpBin   func() (*backend.Binary, error)
	cmpNoted bool
	// fillBin waits for the random fill kernel's binary (compileFill);
	// fill is it loaded, fillErr why it is not, fillNoted set once a
	// check against the host's draw failed.
	fillBin   func() (*backend.Binary, error)
	fill      *gpuFill
	fillErr   error
	fillNoted bool
	index     int
	d         *driver
	dev       int32
	ctx       uintptr
	info      backend.DeviceInfo

	nv        *nvml.Lib
	nd        nvml.Device
	hasEnergy bool

	prob *backend.Problem
	ks   []*kernelArgs // indexed like prob.Kernels
	// cublas is the worker's cuBLAS handle (0 until a plan loads a
	// library routine: cublasHandle), cublasLib the library it is of.
	cublas    uintptr
	cublasLib *cublasLib
	idleW     float64 // idle power after Prepare, W (0: unknown)
	// meter is what measure.Run keeps across plans on this GPU: idle power
	// per device state, warm-up, the energy counter's pooled period.
	meter measure.Meter
	// streams are the non-blocking streams of plans of several launches,
	// created on first use and kept (cuStreamCreate costs microseconds,
	// but not per configuration).
	streams []uintptr

	// cmp is the GPU comparison module, loaded at the first Prepare with
	// a verification; cmpErr why it could not be (the host compares).
	cmp    *gpuCompare
	cmpErr error
}

func (w *worker) init(index int) error {
	d, err := loadDriver()
	if err != nil {
		return err
	}
	w.d = d
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return err
	}
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return err
	}
	if index < 0 || int32(index) >= n {
		return fmt.Errorf("cuda: device %d does not exist (%d CUDA devices)", index, n)
	}
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&w.dev, int32(index))); err != nil {
		return err
	}
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&w.ctx, w.dev)); err != nil {
		return err
	}
	if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(w.ctx)); err != nil {
		return err
	}
	if err := w.describe(index); err != nil {
		return err
	}
	// Outputs are compared on the GPU by a kernel of gtune's own: its
	// compilation starts now, to be done by the time a problem is
	// prepared.
	w.cmpBin = compileCompare(w.info.ComputeMajor, w.info.ComputeMinor)
	w.fillBin = compileFill(w.info.ComputeMajor, w.info.ComputeMinor)
	return nil
}

func (w *worker) attr(a int32) int {
	var v int32
	if w.d.cuDeviceGetAttribute(&v, a, w.dev) != cuSuccess {
		return 0
	}
	return int(v)
}

// describe fills w.info from the driver and, read-only, from NVML.
func (w *worker) describe(index int) error {
	d := w.d
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), w.dev)); err != nil {
		return err
	}
	var mem uint64
	if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&mem, w.dev)); err != nil {
		return err
	}
	var drv int32
	_ = d.cuDriverGetVersion(&drv)
	bus := make([]byte, 32)
	_ = d.cuDeviceGetPCIBusID(&bus[0], int32(len(bus)), w.dev)
	info := backend.DeviceInfo{
		Backend:            "cuda",
		Index:              index,
		Name:               cstring(name),
		Driver:             fmt.Sprintf("CUDA %d.%d", drv/1000, drv%1000/10),
		ComputeMajor:       w.attr(attrComputeCapabilityMajor),
		ComputeMinor:       w.attr(attrComputeCapabilityMinor),
		SMs:                w.attr(attrMultiprocessorCount),
		MemoryBytes:        int64(mem),
		MaxThreadsPerBlock: w.attr(attrMaxThreadsPerBlock),
		MaxSMClockMHz:      w.attr(attrClockRateKHz) / 1000,
		MemClockMHz:        w.attr(attrMemoryClockRateKHz) / 1000,
	}
	w.describeLimits(&info)
	if d.cuDeviceGetUUID != nil {
		var u [16]byte
		if d.cuDeviceGetUUID(&u, w.dev) == cuSuccess {
			info.UUID = fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
		}
	}
	// NVML is optional: without it there are no power limits and no
	// energy counter, but timing still works.
	if nv, err := nvml.Load(); err != nil {
		fmt.Fprintf(os.Stderr, "gtune cuda worker: %v (no energy, power or clock sensors)\n", err)
	} else if err := nv.Init(); err != nil {
		fmt.Fprintf(os.Stderr, "gtune cuda worker: %v (no energy, power or clock sensors)\n", err)
	} else {
		w.nv = nv
		nd, err := nv.DeviceByPCIBusID(cstring(bus))
		if err != nil {
			nd, err = nv.DeviceByIndex(index)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gtune cuda worker: no NVML device for %s: %v\n", cstring(bus), err)
		} else {
			w.nd = nd
			if v, err := nv.DriverVersion(); err == nil {
				info.Driver = v + " (" + info.Driver + ")"
			}
			if v, err := nd.UUID(); err == nil {
				info.UUID = v
			}
			if v, err := nd.ClockMHz(nvml.ClockSM); err == nil {
				info.SMClockMHz = int(v)
			}
			if v, err := nd.MaxClockMHz(nvml.ClockSM); err == nil {
				info.MaxSMClockMHz = int(v)
			}
			if v, err := nd.ClockMHz(nvml.ClockMem); err == nil {
				info.MemClockMHz = int(v)
			}
			if v, err := nd.EnforcedPowerLimitMW(); err == nil {
				info.PowerLimitW = float64(v) / 1000
			}
			if lo, hi, err := nd.PowerLimitConstraintsMW(); err == nil {
				info.MinPowerLimitW, info.MaxPowerLimitW = float64(lo)/1000, float64(hi)/1000
			}
			describeClocks(nd, &info)
			if _, err := nd.TotalEnergyMJ(); err == nil {
				info.HasEnergyCounter = true
				w.hasEnergy = true
			}
		}
	}
	w.info = info
	return nil
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (w *worker) close() {
	w.freeArgs()
	for _, st := range w.streams {
		if w.d != nil {
			w.d.cuStreamDestroy(st)
		}
	}
	w.streams = nil
	if w.d != nil {
		w.unloadCompare()
		w.closeCuBLAS()
	}
	if w.d != nil && w.ctx != 0 {
		w.d.cuDevicePrimaryCtxRel(w.dev)
	}
	if w.nv != nil {
		_ = w.nv.Shutdown()
	}
}

func (w *worker) handle(req *request) reply {
	switch req.Op {
	case opHello:
		info := w.info
		return reply{Device: &info}
	case opPrepare:
		if req.Problem == nil {
			return reply{Err: "prepare without a problem"}
		}
		if err := w.prepare(req.Problem); err != nil {
			return reply{Err: err.Error(), Fatal: isSticky(err)}
		}
		steps := w.trace
		w.trace = nil
		return reply{IdlePowerW: w.idleW, Trace: steps}
	case opRun:
		if req.Plan == nil || len(req.Plan.Launches) == 0 {
			return reply{Err: "run without a plan of launches"}
		}
		if w.prob == nil {
			return reply{Err: "run before prepare"}
		}
		res, fatal := w.runPlan(req.Plan)
		steps := w.trace
		w.trace = nil
		return reply{Result: res, Fatal: fatal, Trace: steps}
	case opShutdown:
		return reply{}
	case opInherit:
		w.meter.Inherit(req.Fit)
		return reply{}
	case opResources:
		if req.Binary == nil {
			return reply{Err: "resources without a binary"}
		}
		r, err := w.resources(req.Binary)
		if err != nil {
			return reply{Err: err.Error(), Fatal: isSticky(err)}
		}
		return reply{Resources: r}
	case opSensorCheck:
		var o measure.SensorCheckOptions
		if req.SensorCheck != nil {
			o = *req.SensorCheck
		}
		r, err := w.sensorCheck(o)
		if err != nil {
			return reply{Err: err.Error(), Fatal: isSticky(err)}
		}
		return reply{Sensors: r}
	}
	return reply{Err: fmt.Sprintf("unknown request %q", req.Op)}
}

func isSticky(err error) bool {
	var ce *cuError
	return errors.As(err, &ce) && ce.Code.sticky()
}

func (w *worker) freeArgs() {
	for _, ka := range w.ks {
		w.freeKernel(ka)
	}
	w.ks = nil
	w.prob = nil
}

func (w *worker) freeKernel(ka *kernelArgs) {
	for _, a := range ka.args {
		for _, p := range []uint64{a.ptr, a.pristine, a.ref} {
			if p != 0 && (p != a.ptr || !a.inArena) {
				w.d.cuMemFree(p)
			}
		}
	}
	if ka.arena != 0 {
		w.d.cuMemFree(ka.arena)
		ka.arena = 0
	}
	ka.args = nil
}

// Arena layout of the vector arguments. Kernel Tuner's CUDA backends
// allocate through a memory pool (cupy's), which places buffers one after
// the other; a kernel that reads a little past one argument (benchmark_hub's
// published hotspot_milo T1 file gives temp 4096² floats where the kernel
// reads 4116²) then reads the next one instead of faulting. gtune lays the
// arguments out the same way, so that files written for Kernel Tuner run
// alike, and ends the arena with a tail so the last one may be read past
// too. Reads past an argument give another argument's data: only
// verification can tell whether a result is right.
const (
	arenaAlign   = 512     // cupy's pool rounds allocations to 512 bytes
	arenaTailMin = 2 << 20 // bytes after the last argument
	arenaTailMax = 256 << 20
)

// allocArena allocates one device buffer for every vector argument in
// order, each at a multiple of arenaAlign, and returns its address and
// each argument's offset (indexed like args). It returns 0 (and each
// argument is allocated alone) when there is no vector argument or the
// device has no room for the arena in one piece.
func (w *worker) allocArena(args []backend.Arg) (uint64, []uint64, error) {
	offsets := make([]uint64, len(args))
	var total, largest uint64
	for i, a := range args {
		if a.Kind != backend.ArgVector || a.Count <= 0 {
			continue
		}
		t, err := lookupType(a.Name, a.Type)
		if err != nil {
			return 0, nil, err
		}
		bytes := uint64(a.Count) * uint64(t.Size())
		offsets[i] = total
		total += (bytes + arenaAlign - 1) / arenaAlign * arenaAlign
		largest = max(largest, bytes)
	}
	if total == 0 {
		return 0, nil, nil
	}
	total += min(max(arenaTailMin, largest/32), arenaTailMax)
	ptr, oom, err := w.alloc(int64(total))
	switch {
	case err == nil:
		return ptr, offsets, nil
	case oom:
		fmt.Fprintf(os.Stderr, "gtune cuda worker: no room for the arguments in one allocation (%d bytes); allocating each alone\n", total)
		return 0, nil, nil
	}
	return 0, nil, fmt.Errorf("allocating %d bytes for the arguments: %w", total, err)
}

// prepare allocates and fills every argument of every kernel of p on the
// device and sets up the verification of the outputs: a pristine device
// copy of each output, and its expected contents on the device, both
// falling back to host memory when the device has no room for them. Each
// kernel has its own arena: a kernel that reads past its last argument
// reads its own arena's tail, as it would alone.
func (w *worker) prepare(p *backend.Problem) error {
	w.freeArgs()
	t0 := time.Now()
	defer func() { w.traceStep("prepare, in all", t0) }()
	for i, k := range p.Kernels {
		tk := time.Now()
		ka, err := w.prepareKernel(k)
		w.traceStep(fmt.Sprintf("kernel %d (%s): arguments and verification", i, k.KernelName), tk)
		if err != nil {
			w.freeArgs()
			if len(p.Kernels) > 1 {
				err = fmt.Errorf("kernel %d (%s): %w", i, k.KernelName, err)
			}
			return err
		}
		w.ks = append(w.ks, ka)
	}
	if err := w.d.check("cuCtxSynchronize", w.d.cuCtxSynchronize()); err != nil {
		w.freeArgs()
		return err
	}
	w.prob = p
	w.idleW = 0
	if w.hasEnergy && p.Energy {
		w.meter.Forget()
		defer w.traceStep("idle power", time.Now())
		if r, err := w.meter.Idle(measure.WallClock{}, sensors{w.nd}, "", w.sync); err == nil {
			w.idleW = r.PowerW
		} else {
			fmt.Fprintf(os.Stderr, "gtune cuda worker: idle power: %v\n", err)
		}
	}
	return nil
}

func (w *worker) sync() error { return w.d.check("cuCtxSynchronize", w.d.cuCtxSynchronize()) }

// prepareKernel allocates, fills and sets up the verification of one
// kernel's arguments.
func (w *worker) prepareKernel(k backend.Kernel) (*kernelArgs, error) {
	d := w.d
	ka := &kernelArgs{v: k.Verification}
	args := make([]devArg, 0, len(k.Args))
	fail := func(err error) (*kernelArgs, error) {
		ka.args = args
		w.freeKernel(ka)
		return nil, err
	}
	arena, offsets, err := w.allocArena(k.Args)
	if err != nil {
		return fail(err)
	}
	ka.arena = arena
	for i, a := range k.Args {
		t, err := lookupType(a.Name, a.Type)
		if err != nil {
			return fail(err)
		}
		da := devArg{arg: a, typ: t}
		switch a.Kind {
		case backend.ArgScalar:
			da.scalar = packScalar(t, a.Scalar)
			args = append(args, da)
			continue
		case backend.ArgVector:
		default:
			return fail(fmt.Errorf("argument %q: kind %q is neither scalar nor vector", a.Name, a.Kind))
		}
		if a.Count < 0 {
			return fail(fmt.Errorf("argument %q: negative count %d", a.Name, a.Count))
		}
		da.bytes = a.Count * int64(t.Size())
		if a.Constant {
			// Kept on the host too: each module gets its own copy of the
			// __constant__ symbol, written at every load.
			da.init = make([]byte, da.bytes)
			if err := content(da.init, t, a.Fill, 0, a.Count, a.Name); err != nil {
				return fail(err)
			}
		}
		switch {
		case arena != 0:
			da.ptr, da.inArena = arena+offsets[i], true
		case da.bytes > 0:
			if err := d.check("cuMemAlloc_v2", d.cuMemAlloc(&da.ptr, uint64(da.bytes))); err != nil {
				var free, total uint64
				d.cuMemGetInfo(&free, &total)
				return fail(fmt.Errorf("argument %q: allocating %d bytes (%d of %d bytes free): %w", a.Name, da.bytes, free, total, err))
			}
		}
		args = append(args, da)
		if a.Constant {
			if err := w.upload(da.ptr, da.init); err != nil {
				return fail(err)
			}
			continue
		}
		tf := time.Now()
		if err := w.fillDevice(da.ptr, da.bytes, t, a.Fill, a.Count, a.Name); err != nil {
			return fail(err)
		}
		w.traceStep(fmt.Sprintf("argument %s: %d bytes filled (%s)", a.Name, da.bytes, a.Fill.Type), tf)
	}
	if v := k.Verification; v != nil {
		names := make([]string, 0, len(v.Expected))
		for n := range v.Expected {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			i := argIndex(args, n)
			if i < 0 || args[i].arg.Kind != backend.ArgVector || !args[i].arg.Output {
				return fail(fmt.Errorf("verification: expected contents given for %q, which is not an output vector argument", n))
			}
		}
		// The comparison kernel compiles meanwhile (compileCompare, from
		// the worker's start): the first comparison waits for it, not the
		// preparation (1.3-1.5 s on an H100).
		// Expected contents first: keeping them on the device saves more
		// per run than the pristine copies do.
		for _, n := range names {
			if err := w.prepareExpected(&args[argIndex(args, n)], v.Expected[n]); err != nil {
				return fail(err)
			}
		}
		for i := range args {
			da := &args[i]
			if da.arg.Kind != backend.ArgVector || !da.arg.Output || da.arg.Constant || da.bytes == 0 {
				continue
			}
			if err := w.preparePristine(da); err != nil {
				return fail(err)
			}
			if _, given := v.Expected[da.arg.Name]; !given && v.Reference && w.gpuComparable(da) {
				ptr, oom, err := w.alloc(da.bytes)
				switch {
				case err == nil:
					da.ref = ptr
				case oom:
					fmt.Fprintf(os.Stderr, "gtune cuda worker: output %q: no device memory for its reference (%d bytes); comparing on the host\n", da.arg.Name, da.bytes)
				default:
					return fail(fmt.Errorf("output %q: allocating %d bytes for its reference: %w", da.arg.Name, da.bytes, err))
				}
			}
		}
	}
	ka.args = args
	return ka, nil
}

// gpuComparable reports whether output a can be compared on the GPU.
func (w *worker) gpuComparable(a *devArg) bool {
	_, ok := cmpKernelType(a.typ)
	return ok && w.cmpErr == nil && a.bytes > 0 && !a.arg.Constant
}

// refToHost moves output a's expected contents or reference from the
// device to host memory: the comparison kernel, assumed while the
// problem was prepared, did not compile or load, so the host compares.
func (w *worker) refToHost(a *devArg) error {
	if !w.cmpNoted {
		w.cmpNoted = true
		fmt.Fprintf(os.Stderr, "gtune cuda worker: %v (outputs are compared on the host)\n", w.cmpErr)
	}
	if a.expFill || a.refLoaded {
		host := make([]byte, a.bytes)
		if err := w.download(host, a.ref); err != nil {
			return err
		}
		if a.expFill {
			a.expected = host
		} else {
			a.refHost = host
		}
	}
	w.d.cuMemFree(a.ref)
	a.ref, a.expFill, a.refLoaded = 0, false, false
	return nil
}

// alloc allocates bytes of device memory. oom tells an out-of-memory
// failure, which the callers survive by keeping the data on the host.
func (w *worker) alloc(bytes int64) (ptr uint64, oom bool, err error) {
	r := w.d.cuMemAlloc(&ptr, uint64(bytes))
	if r == cuSuccess {
		return ptr, false, nil
	}
	return 0, r == cuErrorOutOfMemory, w.d.check("cuMemAlloc_v2", r)
}

// fillDevice writes the contents fill f gives to a device buffer of
// count elements of t (bytes long), generated or read piecewise so no
// host copy of the whole buffer is needed. name names it in errors.
func (w *worker) fillDevice(ptr uint64, bytes int64, t elemType, f backend.Fill, count int64, name string) error {
	if bytes == 0 {
		return nil
	}
	if word, ok := constantWord(t, f, bytes); ok && w.d.cuMemsetD32 != nil {
		// A constant is set on the GPU: 2 GiB in milliseconds, where
		// filling and copying it from the host took 0.58 s (an H100).
		return w.d.check("cuMemsetD32_v2", w.d.cuMemsetD32(ptr, word, uint64(bytes/4)))
	}
	if ok, err := w.fillRandomDevice(ptr, bytes, t, f); ok || err != nil {
		return err
	}
	buf := make([]byte, min(bytes, chunkBytes))
	for off := int64(0); off < bytes; off += chunkBytes {
		part := buf[:min(chunkBytes, bytes-off)]
		if err := content(part, t, f, off, count, name); err != nil {
			return err
		}
		if err := w.upload(ptr+uint64(off), part); err != nil {
			return fmt.Errorf("argument %q: %w", name, err)
		}
	}
	return nil
}

// prepareExpected puts the expected contents f of output a on the device
// when the GPU can compare it, else in host memory.
func (w *worker) prepareExpected(a *devArg, f backend.Fill) error {
	name := a.arg.Name + " (expected)"
	if w.gpuComparable(a) {
		ptr, oom, err := w.alloc(a.bytes)
		if err == nil {
			a.ref, a.expFill = ptr, true
			return w.fillDevice(a.ref, a.bytes, a.typ, f, a.arg.Count, name)
		}
		if !oom {
			return fmt.Errorf("output %q: allocating %d bytes for its expected contents: %w", a.arg.Name, a.bytes, err)
		}
		fmt.Fprintf(os.Stderr, "gtune cuda worker: output %q: no device memory for its expected contents (%d bytes); comparing on the host\n", a.arg.Name, a.bytes)
	}
	a.expected = make([]byte, a.bytes)
	return content(a.expected, a.typ, f, 0, a.arg.Count, name)
}

// preparePristine keeps a device copy of output a's initial contents (or,
// without device memory for it, a host copy).
func (w *worker) preparePristine(a *devArg) error {
	ptr, oom, err := w.alloc(a.bytes)
	if err == nil {
		a.pristine = ptr
		return w.d.check("cuMemcpyDtoD_v2", w.d.cuMemcpyDtoD(a.pristine, a.ptr, uint64(a.bytes)))
	}
	if !oom {
		return fmt.Errorf("output %q: allocating %d bytes for its pristine copy: %w", a.arg.Name, a.bytes, err)
	}
	fmt.Fprintf(os.Stderr, "gtune cuda worker: output %q: no device memory for its pristine copy (%d bytes); resetting it from the host\n", a.arg.Name, a.bytes)
	a.init = make([]byte, a.bytes)
	return w.download(a.init, a.ptr)
}

// resetOutput restores output a's initial contents before a verification
// launch: on the device from its pristine copy, else from the host.
func (w *worker) resetOutput(a *devArg) error {
	switch {
	case a.bytes == 0:
		return nil
	case a.pristine != 0:
		return w.d.check("cuMemcpyDtoD_v2", w.d.cuMemcpyDtoD(a.ptr, a.pristine, uint64(a.bytes)))
	case a.init != nil:
		return w.upload(a.ptr, a.init)
	}
	// No verification was prepared (a SaveReference job without one):
	// generate the contents again rather than keep them for this case.
	return w.fillDevice(a.ptr, a.bytes, a.typ, a.arg.Fill, a.arg.Count, a.arg.Name)
}

func argIndex(args []devArg, name string) int {
	for i, a := range args {
		if a.arg.Name == name {
			return i
		}
	}
	return -1
}

func (w *worker) upload(dst uint64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	err := w.d.check("cuMemcpyHtoD_v2", w.d.cuMemcpyHtoD(dst, unsafe.Pointer(&src[0]), uint64(len(src))))
	runtime.KeepAlive(src)
	return err
}

func (w *worker) download(dst []byte, src uint64) error {
	if len(dst) == 0 {
		return nil
	}
	err := w.d.check("cuMemcpyDtoH_v2", w.d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), src, uint64(len(dst))))
	runtime.KeepAlive(dst)
	return err
}

// failure turns a CUDA error into a Result: a sticky error (or any error
// while waiting for a kernel) is runtime_failed and fatal for the worker;
// other errors are launch_failed.
func failure(res *backend.Result, what string, err error, running bool) (*backend.Result, bool) {
	sticky := isSticky(err)
	res.Status = backend.StatusLaunchFailed
	if sticky || running {
		res.Status = backend.StatusRuntimeFailed
	}
	res.Reason = what + ": " + err.Error()
	return res, sticky
}

// verifyKernel compares one kernel's outputs after the verification run
// (on the GPU where their expected contents are on the device) when check
// is set, and saves them as the reference when save is set. failures say
// why outputs are wrong; err is a CUDA failure while reading them.
func (w *worker) verifyKernel(ka *kernelArgs, check, save bool) (maxErr float64, failures []string, err error) {
	v := ka.v
	for i := range ka.args {
		a := &ka.args[i]
		if !a.arg.Output || a.arg.Constant {
			continue
		}
		var got []byte // the output on the host, read only when needed
		if save {
			if v == nil || !v.Reference {
				return 0, []string{"save_reference: the problem's verification has no reference"}, nil
			}
			if err := w.keepReference(a); err != nil {
				return 0, nil, err
			}
			got = a.refHost
		}
		if !check || v == nil {
			continue
		}
		var c comparison
		if a.ref != 0 {
			if err := w.loadCompare(); err != nil {
				if err := w.refToHost(a); err != nil {
					return 0, nil, &execError{"moving the reference of output " + a.arg.Name + " to the host", err, true}
				}
			}
		}
		if a.ref != 0 {
			if !a.expFill && !a.refLoaded {
				failures = append(failures, noReference(a))
				continue
			}
			var methodErr, err error
			c, methodErr, err = w.compareDevice(v.Method, v.Threshold, a.typ, a.ptr, a.ref, a.bytes/int64(a.typ.CompSize))
			if err != nil {
				return 0, nil, &execError{"comparing output " + a.arg.Name, err, true}
			}
			if methodErr != nil {
				failures = append(failures, fmt.Sprintf("output %s: %v", a.arg.Name, methodErr))
				continue
			}
		} else {
			if got == nil {
				got = make([]byte, a.bytes)
				if err := w.download(got, a.ptr); err != nil {
					return 0, nil, &execError{"reading output " + a.arg.Name, err, true}
				}
			}
			want := a.expected
			if want == nil {
				want = a.refHost
			}
			if want == nil {
				failures = append(failures, noReference(a))
				continue
			}
			var err error
			c, err = compare(v.Method, v.Threshold, a.typ, got, want)
			if err != nil {
				failures = append(failures, fmt.Sprintf("output %s: %v", a.arg.Name, err))
				continue
			}
		}
		if c.Error > maxErr || math.IsNaN(c.Error) {
			maxErr = c.Error
		}
		if c.NaNIndex >= 0 {
			maxErr = math.Inf(1)
			failures = append(failures, fmt.Sprintf("output %s: NaN at %s", a.arg.Name, where(c.NaNIndex, a.typ)))
		} else if !c.OK {
			failures = append(failures, fmt.Sprintf("output %s: %s error %g exceeds threshold %g (largest at %s: got %g, want %g)",
				a.arg.Name, methodName(v.Method), c.Error, v.Threshold, where(c.Worst, a.typ), c.Got, c.Want))
		}
	}
	return maxErr, failures, nil
}

func methodName(m string) string {
	if m == "" {
		return MethodSideBySide
	}
	return m
}

// where names a component index as an element (and lane, for vector types).
func where(comp int64, t elemType) string {
	if t.Lanes == 1 {
		return fmt.Sprintf("element %d", comp)
	}
	return fmt.Sprintf("element %d lane %d", comp/int64(t.Lanes), comp%int64(t.Lanes))
}

// keepReference keeps output a, just computed by the reference
// configuration, as what this worker verifies a against: on the GPU
// (a device copy) where it compares there, else in host memory. Nothing
// is written to disk: every GPU computes its own reference (the
// executor runs it on each, and the backend again after a restart), so
// no worker waits for or reads another's. An output with expected
// contents (expFill) needs no reference. Errors: a CUDA failure, as an
// *execError.
func (w *worker) keepReference(a *devArg) error {
	t0 := time.Now()
	switch {
	case a.expFill:
		return nil
	case a.ref != 0:
		if err := w.d.check("cuMemcpyDtoD_v2", w.d.cuMemcpyDtoD(a.ref, a.ptr, uint64(a.bytes))); err != nil {
			return &execError{"keeping the reference of output " + a.arg.Name, err, true}
		}
		a.refLoaded = true
	default:
		got := make([]byte, a.bytes)
		if err := w.download(got, a.ptr); err != nil {
			return &execError{"reading output " + a.arg.Name, err, true}
		}
		a.refHost = got
	}
	w.traceStep(fmt.Sprintf("the reference: output %s kept (%d bytes)", a.arg.Name, a.bytes), t0)
	return nil
}

// noReference says why output a cannot be verified: it has neither
// expected contents nor a reference this worker computed.
func noReference(a *devArg) string {
	return fmt.Sprintf("output %s: no expected contents and no reference (the reference configuration has not run on this GPU)", a.arg.Name)
}

// traceStep notes step's time since t0 when GTUNE_TRACE names "prepare",
// for the reply to carry (the worker's own standard error is not the
// run's): where the time before the first measurement goes.
func (w *worker) traceStep(step string, t0 time.Time) {
	if trace.On("prepare") {
		w.trace = append(w.trace, fmt.Sprintf("%s %.3f s", step, time.Since(t0).Seconds()))
	}
}
