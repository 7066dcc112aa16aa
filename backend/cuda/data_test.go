package cuda

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

func TestElementSizes(t *testing.T) {
	want := map[string]int{
		"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
		"int64": 8, "uint64": 8,
		"half": 2, "half2": 4, "half4": 8, "half8": 16, "half16": 32,
		"float": 4, "float2": 8, "float4": 16, "float8": 32, "float16": 64,
		"double": 8, "double2": 16, "double4": 32, "double8": 64, "double16": 128,
	}
	if len(elemTypes) != len(want) {
		t.Fatalf("%d types known, want %d", len(elemTypes), len(want))
	}
	for name, size := range want {
		et, err := lookupType("x", name)
		if err != nil {
			t.Fatal(err)
		}
		if et.Size() != size {
			t.Errorf("sizeof(%s) = %d, want %d", name, et.Size(), size)
		}
	}
	_, err := lookupType("weights", "custom")
	if err == nil || !strings.HasPrefix(err.Error(), `argument "weights": type "custom" has no fixed layout (one of bool, double, double16,`) {
		t.Fatalf("custom: %v", err)
	}
}

func TestPackScalar(t *testing.T) {
	cases := []struct {
		typ  string
		v    float64
		want []byte
	}{
		{"int32", -1, []byte{0xff, 0xff, 0xff, 0xff}},
		{"int32", 7.9, []byte{7, 0, 0, 0}}, // C truncation toward zero
		{"uint8", 300, []byte{44}},         // wraps to the width
		{"int16", -2, []byte{0xfe, 0xff}},
		{"uint16", 513, []byte{1, 2}},
		{"int64", 1 << 40, []byte{0, 0, 0, 0, 0, 1, 0, 0}},
		{"uint64", 1 << 63, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}},
		{"bool", 2, []byte{1}},
		{"bool", 0, []byte{0}},
		{"float", 1.5, []byte{0, 0, 0xc0, 0x3f}},
		{"double", -2, []byte{0, 0, 0, 0, 0, 0, 0, 0xc0}},
		{"half", 1, []byte{0x00, 0x3c}},
		{"half2", -2, []byte{0x00, 0xc0, 0x00, 0xc0}},
		{"float2", 1.5, []byte{0, 0, 0xc0, 0x3f, 0, 0, 0xc0, 0x3f}},
	}
	for _, c := range cases {
		et, _ := lookupType("s", c.typ)
		if got := packScalar(et, c.v); !bytes.Equal(got, c.want) {
			t.Errorf("packScalar(%s, %g) = % x, want % x", c.typ, c.v, got, c.want)
		}
	}
}

func TestHalfConversion(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0x0000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff},
		{65536, 0x7c00},                 // overflow to +Inf
		{float32(math.Inf(-1)), 0xfc00}, // -Inf
		{5.960464477539063e-08, 0x0001}, // smallest subnormal 2^-24
		{6.103515625e-05, 0x0400},       // smallest normal 2^-14
		{2049, 0x6800},                  // tie between 2048 and 2050 rounds to even (2048)
		{2051, 0x6802},                  // tie between 2050 and 2052 rounds to even (2052)
		{1e-9, 0x0000},                  // underflow to zero
	}
	for _, c := range cases {
		if got := float32ToHalf(c.f); got != c.h {
			t.Errorf("float32ToHalf(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	// Every finite half survives half -> float32 -> half.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN payloads are canonicalised
		}
		if got := float32ToHalf(halfToFloat32(uint16(h))); got != uint16(h) {
			t.Fatalf("round trip of %#04x gave %#04x", h, got)
		}
	}
	if !math.IsNaN(float64(halfToFloat32(float32ToHalf(float32(math.NaN()))))) {
		t.Fatal("NaN did not stay NaN")
	}
}

func TestRandomFillDeterministic(t *testing.T) {
	et, _ := lookupType("a", "float")
	f := backend.Fill{Type: "Random", Value: 10, Seed: 7}
	n := 3*fillChunk + 123
	a := make([]byte, n*4)
	if err := fillBytes(a, et, f, 0); err != nil {
		t.Fatal(err)
	}
	// The stream is PCG(seed, chunk) from math/rand/v2, documented so
	// that other tools can regenerate the inputs.
	r := rand.New(rand.NewPCG(7, 0))
	if got, want := math.Float32frombits(binary.LittleEndian.Uint32(a)), float32(r.Float64()*10); got != want {
		t.Fatalf("first value %g, want %g", got, want)
	}
	r = rand.New(rand.NewPCG(7, 2))
	if got, want := math.Float32frombits(binary.LittleEndian.Uint32(a[2*fillChunk*4:])), float32(r.Float64()*10); got != want {
		t.Fatalf("first value of chunk 2 %g, want %g", got, want)
	}
	// Chunk-aligned pieces and the parallel fill give the same bytes.
	b := make([]byte, len(a))
	if err := fillBytes(b[:fillChunk*4], et, f, 0); err != nil {
		t.Fatal(err)
	}
	if err := fillBytes(b[fillChunk*4:], et, f, fillChunk); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("piecewise fill differs")
	}
	c := make([]byte, len(a))
	if err := fillParallel(c, et, f, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, c) {
		t.Fatal("parallel fill differs")
	}
	if err := fillBytes(c[4:], et, f, 1); err == nil {
		t.Fatal("a random fill off a chunk boundary must be refused")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		v := getComp(a[4*i:], et)
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo < 0 || hi >= 10 || hi < 9.9 || lo > 0.1 {
		t.Fatalf("values span [%g, %g], want within [0, 10) and near both ends", lo, hi)
	}
	// Another seed, other bytes.
	f.Seed = 8
	if err := fillBytes(c, et, f, 0); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 gave the same data")
	}
	// Integers truncate U[0, Value).
	it, _ := lookupType("i", "int32")
	ib := make([]byte, 4*1000)
	if err := fillBytes(ib, it, backend.Fill{Type: "Random", Value: 4, Seed: 1}, 0); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]int{}
	for i := 0; i < 1000; i++ {
		seen[int32(binary.LittleEndian.Uint32(ib[4*i:]))]++
	}
	if len(seen) != 4 || seen[0] == 0 || seen[3] == 0 {
		t.Fatalf("int32 U[0,4) gave %v", seen)
	}
}

func TestConstantAndRawFill(t *testing.T) {
	et, _ := lookupType("a", "int16")
	b := make([]byte, 6)
	if err := content(b, et, backend.Fill{Type: "Constant", Value: -3}, 0, 3, "a"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, []byte{0xfd, 0xff, 0xfd, 0xff, 0xfd, 0xff}) {
		t.Fatalf("constant fill = % x", b)
	}
	path := filepath.Join(t.TempDir(), "a.bin")
	raw := []byte{1, 0, 2, 0, 3, 0, 4, 0}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 4)
	if err := content(part, et, backend.Fill{Type: "BinaryRaw", File: path}, 4, 4, "a"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, []byte{3, 0, 4, 0}) {
		t.Fatalf("raw read at offset 4 = % x", part)
	}
	err := content(part, et, backend.Fill{Type: "BinaryRaw", File: path}, 0, 3, "a")
	if err == nil || err.Error() != `argument "a": BinaryRaw file `+path+` holds 8 bytes, want 6` {
		t.Fatalf("size mismatch: %v", err)
	}
	err = content(part, et, backend.Fill{Type: "Script"}, 0, 2, "a")
	if err == nil || err.Error() != `argument "a": fill type "Script" is not supported (Constant, Random, BinaryRaw)` {
		t.Fatalf("unsupported fill: %v", err)
	}
}

func floats(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestCompare(t *testing.T) {
	ft, _ := lookupType("c", "float")
	want := floats(1, 2, 3, 4)
	got := floats(1, 2.25, 3, 3.5)

	c, err := compare(MethodSideBySide, 0.5, ft, got, want)
	if err != nil || !c.OK || c.Error != 0.5 || c.Worst != 3 || c.Got != 3.5 || c.Want != 4 {
		t.Fatalf("side by side at 0.5: %+v %v", c, err)
	}
	c, _ = compare(MethodSideBySide, 0.4, ft, got, want)
	if c.OK || c.Error != 0.5 {
		t.Fatalf("side by side at 0.4: %+v", c)
	}
	// KTT's AbsoluteDifference: the sum of |got-want|.
	c, _ = compare(MethodAbsoluteDifference, 0.7, ft, got, want)
	if c.OK || c.Error != 0.75 || c.Worst != 3 {
		t.Fatalf("absolute difference: %+v", c)
	}
	c, _ = compare(MethodAbsoluteDifference, 0.75, ft, got, want)
	if !c.OK {
		t.Fatalf("absolute difference at 0.75: %+v", c)
	}
	// Relative: 0.25/2 = 0.125 at 1, 0.5/4 = 0.125 at 3; the first wins ties.
	c, _ = compare(MethodSideBySideRelative, 0.125, ft, got, want)
	if !c.OK || c.Error != 0.125 || c.Worst != 1 {
		t.Fatalf("relative: %+v", c)
	}
	c, _ = compare(MethodSideBySideRelative, 0.1, ft, got, want)
	if c.OK {
		t.Fatalf("relative at 0.1 passed: %+v", c)
	}
	// Reference zero: the denominator is 1e-30, so any difference fails.
	c, _ = compare(MethodSideBySideRelative, 1, ft, floats(1e-20), floats(0))
	if c.OK || math.Abs(c.Error-1e10)/1e10 > 1e-6 {
		t.Fatalf("relative vs zero: %+v", c)
	}
	// NaN fails whatever the threshold and method.
	nan := float32(math.NaN())
	for _, m := range []string{MethodSideBySide, MethodAbsoluteDifference, MethodSideBySideRelative} {
		c, _ = compare(m, math.Inf(1), ft, floats(1, nan, 3, 4), want)
		if c.OK || c.NaNIndex != 1 {
			t.Fatalf("%s with NaN: %+v", m, c)
		}
	}
	// NaN expected and NaN produced agree; equal infinities agree.
	inf := float32(math.Inf(1))
	c, _ = compare(MethodSideBySide, 0, ft, floats(nan, inf), floats(nan, inf))
	if !c.OK || c.Error != 0 {
		t.Fatalf("NaN/Inf agreement: %+v", c)
	}
	// Vector types compare per component.
	f2, _ := lookupType("v", "float2")
	c, _ = compare(MethodSideBySide, 0, f2, floats(1, 2, 3, 5), floats(1, 2, 3, 4))
	if c.OK || c.Worst != 3 || where(c.Worst, f2) != "element 1 lane 1" {
		t.Fatalf("float2: %+v (%s)", c, where(c.Worst, f2))
	}
	// Integers and halves.
	it, _ := lookupType("i", "int32")
	c, _ = compare(MethodSideBySide, 0, it, []byte{5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, []byte{5, 0, 0, 0, 1, 0, 0, 0})
	if c.OK || c.Error != 2 || c.Got != -1 || c.Want != 1 {
		t.Fatalf("int32: %+v", c)
	}
	ht, _ := lookupType("h", "half")
	c, _ = compare(MethodSideBySide, 0, ht, []byte{0x00, 0x3c}, []byte{0x00, 0x40})
	if c.OK || c.Error != 1 {
		t.Fatalf("half: %+v", c)
	}
	if _, err := compare("Closeness", 1, ft, want, want); err == nil || !strings.Contains(err.Error(), `"Closeness" is not one of`) {
		t.Fatalf("unknown method: %v", err)
	}
	if _, err := compare(MethodSideBySide, 1, ft, want, want[:4]); err == nil || err.Error() != "output holds 16 bytes, reference 4" {
		t.Fatalf("length mismatch: %v", err)
	}
}

// Outputs larger than one compare piece: the parallel result is the one
// a single pass gives, wherever the worst element and the NaN lie.
func TestCompareAcrossPieces(t *testing.T) {
	ft, _ := lookupType("c", "float")
	n := 3*comparePiece + 17
	want := make([]byte, 4*n)
	if err := fillBytes(want, ft, backend.Fill{Type: "Random", Value: 10, Seed: 5}, 0); err != nil {
		t.Fatal(err)
	}
	got := append([]byte(nil), want...)
	set := func(i int, v float32) { binary.LittleEndian.PutUint32(got[4*i:], math.Float32bits(v)) }
	base := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:])) }
	set(5, base(5)+0.5)
	set(2*comparePiece+3, base(2*comparePiece+3)+2)
	set(3*comparePiece+16, base(3*comparePiece+16)-2) // tie: the earlier index stays
	c, _ := compare(MethodSideBySide, 1, ft, got, want)
	if c.OK || c.Error != float64(base(2*comparePiece+3)+2)-float64(base(2*comparePiece+3)) || c.Worst != 2*comparePiece+3 {
		t.Fatalf("worst across pieces: %+v", c)
	}
	c, _ = compare(MethodAbsoluteDifference, 10, ft, got, want)
	if !c.OK || math.Abs(c.Error-4.5) > 1e-5 {
		t.Fatalf("sum across pieces: %+v", c)
	}
	set(comparePiece+1, float32(math.NaN()))
	set(3*comparePiece+1, float32(math.NaN()))
	c, _ = compare(MethodSideBySide, math.Inf(1), ft, got, want)
	if c.OK || c.NaNIndex != comparePiece+1 {
		t.Fatalf("first NaN across pieces: %+v", c)
	}
	et, _ := lookupType("c", "int16")
	b := make([]byte, 2*fillChunk+2)
	if err := fillBytes(b, et, backend.Fill{Type: "Constant", Value: 513}, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += 2 {
		if b[i] != 1 || b[i+1] != 2 {
			t.Fatalf("constant fill wrong at byte %d: % x", i, b[i:i+2])
		}
	}
}

// TestConstantWord: where constantWord gives a word, the word repeated is
// byte for byte what the host fill writes; where it gives none, the fill
// is not a repeated word.
func TestConstantWord(t *testing.T) {
	cases := []struct {
		typ   string
		value float64
		ok    bool
	}{
		{"float", 0, true}, {"float", 1.5, true}, {"float4", -2, true},
		{"double", 0, true}, {"double", 1, false}, {"int64", 0, true}, {"int64", 7, false},
		{"int32", 123456, true}, {"uint8", 3, true}, {"bool", 1, true},
		{"half", 0, true}, {"half", 1, false}, {"int16", 0x0101, true},
	}
	for _, c := range cases {
		typ, err := lookupType("a", c.typ)
		if err != nil {
			t.Fatal(err)
		}
		f := backend.Fill{Type: "Constant", Value: c.value}
		bytes := int64(64 * typ.Size())
		word, ok := constantWord(typ, f, bytes)
		if ok != c.ok {
			t.Errorf("%s %g: ok %v, want %v", c.typ, c.value, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		want := make([]byte, bytes)
		if err := fillBytes(want, typ, f, 0); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, bytes)
		for i := 0; i < len(got); i += 4 {
			binary.LittleEndian.PutUint32(got[i:], word)
		}
		if !bytesEqual(got, want) {
			t.Errorf("%s %g: word %#x lays out %x, the fill %x", c.typ, c.value, word, got[:16], want[:16])
		}
	}
	if _, ok := constantWord(mustType(t, "float"), backend.Fill{Type: "Random"}, 64); ok {
		t.Error("a random fill has no constant word")
	}
	if _, ok := constantWord(mustType(t, "uint8"), backend.Fill{Type: "Constant", Value: 1}, 3); ok {
		t.Error("a buffer of 3 bytes is not whole words")
	}
}

func mustType(t *testing.T, name string) elemType {
	typ, err := lookupType("a", name)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
