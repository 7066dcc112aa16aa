package cuda

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/library"
)

// TestCompileRoutine: a library routine compiles without NVRTC into an
// image of format formatLibrary holding the routine and its options.
func TestCompileRoutine(t *testing.T) {
	b, err := Compile(context.Background(), CompileRequest{Language: "cuBLAS", KernelName: "cublasDgemm",
		Defines: []backend.Define{{Name: library.MathModeParam, Value: "pedantic"}}})
	if err != nil {
		t.Fatal(err)
	}
	format, name, payload, err := decodeImage(b.Image)
	if err != nil || format != formatLibrary || name != "cublasDgemm" || string(payload) != `{"math_mode":2}` || b.PTX != nil {
		t.Fatalf("image: format %d, %q, %q, %v", format, name, payload, err)
	}
	_, err = Compile(context.Background(), CompileRequest{Language: "cuBLAS", KernelName: "cublasDgemm",
		Defines: []backend.Define{{Name: library.MathModeParam, Value: "fast"}}})
	var ce *backend.CompileError
	if !errors.As(err, &ce) || ce.Log != `tunable parameter cublas_math_mode is "fast"; its values are default, pedantic` {
		t.Fatalf("a math mode cuBLAS lacks: %v", err)
	}
}

// TestCuBLASCandidates: libcublas is searched where the toolkit puts it,
// newest major version first, and GTUNE_LIBCUBLAS alone when set.
func TestCuBLASCandidates(t *testing.T) {
	lib := fakeToolkit(t, EnvLibCuBLAS, "libcublas.so.12.9.1.4", "libcublas.so.13", "libcublas.so.13.1.0.3")
	got := cublasLibrary.candidates()
	want := []string{
		filepath.Join(lib, "libcublas.so"),
		filepath.Join(lib, "libcublas.so.13.1.0.3"),
		filepath.Join(lib, "libcublas.so.13"),
		filepath.Join(lib, "libcublas.so.12.9.1.4"),
		"/usr/local/cuda/lib64/libcublas.so",
	}
	if len(got) < len(want) || !reflect.DeepEqual(got[:len(want)], want) {
		t.Fatalf("candidates start %q, want %q", got, want)
	}
	if i := indexOf(got, "libcublas.so"); i < 0 || got[i+1] != "libcublas.so.13" {
		t.Fatalf("loader names missing: %q", got)
	}
	t.Setenv(EnvLibCuBLAS, "/x/libcublas.so.13")
	if got := cublasLibrary.candidates(); !reflect.DeepEqual(got, []string{"/x/libcublas.so.13"}) {
		t.Fatalf("override: %q", got)
	}
}

// TestRoutinesAvailable: a problem of a cuBLAS routine on a host whose
// libcublas does not load is refused before the run, naming the kernel
// and where it was looked for; a problem of compiled kernels is not
// checked.
func TestRoutinesAvailable(t *testing.T) {
	t.Setenv(EnvLibCuBLAS, "/nonexistent/libcublas.so.13")
	err := RoutinesAvailable(backend.Single(backend.Kernel{KernelName: "cublasDgemm", Language: "cuBLAS"}))
	if err == nil || err.Error() != "kernel cublasDgemm is a cuBLAS routine: cuda: libcublas not found (searched /nonexistent/libcublas.so.13; set GTUNE_LIBCUBLAS)" {
		t.Fatalf("no libcublas: %v", err)
	}
	if err := RoutinesAvailable(backend.Single(backend.Kernel{KernelName: "vector_add", Language: "CUDA"})); err != nil {
		t.Fatalf("a compiled kernel: %v", err)
	}
}

// TestIntegrationCuBLAS runs cublasDgemm through the backend as a
// kernel: C (256×128) = A^T·B with A stored 64×256 and every element of
// A 0.5, of B 0.25, so every element of C is 64·0.125 = 8 exactly;
// energy measured; then a plan of two routines on two streams; then an
// argument list short of the routine's sizes, refused before any call.
func TestIntegrationCuBLAS(t *testing.T) {
	ctx, b := openGPU(t)
	const m, n, k = 256, 128, 64
	i32 := func(name string, v float64) backend.Arg {
		return backend.Arg{Name: name, Type: "int32", Kind: backend.ArgScalar, Scalar: v}
	}
	f64 := func(name string, v float64) backend.Arg {
		return backend.Arg{Name: name, Type: "double", Kind: backend.ArgScalar, Scalar: v}
	}
	buf := func(name string, count int64, fill float64, out bool) backend.Arg {
		return backend.Arg{Name: name, Type: "double", Kind: backend.ArgVector, Count: count, Fill: backend.Fill{Type: "Constant", Value: fill}, Output: out}
	}
	args := []backend.Arg{i32("transa", 1), i32("transb", 0), i32("m", m), i32("n", n), i32("k", k), f64("alpha", 1),
		buf("A", k*m, 0.5, false), i32("lda", k), buf("B", k*n, 0.25, false), i32("ldb", k), f64("beta", 0),
		buf("C", m*n, -1, true), i32("ldc", m)}
	kernel := backend.Kernel{KernelName: "cublasDgemm", Language: "cuBLAS", Args: args,
		Verification: &backend.Verification{Method: MethodAbsoluteDifference, Threshold: 0, Expected: map[string]backend.Fill{"C": {Type: "Constant", Value: 8}}}}
	if err := b.Prepare(ctx, backend.Single(kernel)); err != nil {
		t.Fatal(err)
	}
	job := &tjob{Job: &backend.Job{Key: "default", Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, Iterations: 10, Verify: true,
		Energy: true, EnergyWindow: 300 * time.Millisecond, Timeout: 30 * time.Second}
	bin, err := b.Compile(ctx, job.Job)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runJob(ctx, b, job, bin)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != backend.StatusValid || r.MaxError != 0 || len(r.TimesMs) != 10 || r.Energy == nil || r.Energy.EnergyPerLaunchJ <= 0 {
		t.Fatalf("cublasDgemm: %+v (reason %q)", r.Result, r.Reason)
	}
	t.Logf("cublasDgemm %d×%d×%d: %.4f ms, %.3g J a call at %.0f W", m, n, k, r.TimesMs[0], r.Energy.EnergyPerLaunchJ, r.Energy.MeanPowerW)

	// Two calls on two streams, the second in pedantic mode.
	ped := &backend.Job{Key: "pedantic", Defines: []backend.Define{{Name: library.MathModeParam, Value: "pedantic"}}, Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}
	pbin, err := b.Compile(ctx, ped)
	if err != nil {
		t.Fatal(err)
	}
	two := &backend.Plan{Key: "two", Launches: []backend.Launch{{Job: job.Job, Binary: bin}, {Job: ped, Binary: pbin, Stream: 1}},
		Measure: job.Plan(bin).Measure, Timeout: 30 * time.Second}
	two.Measure.Energy = false
	res, err := b.Run(ctx, two)
	if err != nil || res.Status != backend.StatusValid || len(res.Launches) != 2 || len(res.Launches[1].TimesMs) != 10 {
		t.Fatalf("two streams: %+v, %v", res, err)
	}

	// lda below the rows of A as stored: refused at load.
	args[7].Scalar = k - 1
	kernel.Args = args
	if err := b.Prepare(ctx, backend.Single(kernel)); err != nil {
		t.Fatal(err)
	}
	res, err = b.Run(ctx, job.Plan(bin))
	if err != nil || res.Status != backend.StatusLaunchFailed || !res.ArgumentMismatch {
		t.Fatalf("short lda: %+v, %v", res, err)
	}
	t.Logf("short lda: %s", res.Reason)
}
