package cuda

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/library"
)

// A library routine (package library: a spec whose Language is cuBLAS)
// goes through the seam a kernel does. Compile resolves the routine and
// its options into an image of format formatLibrary (no NVRTC); the
// worker's load checks the argument list against the routine and binds a
// call in place of a module's function; launch calls it on the launch's
// stream, so the events, energy windows, verification and streams of
// measure.Run are a kernel's. libcublas is loaded through purego, like
// libcuda and NVRTC, and only by a worker that runs a routine.

// formatLibrary is the image format of a library routine: the lowered
// name is the routine's (library.Routine.Name), the payload its
// library.Options as JSON.
const formatLibrary = 2

// compileRoutine "compiles" a configuration of a library spec: it checks
// that the routine exists and reads the configuration's options
// (library.OptionsOf). Errors: an unknown routine or option value, as a
// *backend.CompileError (the configuration's, not the run's).
func compileRoutine(r CompileRequest) (*backend.Binary, error) {
	rt, err := library.Lookup(r.KernelName)
	if err != nil {
		return nil, &backend.CompileError{Log: err.Error()}
	}
	o, err := library.OptionsOf(r.Defines)
	if err != nil {
		return nil, &backend.CompileError{Log: err.Error()}
	}
	payload, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	return &backend.Binary{Image: encodeImage(formatLibrary, rt.Name, payload), Log: rt.Symbol}, nil
}

type cublasStatus int32

// cublasLib is libcublas's entry points gtune calls (cublas_api.h).
type cublasLib struct {
	path          string
	create        func(handle *uintptr) cublasStatus
	destroy       func(handle uintptr) cublasStatus
	setStream     func(handle, stream uintptr) cublasStatus
	setMathMode   func(handle uintptr, mode int32) cublasStatus
	getVersion    func(handle uintptr, v *int32) cublasStatus
	getStatusName func(s cublasStatus) string // CUDA 11.4 and later; nil before
	// gemm is cublasDgemm_v2 and cublasSgemm_v2 by element type: alpha
	// and beta are host pointers (CUBLAS_POINTER_MODE_HOST, the
	// default), A, B and C device pointers.
	gemm map[string]func(handle uintptr, transa, transb, m, n, k int32, alpha unsafe.Pointer, a uintptr, lda int32, b uintptr, ldb int32, beta unsafe.Pointer, c uintptr, ldc int32) cublasStatus
}

// cublasLibrary is cuBLAS as the toolkit and its wheels install it.
var cublasLibrary = toolkitLib{
	env: EnvLibCuBLAS, base: "libcublas.so",
	sonames:  []string{"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
	versions: []string{"13", "12", "11"},
	wheels:   []string{"nvidia/cu13/lib", "nvidia/cublas/lib"},
}

var (
	cublasOnce sync.Once
	cublasL    *cublasLib
	cublasErr  error
)

// loadCuBLAS opens libcublas (toolkitLib.candidates; GTUNE_LIBCUBLAS
// overrides) and binds the routines of package library. Errors: no
// candidate loads, or one lacks a required symbol.
func loadCuBLAS() (*cublasLib, error) {
	cublasOnce.Do(func() {
		h, path, err := openLibrary("cuda", "libcublas", EnvLibCuBLAS, cublasLibrary.candidates())
		if err != nil {
			cublasErr = err
			return
		}
		c := &cublasLib{path: path, gemm: map[string]func(uintptr, int32, int32, int32, int32, int32, unsafe.Pointer, uintptr, int32, uintptr, int32, unsafe.Pointer, uintptr, int32) cublasStatus{}}
		var dgemm, sgemm func(uintptr, int32, int32, int32, int32, int32, unsafe.Pointer, uintptr, int32, uintptr, int32, unsafe.Pointer, uintptr, int32) cublasStatus
		syms := []sym{
			{[]string{"cublasCreate_v2"}, &c.create, true},
			{[]string{"cublasDestroy_v2"}, &c.destroy, true},
			{[]string{"cublasSetStream_v2"}, &c.setStream, true},
			{[]string{"cublasSetMathMode"}, &c.setMathMode, true},
			{[]string{"cublasGetVersion_v2"}, &c.getVersion, true},
			{[]string{"cublasGetStatusName"}, &c.getStatusName, false},
		}
		for _, r := range []struct {
			name string
			fn   any
		}{{"cublasDgemm", &dgemm}, {"cublasSgemm", &sgemm}} {
			rt, err := library.Lookup(r.name)
			if err != nil {
				cublasErr = err
				return
			}
			syms = append(syms, sym{[]string{rt.Symbol}, r.fn, true})
		}
		if _, err := bind("cuda", path, h, syms); err != nil {
			cublasErr = err
			return
		}
		c.gemm["double"], c.gemm["float"] = dgemm, sgemm
		cublasL = c
	})
	return cublasL, cublasErr
}

// RoutinesAvailable checks, in the calling process and without touching
// the GPU, that the library of every routine among p's kernels loads with
// the routine's symbol: a spec of cuBLAS on a host without libcublas is
// one error before the run, not a failed launch per configuration.
// Errors name the kernel and what was searched.
func RoutinesAvailable(p *backend.Problem) error {
	for _, k := range p.Kernels {
		if !library.Is(k.Language) {
			continue
		}
		rt, err := library.Lookup(k.KernelName)
		if err != nil {
			return err
		}
		h, path, err := openLibrary("cuda", "libcublas", EnvLibCuBLAS, cublasLibrary.candidates())
		if err != nil {
			return fmt.Errorf("kernel %s is a cuBLAS routine: %w", k.KernelName, err)
		}
		if _, err := purego.Dlsym(h, rt.Symbol); err != nil {
			return fmt.Errorf("kernel %s: %s has no %s (library too old or not cuBLAS)", k.KernelName, path, rt.Symbol)
		}
	}
	return nil
}

// cublasError is a routine's status other than CUBLAS_STATUS_SUCCESS.
type cublasError struct {
	Func   string
	Status cublasStatus
	Name   string
}

func (e *cublasError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Func, e.Name, int32(e.Status))
}

// cublasStatusNames are cublasStatus_t's names, for a library without
// cublasGetStatusName.
var cublasStatusNames = map[cublasStatus]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (c *cublasLib) check(fn string, s cublasStatus) error {
	if s == 0 {
		return nil
	}
	name := cublasStatusNames[s]
	if c.getStatusName != nil {
		name = c.getStatusName(s)
	}
	if name == "" {
		name = "cublasStatus_t"
	}
	return &cublasError{Func: fn, Status: s, Name: name}
}

// cublasHandle is the worker's cuBLAS handle, created at the first
// routine a plan loads (cublasCreate allocates the library's workspace
// in the worker's primary context, which the runtime cuBLAS runs on
// finds current) and destroyed with the worker.
func (w *worker) cublasHandle() (*cublasLib, uintptr, error) {
	if w.cublas != 0 {
		return w.cublasLib, w.cublas, nil
	}
	c, err := loadCuBLAS()
	if err != nil {
		return nil, 0, err
	}
	var h uintptr
	if err := c.check("cublasCreate_v2", c.create(&h)); err != nil {
		return nil, 0, err
	}
	w.cublasLib, w.cublas = c, h
	return c, h, nil
}

// closeCuBLAS destroys the worker's handle, if it made one.
func (w *worker) closeCuBLAS() {
	if w.cublas != 0 {
		w.cublasLib.destroy(w.cublas)
		w.cublas = 0
	}
}

// loadRoutine binds a library routine's launch: it checks the kernel's
// argument list against the routine (library.Routine.CheckGemm: a
// mismatch is launch_failed with Result.ArgumentMismatch, like a kernel
// whose parameters differ), opens cuBLAS and fixes the call. A routine
// has no compiled resources: the LaunchResult stays zero.
func (w *worker) loadRoutine(l *loaded, name string, payload []byte, ka *kernelArgs, pin *runtime.Pinner) (failed *backend.Result, fatal bool) {
	rt, err := library.Lookup(name)
	if err != nil {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: err.Error(), BadBinaries: []int{0}}, false
	}
	var o library.Options
	if err := json.Unmarshal(payload, &o); err != nil {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: "library routine image: " + err.Error(), BadBinaries: []int{0}}, false
	}
	args := make([]backend.Arg, len(ka.args))
	for i, a := range ka.args {
		args[i] = a.arg
	}
	g, err := rt.CheckGemm(args)
	if err != nil {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: err.Error(), ArgumentMismatch: true}, false
	}
	c, h, err := w.cublasHandle()
	if err != nil {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: "cuBLAS: " + err.Error()}, false
	}
	gemm := c.gemm[rt.Elem]
	// alpha and beta: host copies of the scalars, as the element type,
	// pinned for the plan's life (the library reads them at each call).
	alpha, beta := ka.args[g.Alpha].scalar, ka.args[g.Beta].scalar
	pin.Pin(&alpha[0])
	pin.Pin(&beta[0])
	a, b, cc := uintptr(ka.args[g.A].ptr), uintptr(ka.args[g.B].ptr), uintptr(ka.args[g.C].ptr)
	l.ka, l.kernelName = ka, rt.Name
	l.call = func(stream uintptr) error {
		if err := c.check("cublasSetStream_v2", c.setStream(h, stream)); err != nil {
			return err
		}
		if err := c.check("cublasSetMathMode", c.setMathMode(h, o.MathMode)); err != nil {
			return err
		}
		return c.check(rt.Symbol, gemm(h, g.TransA, g.TransB, g.M, g.N, g.K, unsafe.Pointer(&alpha[0]), a, g.LDA, b, g.LDB, unsafe.Pointer(&beta[0]), cc, g.LDC))
	}
	return nil, false
}
