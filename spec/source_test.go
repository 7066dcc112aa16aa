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

// Brackets in a kernel with conditional directives are checked along the
// first and the last branch of each #if: unbalanced along both is
// refused, along one a warning, directives that do not pair a warning
// that the brackets were not checked.
func TestBracketsWithConditionals(t *testing.T) {
	for _, c := range []struct{ name, kernel, err, warning, checked string }{
		{"balanced in both", "__global__ void k(float *a, int n) {\n#if X\n for (;;) {\n#elif Y\n while (1) {\n#else\n {\n#endif\n }\n}", "", "", "brackets (along the first and the last branch of each #if)"},
		{"nested", "__global__ void k(float *a, int n) {\n#ifdef A\n#if B\n {\n#else\n {\n#endif\n }\n#endif\n}", "", "", "brackets (along the first and the last branch of each #if)"},
		{"broken everywhere", "__global__ void k(float *a, int n) {\n#ifdef A\n a[0] = 1;\n#endif\n a[1] = (n;\n}", "k.cu:6: unmatched '}' along both the first and the last branch of each #if (the kernel cannot compile)", "", ""},
		{"one branch broken", "__global__ void k(float *a, int n) {\n#if A\n a[0] = (n;\n#else\n a[0] = n;\n#endif\n}", "", "k.cu:7: unmatched '}' along the first branch of each #if: the configurations that take it cannot compile", "brackets (along the first and the last branch of each #if)"},
		{"no else opens a block", "__global__ void k(float *a, int n) {\n#ifdef A\n if (n) {\n#endif\n a[0] = n;\n}", "", "k.cu:1: '{' is never closed along the first branch of each #if: the configurations that take it cannot compile", "brackets (along the first and the last branch of each #if)"},
		{"unpaired", "__global__ void k(float *a, int n) {\n#if A\n a[0] = n;\n}", "", "k.cu: brackets not checked: its #if, #elif, #else and #endif do not pair", ""},
	} {
		s, err := Load(ktSpec(t, c.kernel, ""))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v\nwant %s", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if w := strings.Join(s.Warnings, "|"); w != c.warning || s.BracketsChecked != c.checked {
			t.Errorf("%s: warnings %q, checked %q; want %q, %q", c.name, w, s.BracketsChecked, c.warning, c.checked)
		}
	}
	first, last, ok := BracketPaths("a\n#if X\nb\n#elif Y\nc\n#else\nd\n#endif\ne")
	if !ok || first != "a\n\nb\n\n\n\n\n\ne" || last != "a\n\n\n\n\n\nd\n\ne" {
		t.Errorf("BracketPaths: %q, %q, %v", first, last, ok)
	}
}

// LaunchBounds reads the qualifier of the spec's kernel as written,
// with a second argument and brackets inside; a kernel without one, or
// another kernel's qualifier, gives "".
func TestLaunchBounds(t *testing.T) {
	for _, c := range []struct{ src, kernel, want string }{
		{"extern \"C\" __global__ void __launch_bounds__(dim_m * dim_n)\ndgemm_beast(double *C) {}", "dgemm_beast", "dim_m * dim_n"},
		{"__global__ void __launch_bounds__(block_size_x * block_size_y, 2048 / (block_size_x * block_size_y)) lud(float *m) {}", "lud",
			"block_size_x * block_size_y, 2048 / (block_size_x * block_size_y)"},
		{"__global__ void __launch_bounds__(256) other(float *a) {}\n__global__ void kern(float *a) {}", "kern", ""},
		{"__global__ void kern(float *a) {}", "kern", ""},
		{"__global__ void __launch_bounds__( 128,\n  4 ) kern2 (float *a) {}", "kern2", "128, 4"},
	} {
		s := &Spec{Source: c.src}
		s.KernelName = c.kernel
		if got := s.LaunchBounds(); got != c.want {
			t.Errorf("%s: %q, want %q", c.kernel, got, c.want)
		}
	}
	s, err := Load(filepath.Join("..", "examples", "rodinia", "lud", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.LaunchBounds(); got != "block_size_x * block_size_y, 2048 / (block_size_x * block_size_y)" {
		t.Errorf("examples/rodinia/lud: %q", got)
	}
}
