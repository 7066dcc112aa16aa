package spec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLibrarySpec loads the cuBLAS DGEMM example: a routine in place of
// a kernel, its arguments checked against the routine's, its own tunable
// parameter passed to the configuration's job.
func TestLibrarySpec(t *testing.T) {
	s, err := Load("../examples/dgemm/cublas.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Routine() == nil || s.Routine().Symbol != "cublasDgemm_v2" || s.Source != "" || s.KernelFile != "" {
		t.Fatalf("routine %+v, source %d bytes, kernel file %q", s.Routine(), len(s.Source), s.KernelFile)
	}
	p, _ := s.Problem()
	if k := p.Kernels[0]; k.Language != "cuBLAS" || k.KernelName != "cublasDgemm" || len(k.Args) != 13 || k.Args[6].Count != 4096*4096 {
		t.Fatalf("kernel %+v", k)
	}
	sp, err := s.BuildSpace()
	if err != nil || sp.Len() != 2 {
		t.Fatalf("space: %v", err)
	}
	j, err := s.Job(sp.Values(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Defines) != 1 || j.Defines[0].Name != "cublas_math_mode" || j.Defines[0].Value != "pedantic" || j.Work == nil ||
		j.Work.FP64TensorFlops != 2*4096*4096*4096 || j.Work.FP64Flops != 0 || j.Work.Efficiency != 0.75 {
		t.Fatalf("job %+v", j)
	}
	ref, ok, _ := s.ReferenceConfig()
	if !ok || ref[0].Str() != "pedantic" {
		t.Fatalf("reference %v", ref)
	}
}

// TestLibrarySpecErrors: what a library spec gets wrong is bad input at
// load, naming the field.
func TestLibrarySpecErrors(t *testing.T) {
	data, err := os.ReadFile("../examples/dgemm/cublas.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		edit  func(m map[string]any)
		field string
		msg   string
	}{
		{"a kernel file", func(m map[string]any) { obj(m, "KernelSpecification").(map[string]any)["KernelFile"] = "kernel.cu" },
			"KernelSpecification.KernelFile", "kernel.cu: a cuBLAS routine has no kernel source; remove KernelFile (KernelName names the routine)"},
		{"an unknown routine", func(m map[string]any) { obj(m, "KernelSpecification").(map[string]any)["KernelName"] = "cublasDgemv" },
			"KernelSpecification.KernelName", `"cublasDgemv" is not a routine gtune can call (cuBLAS: cublasDgemm, cublasSgemm)`},
		{"a tunable parameter the routine lacks", func(m map[string]any) {
			param(m, 0)["Name"] = "block_size_x"
			delete(obj(m, "Gtune").(map[string]any), "Reference")
		},
			"ConfigurationSpace.TuningParameters[0] (block_size_x)", "a cuBLAS routine has no tunable parameter block_size_x (its own: cublas_math_mode; the GPU's: nvml_gr_clock, nvml_mem_clock, nvml_pwr_limit)"},
		{"a math mode cuBLAS lacks", func(m map[string]any) { param(m, 0)["Values"] = "['default', 'tf32']" },
			"ConfigurationSpace.TuningParameters[0] (cublas_math_mode)", `'tf32' is not a math mode (the values are strings: "default", "pedantic")`},
		{"lda short of m", func(m map[string]any) {
			obj(m, "KernelSpecification", "Arguments", 7).(map[string]any)["FillValue"] = 4000
		},
			"KernelSpecification.Arguments", "cublasDgemm: argument 7 (lda, the routine's lda) is 4000: A is stored with 4096 rows, so it must be at least 4096"},
		{"compiler options", func(m map[string]any) {
			obj(m, "KernelSpecification").(map[string]any)["CompilerOptions"] = []any{"-O3"}
		},
			"KernelSpecification.CompilerOptions", "a cuBLAS routine is not compiled; remove them"},
	} {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		c.edit(m)
		out, _ := json.Marshal(m)
		p := filepath.Join(t.TempDir(), "cublas.json")
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		var se *Error
		if !errors.As(err, &se) || se.Field != c.field || se.Msg != c.msg {
			t.Errorf("%s: got %v\nwant %s: %s", c.name, err, c.field, c.msg)
		}
	}
}
