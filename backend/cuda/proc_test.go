package cuda

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/workerproc"
	"github.com/gtune/gtune/measure"
)

func TestCUDACandidates(t *testing.T) {
	t.Setenv(EnvLibCUDA, "")
	want := []string{
		"libcuda.so.1",
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"/usr/lib64/libcuda.so.1",
		"/usr/local/nvidia/lib64/libcuda.so.1",
		"/usr/lib/aarch64-linux-gnu/libcuda.so.1",
		"/usr/lib/wsl/lib/libcuda.so.1",
	}
	if got := cudaCandidates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("cudaCandidates = %q", got)
	}
	t.Setenv(EnvLibCUDA, "/nonexistent/libcuda.so.1")
	_, _, err := openLibrary("cuda", "libcuda.so.1", EnvLibCUDA, cudaCandidates())
	if err == nil || err.Error() != "cuda: libcuda.so.1 not found (searched /nonexistent/libcuda.so.1; set GTUNE_LIBCUDA)" {
		t.Fatalf("missing libcuda: %v", err)
	}
}

// fakeToolkit makes CUDA_HOME a toolkit whose lib64 holds empty files of
// the names given (env, the library's override, unset) and returns lib64.
func fakeToolkit(t *testing.T, env string, names ...string) string {
	t.Helper()
	home := t.TempDir()
	lib := filepath.Join(home, "lib64")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range names {
		if err := os.WriteFile(filepath.Join(lib, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(env, "")
	t.Setenv("CUDA_HOME", home)
	t.Setenv("CUDA_PATH", "")
	return lib
}

func TestNVRTCCandidates(t *testing.T) {
	lib := fakeToolkit(t, EnvLibNVRTC, "libnvrtc.so.12.4.99", "libnvrtc.so.13", "libnvrtc.so.13.0.48", "libnvrtc.so.11.2")
	got := nvrtcCandidates()
	want := []string{
		filepath.Join(lib, "libnvrtc.so"),
		filepath.Join(lib, "libnvrtc.so.13.0.48"),
		filepath.Join(lib, "libnvrtc.so.13"),
		filepath.Join(lib, "libnvrtc.so.12.4.99"),
		filepath.Join(lib, "libnvrtc.so.11.2"),
		"/usr/local/cuda/lib64/libnvrtc.so",
	}
	if len(got) < len(want) || !reflect.DeepEqual(got[:len(want)], want) {
		t.Fatalf("nvrtcCandidates starts %q, want %q", got, want)
	}
	i := indexOf(got, "libnvrtc.so")
	if i < 0 || got[i+1] != "libnvrtc.so.13" || got[i+2] != "libnvrtc.so.12" || got[i+3] != "libnvrtc.so.11.2" {
		t.Fatalf("loader names missing or out of order: %q", got)
	}
	for _, c := range got {
		if strings.Contains(c, "stubs") {
			t.Fatalf("stubs searched: %s", c)
		}
	}
	t.Setenv(EnvLibNVRTC, "/x/libnvrtc.so.13")
	if got := nvrtcCandidates(); !reflect.DeepEqual(got, []string{"/x/libnvrtc.so.13"}) {
		t.Fatalf("override: %q", got)
	}
	_, _, err := openLibrary("cuda", "libnvrtc", EnvLibNVRTC, nvrtcCandidates())
	if err == nil || err.Error() != "cuda: libnvrtc not found (searched /x/libnvrtc.so.13; set GTUNE_LIBNVRTC)" {
		t.Fatalf("missing nvrtc: %v", err)
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// A real library lacking the driver's symbols is refused by the name of
// the first required one.
func TestMissingSymbol(t *testing.T) {
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
			break
		}
	}
	if libc == "" {
		t.Skip("no libc.so.6 at a known path")
	}
	h, path, err := openLibrary("cuda", "libcuda.so.1", EnvLibCUDA, []string{libc})
	if err != nil {
		t.Fatal(err)
	}
	var getpid func() int32
	var cuInit func(uint32) cuResult
	_, err = bind("cuda", path, h, []sym{{[]string{"getpid"}, &getpid, true}, {[]string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &cuInit, true}})
	if err == nil || err.Error() != "cuda: symbol cuEventElapsedTime_v2 or cuEventElapsedTime not found in "+libc+" (library too old or not the right library)" {
		t.Fatalf("missing symbol: %v", err)
	}
	if getpid() != int32(os.Getpid()) {
		t.Fatal("bound getpid returned the wrong pid")
	}
}

func TestTargetArch(t *testing.T) {
	list := []int{75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121}
	cases := []struct {
		cc    int
		list  []int
		arch  string
		cubin bool
	}{
		{90, list, "sm_90", true},
		{89, list, "sm_89", true},
		{130, list, "compute_121", false}, // newer GPU than this NVRTC: PTX for the driver to finish
		{95, list, "compute_90", false},
		{90, nil, "sm_90", true},
		{50, list, "sm_50", true}, // older than anything listed: let NVRTC say no
	}
	for _, c := range cases {
		arch, cubin := targetArch(c.cc, c.list)
		if arch != c.arch || cubin != c.cubin {
			t.Errorf("targetArch(%d) = %s %v, want %s %v", c.cc, arch, cubin, c.arch, c.cubin)
		}
	}
	got := compileOptions("sm_90", []backend.Define{{Name: "block_size_x", Value: "128"}, {Name: "TILE", Value: "4"}}, []string{"-std=c++17", "--use_fast_math"})
	want := []string{"--gpu-architecture=sm_90", "-Dblock_size_x=128", "-DTILE=4", "-std=c++17", "--use_fast_math"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("compileOptions = %q", got)
	}
}

func TestImageHeader(t *testing.T) {
	img := encodeImage(formatCUBIN, "_Z5scaleIfEvPT_", []byte{0x7f, 'E', 'L', 'F', 0})
	if string(img[:8]) != "GTUNECU1" || len(img) != 8+3+15+5 {
		t.Fatalf("image = %q", img)
	}
	f, name, payload, err := decodeImage(img)
	if err != nil || f != formatCUBIN || name != "_Z5scaleIfEvPT_" || string(payload) != "\x7fELF\x00" {
		t.Fatalf("decode = %d %q %q %v", f, name, payload, err)
	}
	if _, _, _, err := decodeImage([]byte("\x7fELF....")); err == nil || err.Error() != "binary image was not produced by cuda.Compile (no GTUNECU1 header)" {
		t.Fatalf("foreign image: %v", err)
	}
	if _, _, _, err := decodeImage(img[:12]); err == nil || err.Error() != "binary image header is truncated" {
		t.Fatalf("truncated image: %v", err)
	}
}

func TestProtocolRoundTrip(t *testing.T) {
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r1.Close(); w1.Close(); r2.Close(); w2.Close() }()
	parent := workerproc.NewConn(r2, w1)
	child := workerproc.NewConn(r1, w2)
	req := request{
		Op: opRun,
		Problem: &backend.Problem{Kernels: []backend.Kernel{{
			KernelName: "vector_add", Source: "extern \"C\" __global__ void vector_add(){}", SourceName: "v.cu", Language: "CUDA",
			CompilerOptions: []string{"-std=c++17"},
			Args: []backend.Arg{
				{Name: "c", Type: "float", Kind: backend.ArgVector, Count: 1 << 30, Fill: backend.Fill{Type: "Constant"}, Output: true},
				{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: 1 << 30},
				{Name: "k", Type: "half4", Kind: backend.ArgVector, Count: 4, Fill: backend.Fill{Type: "Random", Value: 2, Seed: -5}, Constant: true},
			},
			Verification: &backend.Verification{Method: MethodSideBySideRelative, Threshold: 1e-6,
				Expected: map[string]backend.Fill{"c": {Type: "BinaryRaw", File: "/tmp/c.bin"}}, Reference: true},
		}}},
		Plan: &backend.Plan{Key: "128,4|64", Launches: []backend.Launch{
			{Job: &backend.Job{Key: "128,4", Defines: []backend.Define{{Name: "block_size_x", Value: "128"}}, Grid: [3]int{8, 1, 1}, Block: [3]int{128, 1, 1},
				DynamicSharedBytes: 64 << 10, Work: &backend.Work{Flops: 1e9, Registers: 32}},
				Binary: &backend.Binary{Image: encodeImage(formatPTX, "vector_add", []byte(".version 8.0\x00")), Log: "warning: x", CompileMs: 51.25}},
			{Job: &backend.Job{Kernel: 1, Key: "64", Grid: [3]int{2, 1, 1}, Block: [3]int{64, 1, 1}}, Binary: &backend.Binary{Image: []byte{1}}, Stream: 1},
		},
			Settings: &backend.Settings{CoreClockMHz: 1410},
			Measure: measure.Request{Iterations: 7, Energy: true, EnergyWindow: 1500 * time.Millisecond, Verify: true, SaveReference: true,
				Trials: &measure.Protocol{MaxTrials: 5, Warmup: true}, StateKey: "1410/0/0", Observers: []string{"power-samples"}},
			Timeout: 2 * time.Second},
	}
	rep := reply{
		Device: &backend.DeviceInfo{Backend: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeMajor: 9, SMs: 132, MemoryBytes: 85e9, PowerLimitW: 700, HasEnergyCounter: true},
		Result: &backend.Result{Status: backend.StatusValid, Launches: []backend.LaunchResult{{Registers: 16, TimesMs: []float64{0.2, 0.21}}}, TimesMs: []float64{0.25, 0.26},
			Observations: measure.Observations{{Name: "energy", Unit: "J", Value: 0.075, Method: "nvml-energy-counter", Launch: measure.PlanScope},
				{Name: "time", Unit: "ms", Value: 0.2, Method: "cuda-events", Launch: 0}}, MaxError: 1e-7},
		Err: "", Fatal: true, IdlePowerW: 71.5,
	}
	done := make(chan error, 1)
	go func() {
		var got request
		if err := child.Dec.Decode(&got); err != nil {
			done <- err
			return
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("request changed in transit:\n got %+v\nwant %+v", got, req)
		}
		done <- child.Enc.Encode(&rep)
	}()
	if err := parent.Enc.Encode(&req); err != nil {
		t.Fatal(err)
	}
	var got reply
	if err := parent.Dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rep) {
		t.Fatalf("reply changed in transit:\n got %+v\nwant %+v", got, rep)
	}
}

// Open starts a real worker (this test binary, through TestMain) and
// reports its failure to load libcuda in the worker's own words.
func TestOpenReportsWorkerError(t *testing.T) {
	var stderr strings.Builder
	_, err := Open(context.Background(), 0, Options{Env: []string{EnvLibCUDA + "=/nonexistent/libcuda.so.1"}, Stderr: &stderr, StartTimeout: 30 * time.Second})
	want := "cuda: worker for device 0: cuda: libcuda.so.1 not found (searched /nonexistent/libcuda.so.1; set GTUNE_LIBCUDA)"
	if err == nil || err.Error() != want {
		t.Fatalf("Open: %v\nwant %s", err, want)
	}
	if !strings.Contains(stderr.String(), "exiting after fatal error: cuda: libcuda.so.1 not found") {
		t.Fatalf("worker stderr = %q", stderr.String())
	}
}

func TestOpenMissingExecutable(t *testing.T) {
	_, err := Open(context.Background(), 0, Options{Executable: "/nonexistent/gtune"})
	if err == nil || !strings.HasPrefix(err.Error(), "cuda: starting worker /nonexistent/gtune: ") {
		t.Fatalf("Open: %v", err)
	}
}
