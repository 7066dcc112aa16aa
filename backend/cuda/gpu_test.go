package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
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

template <typename T>
__global__ void scale(T* out, const unsigned short* in, double alpha, short k, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x;
        asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(in[i]));
        out[i] = (T)(x * alpha * k + coef[1]);
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
	prob := &backend.Problem{
		KernelName: "vector_add", Source: vectorAddSource, SourceName: "vector_add.cu", Language: "CUDA",
		Args: []backend.Arg{
			{Name: "c", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: -1}, Output: true},
			{Name: "a", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fa},
			{Name: "b", Type: "float", Kind: backend.ArgVector, Count: N, Fill: fb},
			{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: N},
		},
		Verification: &backend.Verification{Method: MethodSideBySide, Threshold: 0,
			Expected: map[string]backend.Fill{"c": {Type: "BinaryRaw", File: cPath}}},
	}
	start := time.Now()
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	t.Logf("prepare: %v, idle power %.1f W", time.Since(start), b.IdlePowerW())

	job := func(bs int, extra ...string) *backend.Job {
		return &backend.Job{Key: fmt.Sprint(bs, extra), Defines: defines(bs, extra...), Grid: [3]int{(N + bs - 1) / bs, 1, 1}, Block: [3]int{bs, 1, 1},
			Iterations: 20, Verify: true, Timeout: 60 * time.Second}
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
			bins[i], errs[i] = b.Compile(ctx, job(bs))
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
		r, err := b.Run(ctx, j, bins[i])
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
			bs, r.Registers, r.SharedStaticBytes, r.LocalBytes, r.MaxThreadsPerBlock, median(r.TimesMs), minOf(r.TimesMs), maxOf(r.TimesMs), r.BenchmarkMs)
		t.Logf("block %d energy: window %.3f s, %d launches, %.2f J, %.5f J/launch, %.1f W, SM %.0f MHz, mem %.0f MHz, %.0f C, reasons %#x, %s",
			bs, e.WindowS, e.Launches, e.EnergyJ, e.EnergyPerLaunchJ, e.MeanPowerW, e.SMClockMHz, e.MemClockMHz, e.TemperatureC, e.ClockEventReasons, e.Method)
		if e.WindowS < 1 || e.WindowS > 1.5 || e.EnergyJ <= 0 || e.MeanPowerW < 20 || e.MeanPowerW > 1.2*dev.PowerLimitW+50 || e.Launches < 100 {
			t.Fatalf("implausible energy: %+v", e)
		}
		// Bytes moved per launch: read a and b, write c.
		t.Logf("block %d: %.0f GB/s", bs, 12*float64(N)/median(r.TimesMs)/1e6)
	}

	// A wrong answer is caught with its size and place.
	wrongBin, err := b.Compile(ctx, job(256, "WRONG"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Run(ctx, job(256, "WRONG"), wrongBin)
	if err != nil || r.Status != backend.StatusVerificationFailed || r.MaxError <= 0 {
		t.Fatalf("wrong kernel: %+v %v", r, err)
	}
	t.Logf("wrong kernel: %s", r.Reason)

	// A compiler rejection is a CompileError with NVRTC's log.
	_, err = b.Compile(ctx, job(256, "BROKEN"))
	var ce *backend.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("broken source: %v", err)
	}
	t.Logf("compile error: %s", ce.Log)

	// 2048 threads per block: launch_failed, worker stays.
	r, err = b.Run(ctx, &backend.Job{Defines: defines(2048), Grid: [3]int{N / 2048, 1, 1}, Block: [3]int{2048, 1, 1}, Iterations: 5, Verify: true, Timeout: time.Minute}, bins[0])
	if err != nil || r.Status != backend.StatusLaunchFailed || b.Restarts() != 0 {
		t.Fatalf("2048 threads: %+v %v (restarts %d)", r, err, b.Restarts())
	}
	t.Logf("2048 threads: %s", r.Reason)
	// Too much dynamic shared memory: the launch itself fails.
	r, err = b.Run(ctx, &backend.Job{Grid: [3]int{1, 1, 1}, Block: [3]int{128, 1, 1}, DynamicSharedBytes: 1 << 20, Iterations: 1, Timeout: time.Minute}, bins[0])
	if err != nil || r.Status != backend.StatusLaunchFailed || b.Restarts() != 0 {
		t.Fatalf("1 MiB shared: %+v %v", r, err)
	}
	t.Logf("1 MiB dynamic shared memory: %s", r.Reason)

	// Out-of-bounds write: runtime_failed, worker restarted, next one works.
	oobBin, err := b.Compile(ctx, job(256, "OOB"))
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r, err = b.Run(ctx, job(256, "OOB"), oobBin)
	if err != nil || r.Status != backend.StatusRuntimeFailed || b.Restarts() != 1 {
		t.Fatalf("out of bounds: %+v %v (restarts %d)", r, err, b.Restarts())
	}
	t.Logf("out of bounds (%v incl. restart): %s", time.Since(start), r.Reason)
	r, err = b.Run(ctx, job(256), bins[1])
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("after restart: %+v %v", r, err)
	}
	t.Logf("after restart: median %.4f ms", median(r.TimesMs))

	// A kernel that never ends: timeout, worker killed and restarted.
	hangBin, err := b.Compile(ctx, job(256, "HANG"))
	if err != nil {
		t.Fatal(err)
	}
	hj := job(256, "HANG")
	hj.Timeout = 2 * time.Second
	start = time.Now()
	r, err = b.Run(ctx, hj, hangBin)
	if err != nil || r.Status != backend.StatusTimeout || b.Restarts() != 2 {
		t.Fatalf("hang: %+v %v (restarts %d)", r, err, b.Restarts())
	}
	t.Logf("hang (%v incl. restart, benchmark %.0f ms): %s", time.Since(start), r.BenchmarkMs, r.Reason)
	r, err = b.Run(ctx, job(1024), bins[2])
	if err != nil || r.Status != backend.StatusValid {
		t.Fatalf("after timeout: %+v %v", r, err)
	}
	t.Logf("after timeout: median %.4f ms", median(r.TimesMs))

	testMixed(t, b)
}

func testMixed(t *testing.T, b *Backend) {
	ctx := context.Background()
	const N = 100000
	ref := t.TempDir()
	hin := backend.Fill{Type: "Random", Value: 4, Seed: 3}
	prob := &backend.Problem{
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
		Verification: &backend.Verification{Method: MethodSideBySideRelative, Threshold: 1e-6, ReferenceDir: ref},
	}
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	j := &backend.Job{Grid: [3]int{(N + 255) / 256, 1, 1}, Block: [3]int{256, 1, 1}, Iterations: 3, SaveReference: true, Timeout: time.Minute}
	bin, err := b.Compile(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	_, lowered, _, _ := decodeImage(bin.Image)
	t.Logf("scale<float> lowered to %q", lowered)
	r, err := b.Run(ctx, j, bin)
	if err != nil || r.Status != backend.StatusValid {
		t.Fatalf("save reference: %+v %v", r, err)
	}
	saved, err := os.ReadFile(filepath.Join(ref, "out.bin"))
	if err != nil || len(saved) != 4*N {
		t.Fatalf("reference file: %d bytes, %v", len(saved), err)
	}
	ht, _ := lookupType("in", "half")
	hb := make([]byte, 2*N)
	if err := content(hb, ht, hin, 0, N, "in"); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := 0; i < N; i++ {
		x := float64(halfToFloat32(binary.LittleEndian.Uint16(hb[2*i:])))
		want := float32(x*0.5*-3 + 10)
		got := math.Float32frombits(binary.LittleEndian.Uint32(saved[4*i:]))
		worst = math.Max(worst, math.Abs(float64(got-want)))
	}
	if worst > 1e-5 {
		t.Fatalf("mixed kernel differs from the CPU by %g", worst)
	}
	j.SaveReference, j.Verify = false, true
	r, err = b.Run(ctx, j, bin)
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("verify against saved reference: %+v %v", r, err)
	}
	t.Logf("mixed kernel: CPU difference %g; verified against the saved reference; median %.4f ms, %d registers", worst, median(r.TimesMs), r.Registers)
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
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	ctx := context.Background()
	b, err := Open(ctx, 0, Options{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const N = 5<<28 + 12345 // floats: 5 GiB and a bit, not a whole number of chunks
	fill := backend.Fill{Type: "Random", Value: 1000, Seed: 99}
	prob := &backend.Problem{
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
	}
	start := time.Now()
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	prep := time.Since(start)
	j := &backend.Job{Grid: [3]int{(N + 255) / 256, 1, 1}, Block: [3]int{256, 1, 1}, Iterations: 5, Verify: true, Timeout: 5 * time.Minute}
	bin, err := b.Compile(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Run(ctx, j, bin)
	if err != nil || r.Status != backend.StatusValid || r.MaxError != 0 {
		t.Fatalf("large copy: %+v %v", r, err)
	}
	t.Logf("large buffers: prepare %v (2 x %.2f GiB, idle %.1f W), run %.0f ms incl. verification of %d floats, copy median %.3f ms = %.0f GB/s",
		prep, float64(4*N)/(1<<30), b.IdlePowerW(), r.BenchmarkMs, N, median(r.TimesMs), 8*float64(N)/median(r.TimesMs)/1e6)
}
