package cuda

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/gtune/gtune/backend"
)

// scalarKind is how one component of an element is stored.
type scalarKind int

const (
	kBool scalarKind = iota
	kInt
	kUint
	kHalf
	kFloat
	kDouble
)

// elemType is a T1 argument type: Lanes components of CompSize bytes
// (float4 is 4 float components, 16 bytes).
type elemType struct {
	Name     string
	Kind     scalarKind
	CompSize int // bytes per component
	Lanes    int // components per element
}

// Size is the element's size in bytes, as the C type's sizeof.
func (t elemType) Size() int { return t.CompSize * t.Lanes }

// elemTypes are T1's argument types (T1_1.0.0_input-schema.json,
// KernelSpecification.Arguments[].Type), less "custom", which has no
// fixed layout.
var elemTypes = func() map[string]elemType {
	m := map[string]elemType{
		"bool":   {"bool", kBool, 1, 1},
		"int8":   {"int8", kInt, 1, 1},
		"uint8":  {"uint8", kUint, 1, 1},
		"int16":  {"int16", kInt, 2, 1},
		"uint16": {"uint16", kUint, 2, 1},
		"int32":  {"int32", kInt, 4, 1},
		"uint32": {"uint32", kUint, 4, 1},
		"int64":  {"int64", kInt, 8, 1},
		"uint64": {"uint64", kUint, 8, 1},
	}
	for _, base := range []struct {
		name string
		kind scalarKind
		size int
	}{{"half", kHalf, 2}, {"float", kFloat, 4}, {"double", kDouble, 8}} {
		m[base.name] = elemType{base.name, base.kind, base.size, 1}
		for _, l := range []int{2, 4, 8, 16} {
			n := fmt.Sprintf("%s%d", base.name, l)
			m[n] = elemType{n, base.kind, base.size, l}
		}
	}
	return m
}()

// lookupType returns the layout of a T1 type name; arg names the argument
// in the error.
func lookupType(arg, name string) (elemType, error) {
	t, ok := elemTypes[name]
	if !ok {
		names := make([]string, 0, len(elemTypes))
		for k := range elemTypes {
			names = append(names, k)
		}
		sort.Strings(names)
		return elemType{}, fmt.Errorf("argument %q: type %q has no fixed layout (one of %s)", arg, name, strings.Join(names, ", "))
	}
	return t, nil
}

// putComp stores v as one component of kind t at b (little-endian, C
// conversion rules: integers truncate toward zero and wrap to the width,
// bool is v != 0, half rounds to nearest even).
func putComp(b []byte, t elemType, v float64) {
	switch t.Kind {
	case kBool:
		if v != 0 {
			b[0] = 1
		} else {
			b[0] = 0
		}
	case kInt, kUint:
		var u uint64
		if t.Kind == kUint && v >= 1<<63 {
			u = uint64(v)
		} else {
			u = uint64(int64(v))
		}
		switch t.CompSize {
		case 1:
			b[0] = byte(u)
		case 2:
			binary.LittleEndian.PutUint16(b, uint16(u))
		case 4:
			binary.LittleEndian.PutUint32(b, uint32(u))
		case 8:
			binary.LittleEndian.PutUint64(b, u)
		}
	case kHalf:
		binary.LittleEndian.PutUint16(b, float32ToHalf(float32(v)))
	case kFloat:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case kDouble:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	}
}

// getComp reads one component as float64.
func getComp(b []byte, t elemType) float64 {
	switch t.Kind {
	case kBool:
		if b[0] != 0 {
			return 1
		}
		return 0
	case kInt:
		switch t.CompSize {
		case 1:
			return float64(int8(b[0]))
		case 2:
			return float64(int16(binary.LittleEndian.Uint16(b)))
		case 4:
			return float64(int32(binary.LittleEndian.Uint32(b)))
		default:
			return float64(int64(binary.LittleEndian.Uint64(b)))
		}
	case kUint:
		switch t.CompSize {
		case 1:
			return float64(b[0])
		case 2:
			return float64(binary.LittleEndian.Uint16(b))
		case 4:
			return float64(binary.LittleEndian.Uint32(b))
		default:
			return float64(binary.LittleEndian.Uint64(b))
		}
	case kHalf:
		return float64(halfToFloat32(binary.LittleEndian.Uint16(b)))
	case kFloat:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	default:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
}

// packScalar encodes a scalar kernel argument with its exact C width
// (int32 4 bytes, double 8, half 2, ...); vector types repeat the value
// in every lane.
func packScalar(t elemType, v float64) []byte {
	out := make([]byte, t.Size())
	for l := 0; l < t.Lanes; l++ {
		putComp(out[l*t.CompSize:], t, v)
	}
	return out
}

// float32ToHalf converts to IEEE 754 binary16, rounding to nearest even;
// overflow gives ±Inf, NaN stays NaN.
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the right result
	}
	return sign | uint16(h)
}

// halfToFloat32 converts IEEE 754 binary16 exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// subnormal: value = mant * 2^-24
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// constantWord gives the 32-bit word that, repeated, lays out a buffer
// of bytes filled with the constant f holds, where there is one: a
// 4-byte component, an 8-byte one whose halves are equal (0.0), or
// components of one repeated byte, in a buffer of whole words. ok is
// false for any other fill.
func constantWord(t elemType, f backend.Fill, bytes int64) (word uint32, ok bool) {
	if (f.Type != "Constant" && f.Type != "") || bytes%4 != 0 || t.CompSize > 8 {
		return 0, false
	}
	comp := make([]byte, t.CompSize)
	putComp(comp, t, f.Value)
	pattern := make([]byte, 8)
	for i := range pattern {
		pattern[i] = comp[i%len(comp)]
	}
	if len(comp) == 8 || len(comp) == 4 || allEqual(comp) {
		if len(comp) != 8 || [4]byte(pattern[:4]) == [4]byte(pattern[4:]) {
			return binary.LittleEndian.Uint32(pattern), true
		}
	}
	return 0, false
}

func allEqual(b []byte) bool {
	for _, c := range b {
		if c != b[0] {
			return false
		}
	}
	return true
}

// fillChunk is the number of components drawn from one random stream.
// Stream k is PCG(seed, k) from math/rand/v2, so any split of a buffer on
// chunk boundaries (for parallel or piecewise filling) gives the same
// bytes.
const fillChunk = 1 << 16

// fillBytes writes the contents Fill f gives to components
// [first, first+len(dst)/CompSize) of a buffer of type t. first must be a
// multiple of fillChunk. Constant stores Value; Random draws U[0, Value)
// (Value 0 means 1) per component, truncated for integer types; for bool
// it is a fair coin. BinaryRaw is read by readRaw instead.
func fillBytes(dst []byte, t elemType, f backend.Fill, first int64) error {
	n := int64(len(dst) / t.CompSize)
	switch f.Type {
	case "Constant", "":
		if n == 0 {
			return nil
		}
		putComp(dst, t, f.Value)
		// Doubling copies: a few memmoves instead of one store per component.
		for filled := t.CompSize; filled < len(dst); filled *= 2 {
			copy(dst[filled:], dst[:filled])
		}
		return nil
	case "Random":
		if first%fillChunk != 0 {
			return fmt.Errorf("internal: random fill must start on a chunk boundary (%d)", first)
		}
		hi := f.Value
		if hi == 0 {
			hi = 1
		}
		for c := int64(0); c < n; c += fillChunk {
			r := rand.New(rand.NewPCG(uint64(f.Seed), uint64((first+c)/fillChunk)))
			end := min(c+fillChunk, n)
			for i := c; i < end; i++ {
				v := r.Float64() * hi
				if t.Kind == kBool {
					v = float64(r.Uint64() >> 63)
				}
				putComp(dst[i*int64(t.CompSize):], t, v)
			}
		}
		return nil
	}
	return fmt.Errorf("fill type %q is not supported (Constant, Random, BinaryRaw)", f.Type)
}

// fillParallel fills dst (components from first) using up to GOMAXPROCS
// goroutines on chunk boundaries; the bytes equal fillBytes'.
func fillParallel(dst []byte, t elemType, f backend.Fill, first int64) error {
	chunkBytes := fillChunk * t.CompSize
	nChunks := (len(dst) + chunkBytes - 1) / chunkBytes
	workers := min(runtime.GOMAXPROCS(0), nChunks)
	if workers <= 1 || f.Type != "Random" {
		return fillBytes(dst, t, f, first)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	per := (nChunks + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo := w * per * chunkBytes
		hi := min((w+1)*per*chunkBytes, len(dst))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			errs[w] = fillBytes(dst[lo:hi], t, f, first+int64(lo/t.CompSize))
		}(w, lo, hi)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// readRaw reads len(dst) bytes at offset off of a BinaryRaw file; the
// file must hold exactly want bytes.
func readRaw(dst []byte, path string, off, want int64, arg string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("argument %q: BinaryRaw file: %w", arg, err)
	}
	if fi.Size() != want {
		return fmt.Errorf("argument %q: BinaryRaw file %s holds %d bytes, want %d", arg, path, fi.Size(), want)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("argument %q: %w", arg, err)
	}
	defer f.Close()
	if _, err := f.ReadAt(dst, off); err != nil && err != io.EOF {
		return fmt.Errorf("argument %q: reading %s: %w", arg, path, err)
	}
	return nil
}

// content produces bytes [off, off+len(dst)) of a buffer of count
// elements of t with the given fill; off must be a multiple of
// fillChunk components.
func content(dst []byte, t elemType, f backend.Fill, off int64, count int64, arg string) error {
	if f.Type == "BinaryRaw" {
		return readRaw(dst, f.File, off, count*int64(t.Size()), arg)
	}
	if err := fillParallel(dst, t, f, off/int64(t.CompSize)); err != nil {
		return fmt.Errorf("argument %q: %w", arg, err)
	}
	return nil
}

// Validation methods (T1 ReferenceArguments[].ValidationMethod), with the
// meaning Kernel Tuning Toolkit gives them (KTT ResultValidator):
// AbsoluteDifference sums |got-want| over all components and compares the
// sum; SideBySideComparison compares each |got-want|; and
// SideBySideRelativeComparison compares each |got-want| / max(|want|, 1e-30).
const (
	MethodAbsoluteDifference = "AbsoluteDifference"
	MethodSideBySide         = "SideBySideComparison"
	MethodSideBySideRelative = "SideBySideRelativeComparison"
)

// comparison is the outcome of comparing one output.
type comparison struct {
	OK       bool
	Error    float64 // the compared quantity: the sum (AbsoluteDifference) or the largest elementwise error
	Worst    int64   // component index of the largest elementwise error
	Got      float64 // values at Worst
	Want     float64
	NaNIndex int64 // first component where got is NaN and want is not; -1 if none
}

// parseMethod tells what a validation method compares: the sum of the
// absolute errors (sum), each relative error (relative), or each absolute
// error (neither). "" means SideBySideComparison.
func parseMethod(method string) (sum, relative bool, err error) {
	switch method {
	case MethodAbsoluteDifference:
		return true, false, nil
	case MethodSideBySide, "":
		return false, false, nil
	case MethodSideBySideRelative:
		return false, true, nil
	}
	return false, false, fmt.Errorf("validation method %q is not one of %s, %s, %s", method, MethodAbsoluteDifference, MethodSideBySide, MethodSideBySideRelative)
}

// compare checks got against want (both raw buffers of type t) with a
// validation method and threshold. A NaN in got where want is not NaN
// always fails, whatever the method.
func compare(method string, threshold float64, t elemType, got, want []byte) (comparison, error) {
	if len(got) != len(want) {
		return comparison{}, fmt.Errorf("output holds %d bytes, reference %d", len(got), len(want))
	}
	sum, relative, err := parseMethod(method)
	if err != nil {
		return comparison{}, err
	}
	n := int64(len(got) / t.CompSize)
	// Fixed pieces merged in order: the result does not depend on the
	// number of CPUs, and GiB outputs compare in parallel.
	pieces := int((n + comparePiece - 1) / comparePiece)
	parts := make([]comparison, pieces)
	totals := make([]float64, pieces)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for p := 0; p < pieces; p++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(p int) {
			defer wg.Done()
			defer func() { <-sem }()
			lo := int64(p) * comparePiece
			hi := min(lo+comparePiece, n)
			parts[p], totals[p] = comparePart(t, got, want, lo, hi, relative)
		}(p)
	}
	wg.Wait()
	c := comparison{Worst: -1, NaNIndex: -1}
	var total, worst float64
	for p, pc := range parts {
		total += totals[p]
		if c.NaNIndex < 0 && pc.NaNIndex >= 0 {
			c.NaNIndex = pc.NaNIndex
		}
		if pc.Worst >= 0 && (pc.Error > worst || c.Worst < 0) {
			worst, c.Worst, c.Got, c.Want = pc.Error, pc.Worst, pc.Got, pc.Want
		}
	}
	if sum {
		c.Error = total
	} else {
		c.Error = worst
	}
	c.OK = c.NaNIndex < 0 && c.Error <= threshold
	return c, nil
}

// comparePiece is the number of components one goroutine compares.
const comparePiece = 1 << 20

// comparePart compares components [lo, hi): the largest elementwise
// error with its place, the first NaN mismatch, and the sum of errors.
func comparePart(t elemType, got, want []byte, lo, hi int64, relative bool) (comparison, float64) {
	c := comparison{Worst: -1, NaNIndex: -1}
	var total, worst float64
	for i := lo; i < hi; i++ {
		a := getComp(got[i*int64(t.CompSize):], t)
		b := getComp(want[i*int64(t.CompSize):], t)
		var e float64
		switch {
		case math.IsNaN(a) && math.IsNaN(b), a == b:
			e = 0
		case math.IsNaN(a) || math.IsNaN(b):
			if c.NaNIndex < 0 {
				c.NaNIndex = i
			}
			e = math.Inf(1)
		default:
			e = math.Abs(a - b)
			if relative {
				e /= math.Max(math.Abs(b), 1e-30)
			}
		}
		total += e
		if e > worst || c.Worst < 0 {
			worst, c.Worst, c.Got, c.Want = e, i, a, b
		}
	}
	c.Error = worst
	return c, total
}
