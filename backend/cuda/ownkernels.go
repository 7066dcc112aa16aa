package cuda

import (
	"context"
	"runtime"
	"unsafe"

	"github.com/gtune/gtune/backend"
)

// gtune's own kernels (the comparison of outputs, the random fill of
// arguments) are compiled by NVRTC in each worker, in the background
// from the worker's start (compileOwn), and loaded at their first use
// (loadOwn).

// compileOwn starts compiling source (kernel names one of its kernels,
// for the request) for a GPU of compute capability major.minor, in the
// background: NVRTC takes 0.2-1.5 s for these, which the worker's start
// and the arguments' preparation then hide. The function returned waits
// for the binary.
func compileOwn(source, sourceName, kernel string, major, minor int) func() (*backend.Binary, error) {
	var bin *backend.Binary
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		bin, err = Compile(context.Background(), CompileRequest{
			Source: source, SourceName: sourceName, KernelName: kernel,
			ComputeMajor: major, ComputeMinor: minor,
		})
	}()
	return func() (*backend.Binary, error) {
		<-done
		return bin, err
	}
}

// loadOwn waits for a binary compileOwn makes, loads it in the worker's
// context and looks up the functions names, in order. Errors: the
// compilation's, the image's, CUDA's (the module is unloaded then).
func (w *worker) loadOwn(bin func() (*backend.Binary, error), names ...string) (mod uintptr, fns []uintptr, err error) {
	b, err := bin()
	if err != nil {
		return 0, nil, err
	}
	format, _, payload, err := decodeImage(b.Image)
	if err != nil {
		return 0, nil, err
	}
	if format == formatPTX && payload[len(payload)-1] != 0 {
		payload = append(payload, 0)
	}
	if err := w.d.check("cuModuleLoadData", w.d.cuModuleLoadData(&mod, unsafe.Pointer(&payload[0]))); err != nil {
		return 0, nil, err
	}
	runtime.KeepAlive(payload)
	for _, name := range names {
		var fn uintptr
		if err := w.d.check("cuModuleGetFunction", w.d.cuModuleGetFunction(&fn, mod, name)); err != nil {
			w.d.cuModuleUnload(mod)
			return 0, nil, err
		}
		fns = append(fns, fn)
	}
	return mod, fns, nil
}

// launchOwn launches fn over a grid of blocks one-dimensional thread
// blocks of threads, its parameters each 8 bytes (a device pointer, a
// 64-bit integer, or a double's bits), on the default stream.
func (w *worker) launchOwn(fn uintptr, blocks, threads int64, vals ...uint64) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&vals[0])
	params := make([]unsafe.Pointer, len(vals))
	for i := range vals {
		params[i] = unsafe.Pointer(&vals[i])
	}
	pin.Pin(&params[0])
	return w.d.check("cuLaunchKernel", w.d.cuLaunchKernel(fn, uint32(blocks), 1, 1, uint32(threads), 1, 1, 0, 0, unsafe.Pointer(&params[0]), nil))
}
