package spec

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kernel that cannot compile is refused at load, before any GPU (or
// simulated GPU) work, naming the file and what is wrong.
func TestCheckSource(t *testing.T) {
	random := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.IntN(256))
	}
	for _, c := range []struct{ name, kernel, want string }{
		{"empty", "", "KernelSpecification.KernelFile: k.cu holds no code"},
		{"comments only", "// nothing\n/* here */\n", "KernelSpecification.KernelFile: k.cu holds no code"},
		{"binary", string(random), "KernelSpecification.KernelFile: k.cu is not text: byte "},
		{"other name", "__global__ void kern(float *a, int n) {}", "KernelSpecification.KernelName: k: no function of that name in k.cu or the local files it includes"},
		{"name in a comment only", "// k(\n__global__ void kern(float *a, int n) {}", "KernelSpecification.KernelName: k: no function of that name"},
		{"unclosed brace", "__global__ void k(float *a, int n) {\n  a[0] = n;\n", "k.cu:1: '{' is never closed (the kernel cannot compile)"},
		{"stray paren", "__global__ void k(float *a, int n) {\n  a[0] = n);\n}", "k.cu:2: unmatched ')' (the kernel cannot compile)"},
	} {
		_, err := Load(ktSpec(t, c.kernel, ""))
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
	// Latin-1 in a comment compiles with NVRTC: a warning only.
	s, err := Load(ktSpec(t, "__global__ void k(float *a, int n) { /* caf\xe9 */ }", ""))
	if err != nil || len(s.Warnings) != 1 || s.Warnings[0] != "KernelSpecification.KernelFile: k.cu is not valid UTF-8 (another encoding, or binary data)" {
		t.Errorf("Latin-1: %v, warnings %q", err, s.Warnings)
	}
	// Accepted: braces in strings and comments, a conditional block per
	// branch, a templated or namespaced name, a macro-made kernel.
	for _, k := range []string{
		"__global__ void k(float *a, int n) { const char *s = \"}{\"; char c = '{'; /* } */ }",
		"__global__ void k(float *a, int n) {\n#if X\n for (;;) {\n#else\n for (;;) {\n#endif\n }\n}",
		"template <int B> __global__ void k(float *a, int n) {}",
		"#define K(name) __global__ void name##_k(float *a, int n) {}\nK(k)",
	} {
		if _, err := Load(ktSpec(t, k, "")); err != nil {
			t.Errorf("%q refused: %v", k, err)
		}
	}
}

// A kernel in a header included in angle brackets from an include folder
// is found there; a system header cannot hold it.
func TestKernelInAngleInclude(t *testing.T) {
	p := ktSpec(t, "#include <mine/k.cuh>\n", `, "Gtune": {"Constants": {"unused": 1}}`)
	dir := filepath.Dir(p)
	os.MkdirAll(filepath.Join(dir, "inc", "mine"), 0o755)
	os.WriteFile(filepath.Join(dir, "inc", "mine", "k.cuh"), []byte("__global__ void k(float *a, int n) {}\n"), 0o644)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), `"KernelFile": "k.cu",`, `"KernelFile": "k.cu", "CompilerOptions": ["-Iinc"],`, 1)), 0o644)
	if _, err := Load(p); err != nil {
		t.Fatalf("kernel in <mine/k.cuh>: %v", err)
	}
	_, err := Load(ktSpec(t, "#include <cuda_fp16.h>\n__global__ void other(float *a, int n) {}\n", ""))
	if err == nil || !strings.Contains(err.Error(), "KernelSpecification.KernelName: k: no function of that name") {
		t.Fatalf("kernel missing beside a system header: %v", err)
	}
}
