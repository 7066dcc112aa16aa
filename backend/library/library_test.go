package library

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// gemmArgs is a DGEMM argument list: op(A) m×k, op(B) k×n, C m×n, with
// the given operations, leading dimensions and buffer sizes.
func gemmArgs(ta, tb, m, n, k, lda, ldb, ldc int, na, nb, nc int64) []backend.Arg {
	s := func(name string, v int) backend.Arg {
		return backend.Arg{Name: name, Type: "int32", Kind: backend.ArgScalar, Scalar: float64(v)}
	}
	d := func(name string, v float64) backend.Arg {
		return backend.Arg{Name: name, Type: "double", Kind: backend.ArgScalar, Scalar: v}
	}
	buf := func(name string, n int64) backend.Arg {
		return backend.Arg{Name: name, Type: "double", Kind: backend.ArgVector, Count: n}
	}
	return []backend.Arg{s("transa", ta), s("transb", tb), s("m", m), s("n", n), s("k", k), d("alpha", 1),
		buf("A", na), s("lda", lda), buf("B", nb), s("ldb", ldb), d("beta", 0), buf("C", nc), s("ldc", ldc)}
}

func TestCheckGemm(t *testing.T) {
	r, err := Lookup("cublasDgemm")
	if err != nil {
		t.Fatal(err)
	}
	// 3×2 = (3×4)(4×2), column-major, A transposed: stored 4×3.
	g, err := r.CheckGemm(gemmArgs(1, 0, 3, 2, 4, 4, 4, 3, 12, 8, 6))
	if err != nil {
		t.Fatal(err)
	}
	want := Gemm{TransA: 1, M: 3, N: 2, K: 4, LDA: 4, LDB: 4, LDC: 3, Alpha: 5, A: 6, B: 8, Beta: 10, C: 11}
	if g != want {
		t.Fatalf("CheckGemm = %+v, want %+v", g, want)
	}
	if f := g.Flops(); f != 48 {
		t.Fatalf("Flops = %v, want 2·3·2·4 = 48", f)
	}
	for _, c := range []struct {
		name string
		args []backend.Arg
		want string
	}{
		{"lda below the rows of A as stored", gemmArgs(1, 0, 3, 2, 4, 3, 4, 3, 12, 8, 6),
			"cublasDgemm: argument 7 (lda, the routine's lda) is 3: A is stored with 4 rows, so it must be at least 4"},
		{"a buffer exactly what its leading dimension needs (5·3 + 3)", gemmArgs(0, 0, 3, 2, 4, 5, 4, 3, 18, 8, 6), ""},
		{"a buffer one short of its leading dimension", gemmArgs(0, 0, 3, 2, 4, 5, 4, 3, 17, 8, 6),
			"cublasDgemm: argument 6 (A, the routine's A) holds 17 elements; a 3×4 matrix with leading dimension 5 needs 18"},
		{"C too small", gemmArgs(0, 0, 3, 2, 4, 3, 4, 3, 12, 8, 5),
			"cublasDgemm: argument 11 (C, the routine's C) holds 5 elements; a 3×2 matrix with leading dimension 3 needs 6"},
		{"an operation out of range", gemmArgs(3, 0, 3, 2, 4, 3, 4, 3, 12, 8, 6),
			"cublasDgemm: argument 0 (transa) is 3: an operation is 0 (N), 1 (T) or 2 (C)"},
		{"a negative size", gemmArgs(0, 0, 3, -2, 4, 3, 4, 3, 12, 8, 6),
			"cublasDgemm: argument 3 (n, the routine's n) is -2: a size is not negative"},
		{"one argument short", gemmArgs(0, 0, 3, 2, 4, 3, 4, 3, 12, 8, 6)[:12],
			"cublasDgemm takes 13 arguments after its handle (int32 transa, int32 transb, int32 m, int32 n, int32 k, double alpha, double* A, int32 lda, double* B, int32 ldb, double beta, double* C, int32 ldc); the spec gives 12"},
	} {
		_, err := r.CheckGemm(c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
	// A float buffer where the routine takes doubles.
	args := gemmArgs(0, 0, 3, 2, 4, 3, 4, 3, 12, 8, 6)
	args[8].Type = "float"
	if _, err := r.CheckGemm(args); err == nil || err.Error() != "cublasDgemm: argument 8 (B) must be a Vector of type double, the routine's B; the spec gives a Vector of type float" {
		t.Errorf("wrong element type: %v", err)
	}
	args = gemmArgs(0, 0, 3, 2, 4, 3, 4, 3, 12, 8, 6)
	args[2].Scalar = 3.5
	if _, err := r.CheckGemm(args); err == nil || !strings.Contains(err.Error(), "is 3.5, not a 32-bit integer") {
		t.Errorf("fractional m: %v", err)
	}
}

func TestLookupAndOptions(t *testing.T) {
	if _, err := Lookup("cublasZgemm"); err == nil || err.Error() != `"cublasZgemm" is not a routine gtune can call (cuBLAS: cublasDgemm, cublasSgemm)` {
		t.Fatalf("Lookup: %v", err)
	}
	if r, _ := Lookup("cublasSgemm"); r.Symbol != "cublasSgemm_v2" || r.Params[6].Type != "float" {
		t.Fatalf("cublasSgemm: %+v", r)
	}
	o, err := OptionsOf([]backend.Define{{Name: "block_size_x", Value: "256"}, {Name: MathModeParam, Value: "pedantic"}})
	if err != nil || o.MathMode != 2 {
		t.Fatalf("OptionsOf pedantic = %+v, %v", o, err)
	}
	if o, err := OptionsOf(nil); err != nil || o.MathMode != 0 {
		t.Fatalf("OptionsOf nothing = %+v, %v", o, err)
	}
	if _, err := OptionsOf([]backend.Define{{Name: MathModeParam, Value: "tf32"}}); err == nil || err.Error() != `tunable parameter cublas_math_mode is "tf32"; its values are default, pedantic` {
		t.Fatalf("OptionsOf tf32: %v", err)
	}
	if !Is("cublas") || !Is("cuBLAS") || Is("CUDA") {
		t.Fatal("Is")
	}
}
