package spec

// Kernel Tuner compatibility. The T1 files of the auto-tuning community
// (benchmark_hub's among them) are written for Kernel Tuner 1.4, and a
// kernel written for Kernel Tuner relies on how it builds a kernel
// instance (kernel_tuner/util.py, prepare_kernel_string) and derives the
// grid (get_grid_dimensions). gtune follows those rules so that the same
// file gives the same kernel and the same launch in both tools:
//
//   - the compiler sees every tunable parameter, grid_size_x/y/z, the
//     thread block under its block-size names and kernel_tuner=1 (a kernel's
//     "#ifndef kernel_tuner" defaults are then skipped);
//   - a parameter whose name contains "loop_unroll_factor" is, in CUDA,
//     "constexpr int NAME = v;" placed before the source, and 0 removes the
//     "#pragma unroll NAME" lines (a pragma needs a positive constant);
//   - with ProblemSize the grid is ceil(ProblemSize_d / D_d), D_d the product
//     of the GridDiv_d expressions, or without them the value of the
//     dimension's block-size parameter (1 when that name is no parameter).
//
// Gtune.KernelTunerDefines: false turns the first two off (plain -D for
// every parameter, nothing else defined).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
)

// defaultBlockNames are Kernel Tuner's default block_size_names.
var defaultBlockNames = [3]string{"block_size_x", "block_size_y", "block_size_z"}

// blockName is the name Kernel Tuner would give the thread block's
// dimension d: the LocalSize expression when it is a bare name (gemm's
// MDIMC), else the default (block_size_x, ...).
func blockName(src string, d int) string {
	src = strings.TrimSpace(src)
	if validName(src) {
		return src
	}
	return defaultBlockNames[d]
}

// unrollParam tells Kernel Tuner's loop-unroll parameters apart.
func unrollParam(name string) bool { return strings.Contains(name, "loop_unroll_factor") }

// kernelInstance adds Kernel Tuner's defines to j and, when loop-unroll
// parameters need it, the configuration's own source (j.Source). cfg is
// in parameter order; j.Grid and j.Block are set.
func (s *Spec) kernelInstance(j *backend.Job, cfg []expr.Value) {
	if !s.ktDefines {
		return
	}
	var defs []backend.Define
	grid := [3]string{"grid_size_x", "grid_size_y", "grid_size_z"}
	for d := range 3 {
		if _, isParam := s.paramIndex[grid[d]]; !isParam {
			defs = append(defs, backend.Define{Name: grid[d], Value: fmt.Sprint(j.Grid[d])})
		}
	}
	for d := range 3 {
		n := s.blockNames[d]
		if _, isParam := s.paramIndex[n]; !isParam && !slices.ContainsFunc(defs, func(x backend.Define) bool { return x.Name == n }) {
			defs = append(defs, backend.Define{Name: n, Value: fmt.Sprint(j.Block[d])})
		}
	}
	var prefix strings.Builder
	src := s.Source
	for _, def := range j.Defines {
		if !unrollParam(def.Name) {
			defs = append(defs, def)
			continue
		}
		if def.Value == "0" {
			src = s.unrollRE[def.Name].ReplaceAllString(src, "\n")
			continue
		}
		fmt.Fprintf(&prefix, "constexpr int %s = %s;\n", def.Name, def.Value)
	}
	if _, isParam := s.paramIndex["kernel_tuner"]; !isParam {
		defs = append(defs, backend.Define{Name: "kernel_tuner", Value: "1"})
	}
	j.Defines = defs
	if s.Source == "" {
		return // loaded without its source: nothing will compile it
	}
	if prefix.Len() > 0 || src != s.Source {
		// #line 1 keeps the compiler's line numbers those of the file.
		if prefix.Len() > 0 {
			prefix.WriteString("#line 1\n")
		}
		j.Source = prefix.String() + src
	}
}

// includeOptions resolves relative include paths of the compiler options
// against the spec's directory (NVRTC would resolve them against the
// working directory of whoever runs gtune) and adds the kernel file's
// directory, so that a kernel's own #include "x.h" is found as nvcc
// finds it.
func (l *loader) includeOptions(opts []string) []string {
	out := make([]string, 0, len(opts)+1)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(l.s.Dir, p)
	}
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		switch {
		case (o == "-I" || o == "--include-path") && i+1 < len(opts):
			out = append(out, o, abs(opts[i+1]))
			i++
		case strings.HasPrefix(o, "--include-path="):
			out = append(out, "--include-path="+abs(strings.TrimPrefix(o, "--include-path=")))
		case strings.HasPrefix(o, "-I"):
			out = append(out, "-I"+abs(strings.TrimPrefix(o, "-I")))
		default:
			out = append(out, o)
		}
	}
	return append(out, "-I"+filepath.Dir(l.s.KernelFile))
}

// otherLanguages are kernel-file suffixes of languages gtune does not
// compile, with the language's name.
var otherLanguages = []struct{ suffix, lang string }{
	{".hip", "HIP"}, {".cl", "OpenCL"}, {".opencl", "OpenCL"}, {".comp", "Vulkan GLSL"}, {".spv", "SPIR-V"},
}

// checkLanguage refuses kernels gtune cannot compile before any GPU work:
// a Language other than CUDA, or a KernelFile in another language. A file
// whose CUDA variant sits beside it (x.cu for x.cu.hip) is named in the
// message, since pointing KernelFile at it is the usual fix.
func (l *loader) checkLanguage() error {
	ks := &l.s.Raw.KernelSpecification
	for _, o := range otherLanguages {
		if !strings.HasSuffix(strings.ToLower(ks.KernelFile), o.suffix) {
			continue
		}
		hint := "gtune compiles CUDA with NVRTC; point KernelFile at the kernel's CUDA source"
		if v := cudaVariant(l.s.KernelFile, o.suffix); v != "" {
			rel, err := filepath.Rel(l.s.Dir, v)
			if err != nil {
				rel = v
			}
			hint = fmt.Sprintf("gtune compiles CUDA with NVRTC; its CUDA variant %s is beside it: point KernelFile there", rel)
		} else if o.lang == "OpenCL" {
			hint += " (OpenCL kernels compile as CUDA through a header that maps OpenCL's keywords, such as CLTune's cl_to_cuda.h, included from a .cu file)"
		}
		return l.errf("KernelSpecification.KernelFile", "%s is %s source; %s", ks.KernelFile, o.lang, hint)
	}
	switch strings.ToUpper(ks.Language) {
	case "", "CUDA":
		return nil
	}
	return l.errf("KernelSpecification.Language", "%q: gtune compiles CUDA only (an OpenCL kernel can be compiled as CUDA through a header that maps OpenCL's keywords, such as CLTune's cl_to_cuda.h, included from a .cu file; then set Language to CUDA)", ks.Language)
}

// cudaVariant finds the CUDA source beside a file of another language:
// x.cu for x.cu.hip, x.cu for x.hip; "" when there is none.
func cudaVariant(path, suffix string) string {
	base := path[:len(path)-len(suffix)]
	for _, c := range []string{base, base + ".cu"} {
		if strings.HasSuffix(c, ".cu") {
			if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
				return c
			}
		}
	}
	return ""
}

// quote quotes an expression for a message, shortened (expr.Excerpt) so
// that a long expression never fills the terminal.
func quote(src string) string { return fmt.Sprintf("%q", expr.Excerpt(src)) }

// AddCompilerOptions appends options to the kernel's compiler options (gtune
// tune --compiler-option), after the spec's, where the compiler honours
// the last of conflicting ones, and folds them into Hash: results compiled
// with other options are never reused as if they were these.
func (s *Spec) AddCompilerOptions(opts ...string) {
	if len(opts) == 0 {
		return
	}
	s.CompilerOptions = append(s.CompilerOptions, opts...)
	h := sha256.New()
	h.Write([]byte(s.Hash))
	for _, o := range opts {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	s.Hash = hex.EncodeToString(h.Sum(nil))
}
