// Package library describes the vendor library routines gtune measures as
// it measures kernels: a spec whose KernelSpecification.Language is
// "cuBLAS" names a routine (KernelName "cublasDgemm") in place of a
// __global__ function, and its Arguments are the routine's parameters
// after the library handle, in the routine's order. The routine then goes
// through the same seam as a compiled kernel — spec → Job → Compile (the
// routine resolved, its options fixed) → Plan → measure.Run (time, energy,
// verification) → store — so a library routine is the reference point a
// tuned kernel is judged against on the same GPU, in the same database
// (autotuning-gemm-energy-beast.md section 3.1 draws cuBLAS beside the
// BEAST kernels).
//
// This package is what needs no GPU: the routines' signatures, the checks
// of an argument list against them (sizes included: a routine reads its
// matrices through leading dimensions, never past what the spec
// allocated), and the routines' own tunable parameters. backend/cuda
// loads libcublas through purego and calls the routine.
package library

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gtune/gtune/backend"
)

// CuBLAS is the Language of a spec whose kernel is a cuBLAS routine
// (compared without regard to case).
const CuBLAS = "cuBLAS"

// Is reports whether a spec's Language names a library rather than a
// compiled kernel language.
func Is(language string) bool { return strings.EqualFold(language, CuBLAS) }

// MathModeParam is the tunable parameter that sets a cuBLAS routine's
// math mode (cublasSetMathMode) for a configuration: "default"
// (CUBLAS_DEFAULT_MATH: tensor cores where the result keeps the routine's
// precision, the FP64 DMMA of Ampere and Hopper for DGEMM) or "pedantic"
// (CUBLAS_PEDANTIC_MATH: the prescribed precision and standard
// arithmetic in every phase).
const MathModeParam = "cublas_math_mode"

// MathModes maps MathModeParam's values to cublasMath_t.
var MathModes = map[string]int32{"default": 0, "pedantic": 2}

// Param is one parameter of a routine after its handle.
type Param struct {
	Name string
	Kind backend.ArgKind
	// Type is the T1 type the argument must have: "int32" for an int,
	// the element type for a matrix and for alpha and beta (host
	// pointers to one element, written as Scalar arguments).
	Type string
}

// Routine is a library routine gtune can call.
type Routine struct {
	Name   string  // the routine as the spec names it (KernelName): "cublasDgemm"
	Symbol string  // the C symbol: "cublasDgemm_v2"
	Elem   string  // element type: "double", "float"
	Params []Param // after the handle, in order
}

// gemmParams are xGEMM's parameters after the handle (cuBLAS's
// cublas<t>gemm): C = alpha·op(A)·op(B) + beta·C, column-major, op(A)
// m×k, op(B) k×n, C m×n.
func gemmParams(elem string) []Param {
	i := func(n string) Param { return Param{n, backend.ArgScalar, "int32"} }
	s := func(n string) Param { return Param{n, backend.ArgScalar, elem} }
	v := func(n string) Param { return Param{n, backend.ArgVector, elem} }
	return []Param{i("transa"), i("transb"), i("m"), i("n"), i("k"), s("alpha"), v("A"), i("lda"), v("B"), i("ldb"), s("beta"), v("C"), i("ldc")}
}

var routines = []Routine{
	{Name: "cublasDgemm", Symbol: "cublasDgemm_v2", Elem: "double", Params: gemmParams("double")},
	{Name: "cublasSgemm", Symbol: "cublasSgemm_v2", Elem: "float", Params: gemmParams("float")},
}

// Lookup finds the routine a spec names. Errors: an unknown name, naming
// the routines there are.
func Lookup(name string) (*Routine, error) {
	for i := range routines {
		if routines[i].Name == name {
			return &routines[i], nil
		}
	}
	return nil, fmt.Errorf("%q is not a routine gtune can call (cuBLAS: %s)", name, strings.Join(Names(), ", "))
}

// Names are the routines gtune can call, in a fixed order.
func Names() []string {
	var out []string
	for _, r := range routines {
		out = append(out, r.Name)
	}
	return out
}

// Signature is the routine's parameter list as a C declaration reads, for
// messages: "transa int32, transb int32, m int32, ...".
func (r *Routine) Signature() string {
	var b strings.Builder
	for i, p := range r.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		t := p.Type
		if p.Kind == backend.ArgVector {
			t += "*"
		}
		fmt.Fprintf(&b, "%s %s", t, p.Name)
	}
	return b.String()
}

// Gemm is a checked xGEMM call: the operations, sizes and leading
// dimensions read from the scalar arguments, and where alpha, A, B, beta
// and C are in the argument list.
type Gemm struct {
	TransA, TransB int32 // cublasOperation_t: 0 N, 1 T, 2 C
	M, N, K        int32
	LDA, LDB, LDC  int32
	// Alpha, A, B, Beta and C are indices into the argument list: Alpha
	// and Beta of the scalars (host pointers to one element at the
	// call), A, B and C of the buffers.
	Alpha, A, B, Beta, C int
}

// Flops is the routine's floating-point operations per call: 2·m·n·k
// (an FMA is two).
func (g Gemm) Flops() float64 { return 2 * float64(g.M) * float64(g.N) * float64(g.K) }

// CheckGemm checks args against the xGEMM routine r: the count, each
// argument's kind and type, the operations (0, 1 or 2), the sizes (m, n,
// k ≥ 0), the leading dimensions (lda ≥ max(1, rows of A as stored), the
// same for B and C) and that every buffer holds the matrix its leading
// dimension describes, so that the routine reads and writes nothing the
// spec did not allocate. Errors name the argument and what is wrong, in
// one sentence.
func (r *Routine) CheckGemm(args []backend.Arg) (Gemm, error) {
	var g Gemm
	if len(args) != len(r.Params) {
		return g, fmt.Errorf("%s takes %d arguments after its handle (%s); the spec gives %d", r.Name, len(r.Params), r.Signature(), len(args))
	}
	for i, p := range r.Params {
		a := args[i]
		if a.Kind != p.Kind || a.Type != p.Type {
			want := "a Scalar of type " + p.Type
			if p.Kind == backend.ArgVector {
				want = "a Vector of type " + p.Type
			}
			return g, fmt.Errorf("%s: argument %d (%s) must be %s, the routine's %s; the spec gives a %s of type %s", r.Name, i, a.Name, want, p.Name, kindName(a.Kind), a.Type)
		}
	}
	val := func(i int) (int32, error) {
		v := args[i].Scalar
		if v != float64(int32(v)) {
			return 0, fmt.Errorf("%s: argument %d (%s, the routine's %s) is %v, not a 32-bit integer", r.Name, i, args[i].Name, r.Params[i].Name, v)
		}
		return int32(v), nil
	}
	ints := []*int32{&g.TransA, &g.TransB, &g.M, &g.N, &g.K}
	for i, p := range ints {
		v, err := val(i)
		if err != nil {
			return g, err
		}
		*p = v
	}
	var err error
	if g.LDA, err = val(7); err != nil {
		return g, err
	}
	if g.LDB, err = val(9); err != nil {
		return g, err
	}
	if g.LDC, err = val(12); err != nil {
		return g, err
	}
	g.Alpha, g.A, g.B, g.Beta, g.C = 5, 6, 8, 10, 11
	for i, t := range []int32{g.TransA, g.TransB} {
		if t < 0 || t > 2 {
			return g, fmt.Errorf("%s: argument %d (%s) is %d: an operation is 0 (N), 1 (T) or 2 (C)", r.Name, i, args[i].Name, t)
		}
	}
	for i, v := range []int32{g.M, g.N, g.K} {
		if v < 0 {
			return g, fmt.Errorf("%s: argument %d (%s, the routine's %s) is %d: a size is not negative", r.Name, 2+i, args[2+i].Name, r.Params[2+i].Name, v)
		}
	}
	// Rows and columns of each matrix as stored (column-major).
	rowsA, colsA := g.M, g.K
	if g.TransA != 0 {
		rowsA, colsA = g.K, g.M
	}
	rowsB, colsB := g.K, g.N
	if g.TransB != 0 {
		rowsB, colsB = g.N, g.K
	}
	for _, m := range []struct {
		buf, ldArg   int
		ld           int32
		rows, cols   int32
		what, ldName string
	}{
		{g.A, 7, g.LDA, rowsA, colsA, "A", "lda"},
		{g.B, 9, g.LDB, rowsB, colsB, "B", "ldb"},
		{g.C, 12, g.LDC, g.M, g.N, "C", "ldc"},
	} {
		if m.ld < max(1, m.rows) {
			return g, fmt.Errorf("%s: argument %d (%s, the routine's %s) is %d: %s is stored with %d rows, so it must be at least %d", r.Name, m.ldArg, args[m.ldArg].Name, m.ldName, m.ld, m.what, m.rows, max(1, m.rows))
		}
		if m.cols == 0 || m.rows == 0 {
			continue
		}
		need := int64(m.ld)*int64(m.cols-1) + int64(m.rows)
		if args[m.buf].Count < need {
			return g, fmt.Errorf("%s: argument %d (%s, the routine's %s) holds %d elements; a %d×%d matrix with leading dimension %d needs %d", r.Name, m.buf, args[m.buf].Name, m.what, args[m.buf].Count, m.rows, m.cols, m.ld, need)
		}
	}
	return g, nil
}

func kindName(k backend.ArgKind) string {
	if k == backend.ArgVector {
		return "Vector"
	}
	return "Scalar"
}

// Options are a configuration's choices of a routine's tunable
// parameters.
type Options struct {
	MathMode int32 `json:"math_mode"` // cublasMath_t (MathModes)
}

// OptionsOf reads a configuration's routine options from its defines
// (backend.Job.Defines: every tunable parameter, by name); a parameter
// left out keeps the library's default. Errors: a value MathModes does
// not hold.
func OptionsOf(defines []backend.Define) (Options, error) {
	var o Options
	for _, d := range defines {
		if d.Name != MathModeParam {
			continue
		}
		v := strings.Trim(d.Value, `"'`)
		m, ok := MathModes[v]
		if !ok {
			return o, fmt.Errorf("tunable parameter %s is %q; its values are %s", MathModeParam, d.Value, strings.Join(MathModeNames(), ", "))
		}
		o.MathMode = m
	}
	return o, nil
}

// MathModeNames are MathModes' values, sorted.
func MathModeNames() []string {
	var out []string
	for k := range MathModes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TunableParameters are the names a library spec may tune besides the
// GPU settings (backend.ParamCoreClock ...).
func TunableParameters() []string { return []string{MathModeParam} }
