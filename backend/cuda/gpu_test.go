package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// The integration test needs an NVIDIA GPU and driver; it runs only with
// GTUNE_CUDA_TEST=1. It reads GPU state and changes none.

const vectorAddSource = `
#ifdef BROKEN
this is not C++;
#endif
__device__ volatile int g_spin = 1;

extern "C" __global__ void vector_add(float* c, const float* a, const float* b, int n) {
#if HANG
    while (g_spin) { }
#endif
    int i = blockIdx.x * block_size_x + threadIdx.x;
#if OOB
    if (i == 0) { ((float*)((char*)c + (1LL << 40)))[0] = 1.0f; }
#endif
    if (i < n) {
#if WRONG
        c[i] = a[i] - b[i];
#else
        c[i] = a[i] + b[i];
#endif
    }
}
`

// Mixed argument widths, a __constant__ argument and a C++ template
// kernel (lowered name differs from the source name).
const mixedSource = `
__constant__ float coef[4];

// coefp is the same constant argument passed as a pointer (as Kernel
// Tuner passes cmem_args): the difference is 0 only when both the symbol
// and the parameter hold it.
template <typename T>
__global__ void scale(T* out, const unsigned short* in, double alpha, short k, long long n, const float* coefp) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x;
        asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(in[i]));
        out[i] = (T)(x * alpha * k + coef[1] + (coefp[2] - coef[2]));
    }
}
`

func defines(bs int, extra ...string) []backend.Define {
	d := []backend.Define{{Name: "block_size_x", Value: fmt.Sprint(bs)}}
	for _, e := range []string{"HANG", "OOB", "WRONG"} {
		v := "0"
		for _, x := range extra {
			if x == e {
				v = "1"
			}
		}
		d = append(d, backend.Define{Name: e, Value: v})
	}
	for _, x := range extra {
		if x == "BROKEN" {
			d = append(d, backend.Define{Name: "BROKEN", Value: "1"})
		}
	}
	return d
}

func TestIntegrationCUDA(t *testing.T) {
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	n, _ := loadNVRTC()
	t.Logf("libcuda %s; NVRTC %s from %s", driverLib.path, n.Version(), n.path)
	ctx := context.Background()
	b, err := Open(ctx, 0, Options{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dev := b.Device()
	t.Logf("device: %+v", dev)
	if dev.ComputeMajor < 7 || dev.SMs == 0 || dev.MemoryBytes < 1<<30 || dev.MaxThreadsPerBlock != 1024 || dev.Name == "" {
		t.Fatalf("implausible device: %+v", dev)
	}

	const N = 1 << 24
	tmp := t.TempDir()
	ft, _ := lookupType("a", "float")
	fa := backend.Fill{Type: "Random", Value: 1, Seed: 11}
	fb := backend.Fill{Type: "Random", Value: 100, Seed: 12}
	// Reference computed here on the CPU from the same fills.
	ha, hb := make([]byte, 4*N), make([]byte, 4*N)
	if err := content(ha, ft, fa, 0, N, "a"); err != nil {
		t.Fatal(err)
	}
	if err := content(hb, ft, fb, 0, N, "b"); err != nil {
		t.Fatal(err)
	}
	hc := make([]byte, 4*N)
	for i := 0; i < N; i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(ha[4*i:])) + math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:]))
		binary.LittleEndian.PutUint32(hc[4*i:], math.Float32bits(x))
	}
	cPath := filepath.Join(tmp, "c_expected.bin")
	if err := os.WriteFile(cPath, hc, 0o644); err != nil {
		t.Fatal(err)
	}
	prob := backend.Single(backend.Kernel{
		KernelName: "vector_add", Source: vectorAddSource, SourceName: "vector_add.cu", Language: "CUDA",
		Args: []backend.Arg{
			{Name: "c", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: -1}, Output: true},
			{Name: "a", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fa},
			{Name: "b", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fb},
			{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: N},
		},
		Verification: &backend.Verification{Method: MethodSideBySide, Threshold: 0,
			Expected: map[string]backend.Fill{"c": {Type: "BinaryRaw", File: cPath}}},
	})
	start := time.Now()
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	t.Logf("prepare: %v, idle power %.1f W", time.Since(start), b.IdlePowerW())

	job := func(bs int, extra ...string) *tjob {
		return &tjob{Job: &backend.Job{Key: fmt.Sprint(bs, extra), Defines: defines(bs, extra...), Grid: [3]int{(N + bs - 1) / bs, 1, 1}, Block: [3]int{bs, 1, 1}}, Iterations: 20, Verify: true, Timeout: 60 * time.Second}
	}

	// Three configurations compiled concurrently.
	sizes := []int{128, 256, 1024}
	bins := make([]*backend.Binary, len(sizes))
	errs := make([]error, len(sizes))
	var wg sync.WaitGroup
	for i, bs := range sizes {
		wg.Add(1)
		go func(i, bs int) {
			defer wg.Done()
			bins[i], errs[i] = b.Compile(ctx, job(bs).Job)
		}(i, bs)
	}
	wg.Wait()
	for i, bs := range sizes {
		if errs[i] != nil {
			t.Fatalf("compile %d: %v", bs, errs[i])
		}
		f, name, payload, _ := decodeImage(bins[i].Image)
		t.Logf("compile block_size_x=%d: %.1f ms, format %d, %d bytes, lowered %q, log %q", bs, bins[i].CompileMs, f, len(payload), name, bins[i].Log)
		if name != "vector_add" {
			t.Fatalf("lowered name %q", name)
		}
	}
	for i, bs := range sizes {
		j := job(bs)
		j.Energy, j.EnergyWindow = true, time.Second
		r, err := runJob(ctx, b, j, bins[i])
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != backend.StatusValid || len(r.TimesMs) != 20 || r.MaxError != 0 {
			t.Fatalf("block %d: %+v", bs, r)
		}
		e := r.Energy
		if e == nil {
			t.Fatalf("block %d: no energy (%s)", bs, r.Reason)
		}
		t.Logf("block %d: regs %d, shared %d, local %d, max threads %d; median %.4f ms (min %.4f max %.4f); run %.0f ms",
			bs, r.Registers, r.SharedStaticBytes, r.LocalBytes, r.MaxThreadsPerBlock, measure.Median(r.TimesMs), minOf(r.TimesMs), maxOf(r.TimesMs), r.BenchmarkMs)
		t.Logf("block %d energy: window %.3f s, %d launches, %.2f J, %.5f J/launch, %.1f W, SM %.0f MHz, mem %.0f MHz, %.0f C, reasons %#x, %s",
			bs, e.WindowS, e.Launches, e.EnergyJ, e.EnergyPerLaunchJ, e.MeanPowerW, e.SMClockMHz, e.MemClockMHz, e.TemperatureC, e.ClockEventReasons, e.Method)
		if e.WindowS < 1 || e.WindowS > 1.5 || e.EnergyJ <= 0 || e.MeanPowerW < 20 || e.MeanPowerW > 1.2*dev.PowerLimitW+50 || e.Launches < 100 {
			t.Fatalf("implausible energy: %+v", e)
		}
		// Bytes moved per launch: read a and b, write c.
		t.Logf("block %d: %.0f GB/s", bs, 12*float64(N)/measure.Median(r.TimesMs)/1e6)
	}

	// A wrong answer is caught with its size and place.
	wrongBin, err := b.Compile(ctx, job(256, "WRONG").Job)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runJob(ctx, b, job(256, "WRONG"), wrongBin)
	if err != nil || r.Status != backend.StatusVerificationFailed || r.MaxError <= 0 {
		t.Fatalf("wrong kernel: %+v %v", r, err)
	}
	// The GPU's verdict is the host comparison's, word for word.
	hw := make([]byte, 4*N)
	for i := 0; i < N; i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(ha[4*i:])) - math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:]))
		binary.LittleEndian.PutUint32(hw[4*i:], math.Float32bits(x))
	}
	if want, maxErr := hostReason(t, MethodSideBySide, 0, ft, hw, hc); r.Reason != want || r.MaxError != maxErr {
		t.Fatalf("wrong kernel: reason %q, max error %g; the host finds %q, %g", r.Reason, r.MaxError, want, maxErr)
	}
	t.Logf("wrong kernel: %s", r.Reason)

	// A compiler rejection is a CompileError with NVRTC's log.
	_, err = b.Compile(ctx, job(256, "BROKEN").Job)
	var ce *backend.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("broken source: %v", err)
	}
	t.Logf("compile error: %s", ce.Log)

	// 2048 threads per block: launch_failed, worker stays.
	r, err = runJob(ctx, b, &tjob{Job: &backend.Job{Defines: defines(2048), Grid: [3]int{N / 2048, 1, 1}, Block: [3]int{2048, 1, 1}}, Iterations: 5, Verify: true, Timeout: time.Minute}, bins[0])
	if err != nil || r.Status != backend.StatusLaunchFailed || b.Restarts() != 0 {
		t.Fatalf("2048 threads: %+v %v (restarts %d)", r, err, b.Restarts())
	}
	t.Logf("2048 threads: %s", r.Reason)
	// Too much dynamic shared memory: the launch itself fails.
	r, err = runJob(ctx, b, &tjob{Job: &backend.Job{Grid: [3]int{1, 1, 1}, Block: [3]int{128, 1, 1}, DynamicSharedBytes: 1 << 20}, Iterations: 1, Timeout: time.Minute}, bins[0])
	if err != nil || r.Status != backend.StatusLaunchFailed || b.Restarts() != 0 {
		t.Fatalf("1 MiB shared: %+v %v", r, err)
	}
	t.Logf("1 MiB dynamic shared memory: %s", r.Reason)

	// Out-of-bounds write: runtime_failed, worker restarted, next one works.
	oobBin, err := b.Compile(ctx, job(256, "OOB").Job)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r, err = runJob(ctx, b, job(256, "OOB"), oobBin)
	if err != nil || r.Status != backend.StatusRuntimeFailed || b.Restarts() != 1 {
		t.Fatalf("out of bounds: %+v %v (restarts %d)", r, err, b.Restarts())
	}
	t.Logf("out of bounds (%v incl. restart): %s", time.Since(start), r.Reason)
	r, err = runJob(ctx, b, job(256), bins[1])
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("after restart: %+v %v", r, err)
	}
	t.Logf("after restart: median %.4f ms", measure.Median(r.TimesMs))

	// A kernel that never ends: timeout, worker killed and restarted.
	hangBin, err := b.Compile(ctx, job(256, "HANG").Job)
	if err != nil {
		t.Fatal(err)
	}
	hj := job(256, "HANG")
	hj.Timeout = 2 * time.Second
	start = time.Now()
	r, err = runJob(ctx, b, hj, hangBin)
	if err != nil || r.Status != backend.StatusTimeout || b.Restarts() != 2 {
		t.Fatalf("hang: %+v %v (restarts %d)", r, err, b.Restarts())
	}
	t.Logf("hang (%v incl. restart, benchmark %.0f ms): %s", time.Since(start), r.BenchmarkMs, r.Reason)
	r, err = runJob(ctx, b, job(1024), bins[2])
	if err != nil || r.Status != backend.StatusValid {
		t.Fatalf("after timeout: %+v %v", r, err)
	}
	t.Logf("after timeout: median %.4f ms", measure.Median(r.TimesMs))

	testMixed(t, b)
}

func testMixed(t *testing.T, b *Backend) {
	ctx := context.Background()
	const N = 100000
	hin := backend.Fill{Type: "Random", Value: 4, Seed: 3}
	prob := backend.Single(backend.Kernel{
		KernelName: "scale<float>", Source: mixedSource, SourceName: "mixed.cu", Language: "CUDA",
		CompilerOptions: []string{"-std=c++17"},
		Args: []backend.Arg{
			{Name: "out", Type: "float", Kind: backend.ArgVector, Count: N, Output: true},
			{Name: "in", Type: "half", Kind: backend.ArgVector, Count: N, Fill: hin},
			{Name: "alpha", Type: "double", Kind: backend.ArgScalar, Scalar: 0.5},
			{Name: "k", Type: "int16", Kind: backend.ArgScalar, Scalar: -3},
			{Name: "n", Type: "int64", Kind: backend.ArgScalar, Scalar: N},
			{Name: "coef", Type: "float", Kind: backend.ArgVector, Count: 4, Fill: backend.Fill{Type: "Constant", Value: 10}, Constant: true},
		},
		Verification: &backend.Verification{Method: MethodSideBySideRelative, Threshold: 1e-6, Reference: true},
	})
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	j := &tjob{Job: &backend.Job{Grid: [3]int{(N + 255) / 256, 1, 1}, Block: [3]int{256, 1, 1}}, Iterations: 3, SaveReference: true, Timeout: time.Minute}
	bin, err := b.Compile(ctx, j.Job)
	if err != nil {
		t.Fatal(err)
	}
	_, lowered, _, _ := decodeImage(bin.Image)
	t.Logf("scale<float> lowered to %q", lowered)
	r, err := runJob(ctx, b, j, bin)
	if err != nil || r.Status != backend.StatusValid {
		t.Fatalf("save reference: %+v %v", r, err)
	}
	// The CPU's outputs, compared with the GPU's at the end (as expected
	// contents from a file): the reference stays in the worker.
	ht, _ := lookupType("in", "half")
	hb := make([]byte, 2*N)
	if err := content(hb, ht, hin, 0, N, "in"); err != nil {
		t.Fatal(err)
	}
	cpu := make([]byte, 4*N)
	for i := 0; i < N; i++ {
		x := float64(halfToFloat32(binary.LittleEndian.Uint16(hb[2*i:])))
		binary.LittleEndian.PutUint32(cpu[4*i:], math.Float32bits(float32(x*0.5*-3+10)))
	}
	cpuFile := filepath.Join(t.TempDir(), "out.bin")
	if err := os.WriteFile(cpuFile, cpu, 0o644); err != nil {
		t.Fatal(err)
	}
	j.SaveReference, j.Verify = false, true
	r, err = runJob(ctx, b, j, bin)
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("verify against saved reference: %+v %v", r, err)
	}
	t.Logf("mixed kernel: verified against the saved reference; median %.4f ms, %d registers", measure.Median(r.TimesMs), r.Registers)
	// A new worker runs the reference again (the backend keeps its plan).
	restartWorker(t, b)
	r, err = runJob(ctx, b, j, bin)
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("verify against the reference after a restart: %+v %v", r, err)
	}
	// The GPU's outputs are the CPU's.
	exp := prob.Kernels[0]
	exp.Verification = &backend.Verification{Method: MethodSideBySide, Threshold: 1e-5, Expected: map[string]backend.Fill{"out": {Type: "BinaryRaw", File: cpuFile}}}
	if err := b.Prepare(ctx, backend.Single(exp)); err != nil {
		t.Fatal(err)
	}
	r, err = runJob(ctx, b, j, bin)
	if err != nil || r.Status != backend.StatusValid {
		t.Fatalf("mixed kernel against the CPU: %+v %v", r, err)
	}
	t.Logf("mixed kernel: largest difference from the CPU %g", r.MaxError)
	// The same kernel with the constant argument left out of the list (the
	// convolution_milo bug): refused from the driver's parameter layout,
	// never launched.
	short := prob.Kernels[0]
	short.Args = short.Args[:5]
	short.Verification = nil
	if err := b.Prepare(ctx, backend.Single(short)); err != nil {
		t.Fatal(err)
	}
	j.Verify = false
	r, err = runJob(ctx, b, j, bin)
	if err != nil || r.Status != backend.StatusLaunchFailed || !r.ArgumentMismatch ||
		!strings.Contains(r.Reason, "takes 6 parameters (8, 8, 8, 2, 8, 8 bytes), the spec gives 5 arguments (8, 8, 8, 2, 8 bytes)") {
		t.Fatalf("short argument list: %+v %v", r, err)
	}
	t.Logf("short argument list refused: %s", r.Reason)
}

// restartWorker replaces b's worker as a crash would, re-preparing the
// problem in the new one.
func restartWorker(t *testing.T, b *Backend) {
	t.Helper()
	before := b.Restarts()
	b.mu.Lock()
	err := b.restartLocked(context.Background())
	b.mu.Unlock()
	if err != nil || b.Restarts() != before+1 {
		t.Fatalf("restart: %v (restarts %d)", err, b.Restarts())
	}
}

// hostReason is the failure reason and MaxError the host comparison gives
// for one output "c".
func hostReason(t *testing.T, method string, threshold float64, et elemType, got, want []byte) (string, float64) {
	t.Helper()
	c, err := compare(method, threshold, et, got, want)
	if err != nil || c.OK || c.NaNIndex >= 0 {
		t.Fatalf("host comparison: %+v %v", c, err)
	}
	return fmt.Sprintf("output c: %s error %g exceeds threshold %g (largest at %s: got %g, want %g)",
		methodName(method), c.Error, threshold, where(c.Worst, et), c.Got, c.Want), c.Error
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// TestIntegrationLargeBuffers fills 5 GiB buffers piecewise in the worker
// (device offsets past 4 GiB) and checks that the chunked Random fill of
// the input equals the one-shot fill of the expected output.
func TestIntegrationLargeBuffers(t *testing.T) {
	ctx, b := openGPU(t)
	const N = 5<<28 + 12345 // floats: 5 GiB and a bit, not a whole number of chunks
	fill := backend.Fill{Type: "Random", Value: 1000, Seed: 99}
	prob := backend.Single(backend.Kernel{
		KernelName: "copy", SourceName: "copy.cu", Language: "CUDA",
		Source: `extern "C" __global__ void copy(float* c, const float* a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}`,
		Args: []backend.Arg{
			{Name: "c", Type: "float", Kind: backend.ArgVector, Count: N, Output: true},
			{Name: "a", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fill},
			{Name: "n", Type: "int64", Kind: backend.ArgScalar, Scalar: N},
		},
		Verification: &backend.Verification{Method: MethodAbsoluteDifference, Threshold: 0, Expected: map[string]backend.Fill{"c": fill}},
	})
	start := time.Now()
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	prep := time.Since(start)
	j := &tjob{Job: &backend.Job{Grid: [3]int{(N + 255) / 256, 1, 1}, Block: [3]int{256, 1, 1}}, Iterations: 5, Verify: true, Timeout: 5 * time.Minute}
	bin, err := b.Compile(ctx, j.Job)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runJob(ctx, b, j, bin)
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("large copy: %+v %v", r, err)
	}
	t.Logf("large buffers: prepare %v (2 x %.2f GiB, idle %.1f W), run %.0f ms incl. verification of %d floats, copy median %.3f ms = %.0f GB/s",
		prep, float64(4*N)/(1<<30), b.IdlePowerW(), r.BenchmarkMs, N, measure.Median(r.TimesMs), 8*float64(N)/measure.Median(r.TimesMs)/1e6)
}

// TestIntegrationGPUCompare checks the comparison kernel against the host
// comparison (compare) for every type it serves, every method, and
// outputs with errors spread over blocks and grid-stride rounds, ties,
// NaN and infinities. It drives a worker in this process.
func TestIntegrationGPUCompare(t *testing.T) {
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	runtime.LockOSThread() // the CUDA context is current on this thread only
	defer runtime.UnlockOSThread()
	w := &worker{}
	if err := w.init(0); err != nil {
		t.Fatal(err)
	}
	defer w.close()
	start := time.Now()
	if err := w.loadCompare(); err != nil {
		t.Fatal(err)
	}
	t.Logf("comparison kernel compiled and loaded in %v", time.Since(start))
	const round = cmpThreads * cmpMaxBlocks // components per grid-stride round
	const comps = 3*round + 80              // less than one host compare piece
	var gotPtr, wantPtr uint64
	for _, p := range []*uint64{&gotPtr, &wantPtr} {
		if err := w.d.check("cuMemAlloc_v2", w.d.cuMemAlloc(p, comps*8)); err != nil {
			t.Fatal(err)
		}
		defer w.d.cuMemFree(*p)
	}
	checked := 0
	for _, name := range []string{"float", "double", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool", "float4", "double2"} {
		et, _ := lookupType("x", name)
		n := int64(comps / et.Lanes * et.Lanes)
		base := make([]byte, n*int64(et.CompSize))
		if err := fillBytes(base, et, backend.Fill{Type: "Random", Value: 100, Seed: 21}, 0); err != nil {
			t.Fatal(err)
		}
		float := et.Kind == kFloat || et.Kind == kDouble
		type scenario struct {
			name string
			edit func(got, want []byte)
		}
		set := func(b []byte, i int64, v float64) { putComp(b[i*int64(et.CompSize):], et, v) }
		get := func(b []byte, i int64) float64 { return getComp(b[i*int64(et.CompSize):], et) }
		add := func(b []byte, i int64, d float64) {
			if et.Kind == kBool {
				set(b, i, 1-get(b, i))
			} else {
				set(b, i, get(b, i)+d)
			}
		}
		scenarios := []scenario{
			{"equal", func(got, want []byte) {}},
			{"errors", func(got, want []byte) {
				add(got, 5, 1)
				add(got, round+3, 7)      // second round of thread 3
				add(got, 2*round+999, -7) // the same absolute error later: the first stays
				add(got, n-1, 2)          // the last component
				add(got, round/2+17, 3)   // another block
				set(want, 300, 0)         // relative error against a zero reference
				set(got, 300, 1)
			}},
		}
		if float {
			nan, inf := math.NaN(), math.Inf(1)
			scenarios = append(scenarios, scenario{"nan-inf", func(got, want []byte) {
				add(got, 40, 1)
				set(got, round+10, nan) // NaN mismatches: the first is reported
				set(got, 12345, nan)
				set(got, 77, nan) // NaN on both sides agrees
				set(want, 77, nan)
				set(got, 2*round+5, inf) // infinite output, finite reference
				set(want, 600, inf)      // infinite reference: NaN relative error
				set(got, 601, -inf)      // equal infinities agree
				set(want, 601, -inf)
			}}, scenario{"inf-only", func(got, want []byte) {
				add(got, 9, 2)
				set(got, 2*round+5, inf)
				set(want, 3*round, -inf) // a NaN relative error, the largest absolute one
			}})
		}
		for _, sc := range scenarios {
			got, want := append([]byte(nil), base...), append([]byte(nil), base...)
			sc.edit(got, want)
			if err := w.upload(gotPtr, got); err != nil {
				t.Fatal(err)
			}
			if err := w.upload(wantPtr, want); err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{MethodSideBySide, MethodAbsoluteDifference, MethodSideBySideRelative} {
				cpu, err := compare(m, 0.5, et, got, want)
				if err != nil {
					t.Fatal(err)
				}
				gpu, mErr, err := w.compareDevice(m, 0.5, et, gotPtr, wantPtr, n)
				if err != nil || mErr != nil {
					t.Fatalf("%s %s %s: %v %v", name, sc.name, m, err, mErr)
				}
				same := gpu.OK == cpu.OK && gpu.Worst == cpu.Worst && gpu.NaNIndex == cpu.NaNIndex
				if m == MethodAbsoluteDifference && !math.IsInf(cpu.Error, 0) {
					same = same && math.Abs(gpu.Error-cpu.Error) <= 1e-12*math.Abs(cpu.Error)
				} else {
					same = same && (gpu.Error == cpu.Error || math.IsNaN(gpu.Error) && math.IsNaN(cpu.Error))
				}
				if !gpu.OK && gpu.NaNIndex < 0 {
					same = same && gpu.Got == cpu.Got && gpu.Want == cpu.Want
				}
				if !same {
					t.Errorf("%s %s %s: GPU %+v, host %+v", name, sc.name, m, gpu, cpu)
				}
				checked++
			}
		}
	}
	if _, mErr, _ := w.compareDevice("Closeness", 1, elemTypes["float"], gotPtr, wantPtr, 10); mErr == nil || !strings.Contains(mErr.Error(), `"Closeness" is not one of`) {
		t.Fatalf("unknown method: %v", mErr)
	}
	t.Logf("%d GPU comparisons agree with the host's", checked)
}

// TestIntegrationLargeVerify verifies a 1 GiB output (2^28 floats) on the
// GPU against expected contents and against a saved reference (also after
// a worker restart), finds a wrong kernel with the host's words, and
// reports the Run's wall time for 7 timed launches.
func TestIntegrationLargeVerify(t *testing.T) {
	ctx, b := openGPU(t)
	const N = 1 << 28
	ft, _ := lookupType("c", "float")
	fa := backend.Fill{Type: "Random", Value: 1, Seed: 31}
	fb := backend.Fill{Type: "Random", Value: 100, Seed: 32}
	ha, hb := make([]byte, 4*N), make([]byte, 4*N)
	if err := content(ha, ft, fa, 0, N, "a"); err != nil {
		t.Fatal(err)
	}
	if err := content(hb, ft, fb, 0, N, "b"); err != nil {
		t.Fatal(err)
	}
	hc, hw := make([]byte, 4*N), make([]byte, 4*N)
	for i := 0; i < N; i++ {
		x, y := math.Float32frombits(binary.LittleEndian.Uint32(ha[4*i:])), math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:]))
		binary.LittleEndian.PutUint32(hc[4*i:], math.Float32bits(x+y))
		binary.LittleEndian.PutUint32(hw[4*i:], math.Float32bits(x-y))
	}
	tmp := t.TempDir()
	cPath := filepath.Join(tmp, "c_expected.bin")
	if err := os.WriteFile(cPath, hc, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []backend.Arg{
		{Name: "c", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: -1}, Output: true},
		{Name: "a", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fa},
		{Name: "b", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fb},
		{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: N},
	}
	prob := backend.Single(backend.Kernel{
		KernelName: "vector_add", Source: vectorAddSource, SourceName: "vector_add.cu", Language: "CUDA", Args: args,
		Verification: &backend.Verification{Method: MethodSideBySide, Threshold: 0,
			Expected: map[string]backend.Fill{"c": {Type: "BinaryRaw", File: cPath}}},
	})
	start := time.Now()
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	t.Logf("prepare (3 x 1 GiB, expected contents from a file): %v", time.Since(start))
	job := func(extra ...string) *tjob {
		return &tjob{Job: &backend.Job{Defines: defines(256, extra...), Grid: [3]int{N / 256, 1, 1}, Block: [3]int{256, 1, 1}}, Iterations: 7, Verify: true, Timeout: 2 * time.Minute}
	}
	bin, err := b.Compile(ctx, job().Job)
	if err != nil {
		t.Fatal(err)
	}
	var bench, over []float64
	for k := 0; k < 7; k++ {
		r, err := runJob(ctx, b, job(), bin)
		if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 || len(r.TimesMs) != 7 {
			t.Fatalf("1 GiB vector_add: %+v %v", r, err)
		}
		timed := 0.0
		for _, x := range r.TimesMs {
			timed += x
		}
		bench, over = append(bench, r.BenchmarkMs), append(over, r.BenchmarkMs-timed)
		t.Logf("1 GiB vector_add run %d: BenchmarkMs %.1f, timed launches %.1f ms (median %.3f ms), other %.1f ms", k, r.BenchmarkMs, timed, measure.Median(r.TimesMs), r.BenchmarkMs-timed)
	}
	t.Logf("1 GiB vector_add, Iterations 7, verified, no energy: median BenchmarkMs %.1f, median overhead besides the timed launches %.1f ms", measure.Median(bench), measure.Median(over))
	if measure.Median(over) > 500 {
		t.Errorf("verification overhead %.1f ms per configuration", measure.Median(over))
	}

	wrongBin, err := b.Compile(ctx, job("WRONG").Job)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runJob(ctx, b, job("WRONG"), wrongBin)
	if err != nil || r.Status != backend.StatusVerificationFailed {
		t.Fatalf("wrong kernel: %+v %v", r, err)
	}
	if want, maxErr := hostReason(t, MethodSideBySide, 0, ft, hw, hc); r.Reason != want || r.MaxError != maxErr {
		t.Fatalf("wrong kernel: reason %q, max error %g; the host finds %q, %g", r.Reason, r.MaxError, want, maxErr)
	}
	t.Logf("wrong kernel, 1 GiB: %s (run %.1f ms)", r.Reason, r.BenchmarkMs)

	// The outputs of a reference run are the reference; AbsoluteDifference
	// sums over all 2^28 components.
	prob2 := backend.Single(backend.Kernel{
		KernelName: "vector_add", Source: vectorAddSource, SourceName: "vector_add.cu", Language: "CUDA", Args: args,
		Verification: &backend.Verification{Method: MethodAbsoluteDifference, Threshold: 0, Reference: true},
	})
	if err := b.Prepare(ctx, prob2); err != nil {
		t.Fatal(err)
	}
	rj := job()
	rj.Verify, rj.SaveReference, rj.Iterations = false, true, 1
	if r, err := runJob(ctx, b, rj, bin); err != nil || r.Status != backend.StatusValid {
		t.Fatalf("save reference: %+v %v", r, err)
	}
	// The kept reference is a+b: the right kernel matches it exactly, the
	// wrong one differs from it as it differs from a+b on the host.
	if r, err := runJob(ctx, b, job(), bin); err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("the right kernel against the kept reference: %+v %v", r, err)
	}
	hc2, _ := compare(MethodAbsoluteDifference, 0, ft, hw, hc)
	hostSum := hc2.Error
	hostTail := fmt.Sprintf("(largest at %s: got %g, want %g)", where(hc2.Worst, ft), hc2.Got, hc2.Want)
	r1, err := runJob(ctx, b, job("WRONG"), wrongBin)
	if err != nil || r1.Status != backend.StatusVerificationFailed || math.Abs(r1.MaxError-hostSum) > 1e-9*hostSum ||
		!strings.HasPrefix(r1.Reason, "output c: AbsoluteDifference error ") || !strings.HasSuffix(r1.Reason, hostTail) {
		t.Fatalf("wrong kernel against the saved reference: %+v %v; host sum %.17g, %s", r1, err, hostSum, hostTail)
	}
	t.Logf("wrong kernel against the saved reference: %s (GPU sum %.17g, host sum %.17g)", r1.Reason, r1.MaxError, hostSum)
	restartWorker(t, b)
	r2, err := runJob(ctx, b, job("WRONG"), wrongBin)
	if err != nil || r2.Status != backend.StatusVerificationFailed || r2.MaxError != r1.MaxError || r2.Reason != r1.Reason {
		t.Fatalf("wrong kernel after a restart: %+v %v", r2, err)
	}
	t.Logf("after a restart the reference file was read back (run %.1f ms)", r2.BenchmarkMs)
	if r, err := runJob(ctx, b, job(), bin); err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("right kernel after a restart: %+v %v", r, err)
	} else {
		t.Logf("right kernel after a restart: BenchmarkMs %.1f", r.BenchmarkMs)
	}
}

// TestIntegrationOutOfMemoryFallback fills the GPU so that the pristine
// copy and the expected contents of an output do not fit: the worker
// resets and compares on the host instead, with the same verdicts. It
// drives a worker in this process.
func TestIntegrationOutOfMemoryFallback(t *testing.T) {
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := &worker{}
	if err := w.init(0); err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := w.loadCompare(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	compile := func(extra ...string) *backend.Binary {
		bin, err := Compile(ctx, CompileRequest{Source: vectorAddSource, KernelName: "vector_add", Defines: defines(256, extra...),
			ComputeMajor: w.info.ComputeMajor, ComputeMinor: w.info.ComputeMinor})
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
	right, wrong := compile(), compile("WRONG")

	const N = 1 << 26 // 256 MiB per argument
	var free, total uint64
	w.d.cuMemGetInfo(&free, &total)
	fill := (free - 3*4*N - 96<<20) &^ (2<<20 - 1) // room for the arguments, not for a fourth buffer
	var filler uint64
	if err := w.d.check("cuMemAlloc_v2", w.d.cuMemAlloc(&filler, fill)); err != nil {
		t.Fatal(err)
	}
	defer w.d.cuMemFree(filler)
	t.Logf("%d of %d bytes free; %d taken", free, total, fill)

	args := []backend.Arg{
		{Name: "c", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: -5}, Output: true},
		{Name: "a", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: 1}},
		{Name: "b", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: 2}},
		{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: N},
	}
	job := &tjob{Job: &backend.Job{Grid: [3]int{N / 256, 1, 1}, Block: [3]int{256, 1, 1}}, Iterations: 3, Verify: true}
	run := func(bin *backend.Binary, j *tjob) *backend.Result {
		res, fatal := w.runPlan(j.Plan(bin))
		if fatal {
			t.Fatalf("fatal: %+v", res)
		}
		return res
	}

	// Expected contents given: both stay on the host.
	err := w.prepare(backend.Single(backend.Kernel{KernelName: "vector_add", Args: args,
		Verification: &backend.Verification{Method: MethodSideBySide, Expected: map[string]backend.Fill{"c": {Type: "Constant", Value: 3}}}}))
	if err != nil {
		t.Fatal(err)
	}
	if c := w.ks[0].args[0]; c.pristine != 0 || len(c.init) != 4*N || c.ref != 0 || len(c.expected) != 4*N {
		t.Fatalf("output c: pristine %#x, %d host bytes; ref %#x, %d expected host bytes", c.pristine, len(c.init), c.ref, len(c.expected))
	}
	if r := run(right, job); r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("right kernel: %+v", r)
	}
	if r := run(wrong, job); r.Status != backend.StatusVerificationFailed || r.MaxError != 4 ||
		r.Reason != "output c: SideBySideComparison error 4 exceeds threshold 0 (largest at element 0: got -1, want 3)" {
		t.Fatalf("wrong kernel: %+v", r)
	}

	// A saved reference: kept in host memory, compared on the host.
	err = w.prepare(backend.Single(backend.Kernel{KernelName: "vector_add", Args: args,
		Verification: &backend.Verification{Method: MethodAbsoluteDifference, Reference: true}}))
	if err != nil {
		t.Fatal(err)
	}
	if c := w.ks[0].args[0]; c.pristine != 0 || c.ref != 0 {
		t.Fatalf("output c: pristine %#x, ref %#x", c.pristine, c.ref)
	}
	sj := *job
	sj.Verify, sj.SaveReference = false, true
	if r := run(right, &sj); r.Status != backend.StatusValid {
		t.Fatalf("save reference: %+v", r)
	}
	if r := run(wrong, job); r.Status != backend.StatusVerificationFailed || r.MaxError != 4*N ||
		r.Reason != "output c: AbsoluteDifference error 2.68435456e+08 exceeds threshold 0 (largest at element 0: got -1, want 3)" {
		t.Fatalf("wrong kernel against the reference: %+v", r)
	}

	// No verification: a reference run resets its output from the fill.
	if err := w.prepare(backend.Single(backend.Kernel{KernelName: "vector_add", Args: args})); err != nil {
		t.Fatal(err)
	}
	if r := run(right, &sj); r.Status != backend.StatusVerificationFailed || r.Reason != "save_reference: the problem's verification has no reference" {
		t.Fatalf("reference run without verification: %+v", r)
	}
	t.Logf("host fallbacks verified %d floats", N)
}
