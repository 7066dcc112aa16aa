package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/workerproc"
)

var _ backend.ResourceReporter = (*Backend)(nil)

// resourcesTimeout bounds one opResources request: loading a CUBIN takes
// milliseconds, but a PTX image is JIT-compiled by the driver at load.
const resourcesTimeout = 2 * time.Minute

// Resources loads bin (what Compile made for j) in the worker and reads
// its kernel's attributes with cuFuncGetAttribute: NUM_REGS (registers
// per thread), SHARED_SIZE_BYTES (static shared memory per thread block,
// bytes), LOCAL_SIZE_BYTES (per thread, bytes) and MAX_THREADS_PER_BLOCK;
// the module is unloaded again and nothing is launched, so a call costs
// one module load (milliseconds for a CUBIN) and needs no prepared
// problem in the worker. Calls are serialised with Run.
//
// Errors (naming j.Key): the driver cannot load the module or find the
// kernel; the worker dies or takes longer than 2 min (it is restarted at
// the next call); the backend is closed.
func (b *Backend) Resources(ctx context.Context, j *backend.Job, bin *backend.Binary) (backend.Resources, error) {
	key := ""
	if j != nil {
		key = j.Key
	}
	if bin == nil {
		return backend.Resources{}, fmt.Errorf("cuda: configuration %s: Resources needs a binary", key)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backend.Resources{}, errors.New("cuda: Resources on a closed backend")
	}
	if b.w == nil {
		if err := b.restartLocked(ctx); err != nil {
			return backend.Resources{}, fmt.Errorf("cuda: restarting the worker: %w", err)
		}
	}
	rep, err := call(ctx, b.w, &request{Op: opResources, Job: j, Binary: bin}, resourcesTimeout, b.opts.Silence)
	switch {
	case errors.Is(err, workerproc.ErrTimeout):
		b.w = nil // killed by call
		return backend.Resources{}, fmt.Errorf("cuda: configuration %s: reading its resources took longer than %v; worker killed", key, resourcesTimeout)
	case err != nil:
		b.w = nil
		return backend.Resources{}, fmt.Errorf("cuda: configuration %s: reading its resources: %w", key, err)
	case rep.Err != "":
		if rep.Fatal {
			b.w.WaitExit(5 * time.Second)
			b.w = nil
		}
		return backend.Resources{}, fmt.Errorf("cuda: configuration %s: %s", key, rep.Err)
	case rep.Resources == nil:
		return backend.Resources{}, fmt.Errorf("cuda: configuration %s: the worker sent no resources", key)
	}
	return *rep.Resources, nil
}

// resources is opResources in the worker: load, read the attributes,
// unload. It mirrors the start of run, which reads the same attributes
// before launching.
func (w *worker) resources(bin *backend.Binary) (*backend.Resources, error) {
	d := w.d
	format, lowered, payload, err := decodeImage(bin.Image)
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		return nil, errors.New("binary image is empty")
	}
	if format == formatLibrary {
		// A library routine chooses its own kernels at each call:
		// nothing is compiled beforehand to read.
		return &backend.Resources{}, nil
	}
	if format == formatPTX && payload[len(payload)-1] != 0 {
		payload = append(payload, 0)
	}
	var mod uintptr
	if err := d.check("cuModuleLoadData", d.cuModuleLoadData(&mod, unsafe.Pointer(&payload[0]))); err != nil {
		return nil, fmt.Errorf("loading the module: %w", err)
	}
	runtime.KeepAlive(payload)
	defer d.cuModuleUnload(mod)
	var fn uintptr
	if err := d.check("cuModuleGetFunction", d.cuModuleGetFunction(&fn, mod, lowered)); err != nil {
		return nil, fmt.Errorf("finding kernel %s: %w", lowered, err)
	}
	fa := func(a int32) int {
		var v int32
		d.cuFuncGetAttribute(&v, a, fn)
		return int(v)
	}
	return &backend.Resources{
		Registers:          fa(funcAttrNumRegs),
		SharedStaticBytes:  fa(funcAttrSharedSizeBytes),
		LocalBytes:         fa(funcAttrLocalSizeBytes),
		MaxThreadsPerBlock: fa(funcAttrMaxThreadsPerBlock),
	}, nil
}
