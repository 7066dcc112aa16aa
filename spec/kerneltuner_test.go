package spec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// The grids Kernel Tuner 1.4 launches these files with, worked out by hand
// from get_grid_dimensions: ceil(ProblemSize_d / product(GridDiv_d)), with
// no GridDiv the block-size parameter of the dimension (1 when the name is
// no parameter). GlobalSize is never read.
func TestPublishedT1GridsAsKernelTuner(t *testing.T) {
	for _, c := range []struct {
		spec  string
		cfg   []any
		grid  [3]int
		block [3]int
	}{
		// convolution: GridDivX [block_size_x, tile_size_x], GridDivY
		// [block_size_y, tile_size_y], ProblemSize 4096×4096.
		{"convolution_milo", []any{16, 1, 1, 1, 0, 0, 0, 1, 15, 15}, [3]int{256, 4096, 1}, [3]int{16, 1, 1}},
		{"convolution_milo", []any{256, 4, 4, 2, 1, 0, 1, 1, 15, 15}, [3]int{4, 512, 1}, [3]int{256, 4, 1}},
		// 4096 / (48*3) = 28.4 → 29; 4096 / (2*3) = 682.7 → 683.
		{"convolution_milo", []any{48, 2, 3, 3, 1, 1, 1, 1, 15, 15}, [3]int{29, 683, 1}, [3]int{48, 2, 1}},
		// hotspot: the same divisors; 4096 / (32*2) = 64, 4096 / (4*3) = 341.3 → 342.
		{"hotspot_milo", []any{4096, 4096, 32, 4, 2, 3, 1, 10, 1, 0}, [3]int{64, 342, 1}, [3]int{32, 4, 1}},
		{"hotspot_milo", []any{4096, 4096, 1, 32, 10, 1, 4, 10, 2, 1}, [3]int{410, 128, 1}, [3]int{1, 32, 1}},
		// dedispersion: GridDivX [block_size_x, tile_size_x] as published
		// (the tuning script gives none), ProblemSize 25000×2048×1;
		// z: block_size_z is a parameter (1).
		{"dedispersion_milo", []any{16, 64, 1, 4, 8, 1, 1, 0}, [3]int{391, 4, 1}, [3]int{16, 64, 1}},
	} {
		s := mustLoad(t, hubSpec(t, c.spec))
		j, err := s.Job(vals(c.cfg...))
		if err != nil {
			t.Fatalf("%s %v: %v", c.spec, c.cfg, err)
		}
		if j.Grid != c.grid || j.Block != c.block {
			t.Errorf("%s %v: grid %v block %v, want grid %v block %v", c.spec, c.cfg, j.Grid, j.Block, c.grid, c.block)
		}
		if defineOf(j, "kernel_tuner") != "1" || defineOf(j, "grid_size_x") == "" {
			t.Errorf("%s: Kernel Tuner's defines missing: %v", c.spec, j.Defines)
		}
	}
}

// A MemType Constant argument stays in the kernel's parameter list at its
// declared position (convolution_kernel(float *output, float *input,
// float *filter)); the backend also copies it to the __constant__ symbol.
func TestPublishedConvolutionConstantArgument(t *testing.T) {
	s := mustLoad(t, hubSpec(t, "convolution_milo"))
	p, err := s.Problem()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels[0].Args) != 3 {
		t.Fatalf("%d arguments, want 3", len(p.Kernels[0].Args))
	}
	for i, want := range []struct {
		name     string
		constant bool
	}{{"output_image", false}, {"input_image", false}, {"d_filter", true}} {
		a := p.Kernels[0].Args[i]
		if a.Name != want.name || a.Constant != want.constant || a.Kind != backend.ArgVector {
			t.Errorf("argument %d: %+v, want %s constant=%v vector", i, a, want.name, want.constant)
		}
	}
	if p.Kernels[0].Args[2].Count != 225 {
		t.Errorf("d_filter has %d elements, want 15*15", p.Kernels[0].Args[2].Count)
	}
}

// With ProblemSize the file's GlobalSize is not used, and CheckJobs says so
// when the two disagree (convolution's GlobalSize asks for 64 times the
// blocks).
func TestGlobalSizeNotUsedWarning(t *testing.T) {
	s := mustLoad(t, hubSpec(t, "convolution_milo"))
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckJobs(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "KernelSpecification.GlobalSize is not used") ||
		!strings.Contains(s.Warnings[0], "256×4096×1 thread blocks for the first configuration") ||
		!strings.Contains(s.Warnings[0], "GlobalSizeType CUDA would give 16384×262144×1") {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// ktSpec writes a spec and kernel source into a temp dir; the spec has
// parameters bx (32, 64), loop_unroll_factor_t (0, 2) and the given edits.
func ktSpec(t *testing.T, kernel string, extra string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k.cu"), []byte(kernel), 0o644)
	spec := `{
  "ConfigurationSpace": {"TuningParameters": [
    {"Name": "bx", "Type": "int", "Values": "[32, 64]"},
    {"Name": "loop_unroll_factor_t", "Type": "int", "Values": "[0, 2]"}]},
  "KernelSpecification": {"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu",
    "LocalSize": {"X": "bx"}, "GlobalSize": {"X": "1"}, "ProblemSize": [1000],
    "Arguments": [{"Name": "a", "Type": "float", "MemoryType": "Vector", "Size": 1000},
                  {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1000}]}` + extra + `}`
	p := filepath.Join(dir, "spec.json")
	os.WriteFile(p, []byte(spec), 0o644)
	return p
}

const unrollKernel = `__global__ void k(float *a, int n) {
    #pragma unroll loop_unroll_factor_t
    for (int i = 0; i < 4; i++) a[i] += n;
}
`

// Kernel Tuner's loop-unroll rule: 0 removes "#pragma unroll NAME", any
// other value becomes "constexpr int NAME = v;" before the source.
func TestLoopUnrollFactorAsKernelTuner(t *testing.T) {
	s, err := Load(ktSpec(t, unrollKernel, ""))
	if err != nil {
		t.Fatal(err)
	}
	j0, err := s.Job(vals(32, 0))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(j0.Source, "#pragma unroll loop_unroll_factor_t") || !strings.Contains(j0.Source, "for (int i = 0") ||
		defineOf(j0, "loop_unroll_factor_t") != "" {
		t.Errorf("factor 0: source %q defines %v", j0.Source, j0.Defines)
	}
	j2, err := s.Job(vals(64, 2))
	if err != nil {
		t.Fatal(err)
	}
	if j2.Source != "constexpr int loop_unroll_factor_t = 2;\n#line 1\n"+unrollKernel || defineOf(j2, "loop_unroll_factor_t") != "" {
		t.Errorf("factor 2: source %q defines %v", j2.Source, j2.Defines)
	}
	// No GridDiv: the divisor is bx, the parameter LocalSize.X names.
	if j2.Grid != [3]int{16, 1, 1} || defineOf(j2, "bx") != "64" || defineOf(j2, "grid_size_x") != "16" || defineOf(j2, "block_size_y") != "1" {
		t.Errorf("grid %v defines %v", j2.Grid, j2.Defines)
	}
	// Opting out: plain -D for every parameter, nothing else.
	off, err := Load(ktSpec(t, unrollKernel, `, "Gtune": {"KernelTunerDefines": false}`))
	if err != nil {
		t.Fatal(err)
	}
	jo, err := off.Job(vals(64, 2))
	if err != nil {
		t.Fatal(err)
	}
	if jo.Source != "" || len(jo.Defines) != 2 || defineOf(jo, "loop_unroll_factor_t") != "2" || defineOf(jo, "kernel_tuner") != "" {
		t.Errorf("opted out: source %q defines %v", jo.Source, jo.Defines)
	}
}

// A LocalSize that is an expression has Kernel Tuner's default block-size
// name, which is no parameter here: the default divisor is 1.
func TestDefaultGridDivisorWithoutBlockParameter(t *testing.T) {
	p := ktSpec(t, unrollKernel, "")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), `"LocalSize": {"X": "bx"}`, `"LocalSize": {"X": "2*bx"}`, 1)), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Job(vals(32, 2))
	if err != nil {
		t.Fatal(err)
	}
	if j.Grid != [3]int{1000, 1, 1} || j.Block != [3]int{64, 1, 1} || defineOf(j, "block_size_x") != "64" {
		t.Errorf("grid %v block %v defines %v", j.Grid, j.Block, j.Defines)
	}
}

func TestSignatureChecks(t *testing.T) {
	for _, c := range []struct {
		name, kernel, field, msg string
	}{
		{"count", "__global__ void k(float *a) {}", "KernelSpecification.Arguments",
			"lists 2 arguments, but k in k.cu takes 1 parameters (float *a)"},
		{"vector for a scalar", "__global__ void k(float a, int n) {}", "KernelSpecification.Arguments[0] (a).MemoryType",
			`is a Vector (passed as a device pointer), but parameter 1 of k is "float a"`},
		{"buffer type", "extern \"C\" __global__ void\nk(const unsigned char * __restrict__ a, int n) {}", "KernelSpecification.Arguments[0] (a).Type",
			`is float, but parameter 1 of k is "const unsigned char * __restrict__ a": the kernel would read the buffer as another type`},
		{"scalar type", "__global__ void k(float *a, double n) {}", "KernelSpecification.Arguments[1] (n).Type",
			`is int32, but parameter 2 of k is "double n": the kernel would read the value as another type`},
	} {
		_, err := Load(ktSpec(t, c.kernel, ""))
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field || se.Msg != c.msg {
			t.Errorf("%s: got %v\nwant %s: %s", c.name, err, c.field, c.msg)
		}
	}
	// What the source cannot settle is left to the driver: a typedef, a
	// wider vector read of the buffer, a declaration in a comment, a
	// kernel from a header.
	for _, k := range []string{
		"typedef float real;\n__global__ void k(real *a, int n) {}",
		"__global__ void k(float4 *a, unsigned int n) {}",
		"// __global__ void k(float *a) {}\n__global__ void k(float *a, int n) {}",
		"#include \"other.h\"\n",
		"#define KERNEL __global__\nKERNEL void k(float *a) {}",
	} {
		if _, err := Load(ktSpec(t, k, "")); err != nil {
			t.Errorf("%q refused: %v", k, err)
		}
	}
}

// T1 files gtune cannot compile are refused at load, naming the field.
func TestOtherLanguagesRefused(t *testing.T) {
	for _, c := range []struct {
		name, spec, file string
		files            []string
		field, msg       string
	}{
		{"dedispersion (HIP, CUDA variant beside it)", "dedispersion_milo", "dedisp_milo/dedispersion.cu.hip",
			[]string{"dedisp_milo/dedispersion.cu.hip", "dedisp_milo/dedispersion.cu"}, "KernelSpecification.KernelFile",
			"dedisp_milo/dedispersion.cu.hip is HIP source; gtune compiles CUDA with NVRTC; its CUDA variant dedisp_milo/dedispersion.cu is beside it: point KernelFile there"},
		{"gemm (OpenCL)", "gemm_milo", "gemm_milo/common.opencl", []string{"gemm_milo/common.opencl"}, "KernelSpecification.KernelFile",
			"gemm_milo/common.opencl is OpenCL source; gtune compiles CUDA with NVRTC; point KernelFile at the kernel's CUDA source (OpenCL kernels compile as CUDA through a header that maps OpenCL's keywords, such as CLTune's cl_to_cuda.h, included from a .cu file)"},
	} {
		data, err := os.ReadFile(hubSpec(t, c.spec))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, f := range c.files {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
			os.WriteFile(filepath.Join(dir, f), []byte("// stand-in\n"), 0o644)
		}
		p := filepath.Join(dir, "spec.json")
		os.WriteFile(p, data, 0o644)
		_, err = Load(p)
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field || se.Msg != c.msg {
			t.Errorf("%s: got %v\nwant %s: %s", c.name, err, c.field, c.msg)
		}
		// The parameters of such a file still load (replay, import, space).
		if _, err := LoadWith(p, LoadOptions{NoSource: true}); err != nil {
			t.Errorf("%s without source: %v", c.name, err)
		}
	}
	_, err := Load(ktSpec(t, unrollKernel, `, "General": {"BenchmarkName": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	p := ktSpec(t, unrollKernel, "")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), `"Language": "CUDA"`, `"Language": "OpenCL"`, 1)), 0o644)
	_, err = Load(p)
	var se *Error
	if !errors.As(err, &se) || se.Field != "KernelSpecification.Language" || !strings.HasPrefix(se.Msg, `"OpenCL": gtune compiles CUDA only`) {
		t.Errorf("Language OpenCL: %v", err)
	}
}

func TestIncludePathsResolveAgainstTheSpec(t *testing.T) {
	p := ktSpec(t, unrollKernel, "")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), `"Language": "CUDA",`,
		`"Language": "CUDA", "CompilerOptions": ["-std=c++11", "-Iinc", "-I", "/abs", "--include-path=../up"],`, 1)), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	want := []string{"-std=c++11", "-I" + filepath.Join(dir, "inc"), "-I", "/abs", "--include-path=" + filepath.Join(dir, "../up"), "-I" + dir}
	if strings.Join(s.CompilerOptions, " ") != strings.Join(want, " ") {
		t.Errorf("options %q, want %q", s.CompilerOptions, want)
	}
}

func TestProblemSize(t *testing.T) {
	p := ktSpec(t, unrollKernel, `, "Gtune": {"Constants": {"N": 500}}`)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), `"ProblemSize": [1000]`, `"ProblemSize": ["2*N", 3]`, 1)), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Job(vals(32, 2))
	if err != nil {
		t.Fatal(err)
	}
	// ceil(1000/32) = 32; y: LocalSize.Y is 1, block_size_y no parameter: 3/1.
	if j.Grid != [3]int{32, 3, 1} {
		t.Errorf("grid %v", j.Grid)
	}
	// Over a tunable parameter, as Kernel Tuner's problem_size="num_blocks":
	// per configuration; ceil(bx*10 / bx) = 10 blocks, and with
	// GridDivX [] (grid_div_x=[]) the grid is the problem size itself.
	os.WriteFile(p, []byte(strings.Replace(string(data), `"ProblemSize": [1000]`, `"ProblemSize": ["bx * 10"]`, 1)), 0o644)
	if s, err = Load(p); err != nil {
		t.Fatal(err)
	}
	for _, bx := range []int{32, 64} {
		if j, err := s.Job(vals(bx, 2)); err != nil || j.Grid != [3]int{10, 1, 1} {
			t.Errorf("ProblemSize bx*10, bx %d: grid %v, %v", bx, j.Grid, err)
		}
	}
	os.WriteFile(p, []byte(strings.Replace(string(data), `"ProblemSize": [1000]`, `"ProblemSize": ["bx"], "GridDivX": []`, 1)), 0o644)
	if s, err = Load(p); err != nil {
		t.Fatal(err)
	}
	if j, err := s.Job(vals(64, 2)); err != nil || j.Grid != [3]int{64, 1, 1} {
		t.Errorf("ProblemSize bx, GridDivX []: grid %v, %v", j.Grid, err)
	}
	os.WriteFile(p, []byte(strings.Replace(string(data), `"ProblemSize": [1000]`, `"ProblemSize": ["by * 10"]`, 1)), 0o644)
	_, err = Load(p)
	var se *Error
	if !errors.As(err, &se) || se.Field != "KernelSpecification.ProblemSize[0]" ||
		se.Msg != `reads unknown name "by" (ProblemSize may read Gtune.Constants and tunable parameters only)` {
		t.Errorf("ProblemSize over an unknown name: %v", err)
	}
}

// Expressions that depend on a configuration fail before any GPU work,
// as spec errors naming the field and the configuration.
func TestCheckJobs(t *testing.T) {
	for _, c := range []struct {
		name, extra, field, msg string
	}{
		{"simulation", `, "Gtune": {"Simulation": {"Flops": "1000 // (bx - 32)", "Bytes": "4000"}}`, "Gtune.Simulation.Flops",
			`for configuration {bx=32, loop_unroll_factor_t=0}: "1000 // (bx - 32)": ZeroDivisionError: integer division or modulo by zero`},
		{"metric type", `, "Gtune": {"Metrics": {"bad": "time + 'x'"}}`, "Gtune.Metrics[0] (bad).Expression",
			`"time + 'x'": TypeError: unsupported operand type(s) for +: 'float' and 'str'`},
	} {
		s, err := Load(ktSpec(t, unrollKernel, c.extra))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sp, err := s.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		err = s.CheckJobs(context.Background(), sp)
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field || se.Msg != c.msg {
			t.Errorf("%s: got %v\nwant %s: %s", c.name, err, c.field, c.msg)
		}
	}
	// A metric that divides by an observation is no spec error: on real
	// observations it may be missing for some configurations only.
	s, err := Load(ktSpec(t, unrollKernel, `, "Gtune": {"Metrics": {"inv": "1 / (power - power)"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := s.BuildSpace()
	if err := s.CheckJobs(context.Background(), sp); err != nil {
		t.Errorf("division by an observation refused: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.CheckJobs(ctx, sp); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestAddCompilerOptionsChangesTheHash(t *testing.T) {
	s, err := Load(ktSpec(t, unrollKernel, ""))
	if err != nil {
		t.Fatal(err)
	}
	before, opts := s.Hash, len(s.CompilerOptions)
	s.AddCompilerOptions()
	if s.Hash != before {
		t.Error("no options changed the hash")
	}
	s.AddCompilerOptions("-ftz=true")
	if s.Hash == before || len(s.CompilerOptions) != opts+1 || s.CompilerOptions[opts] != "-ftz=true" {
		t.Errorf("hash %s options %q", s.Hash, s.CompilerOptions)
	}
	p, _ := s.Problem()
	if p.Kernels[0].CompilerOptions[len(p.Kernels[0].CompilerOptions)-1] != "-ftz=true" {
		t.Errorf("problem options %q", p.Kernels[0].CompilerOptions)
	}
}

// A long expression is quoted shortened, never echoed whole.
func TestLongExpressionNotEchoed(t *testing.T) {
	long := strings.Repeat("bx + ", 150) + "N"
	p := ktSpec(t, unrollKernel, "")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), `"LocalSize": {"X": "bx"}`, `"LocalSize": {"X": "`+long+`"}`, 1)), 0o644)
	_, err := Load(p)
	var se *Error
	if !errors.As(err, &se) || se.Field != "KernelSpecification.LocalSize.X" || len(err.Error()) > 300 || !strings.Contains(se.Msg, `reads "N"`) {
		t.Errorf("%d characters: %v", len(fmt.Sprint(err)), err)
	}
}
