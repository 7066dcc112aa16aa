package cuda

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// The host's half of the GPU comparison: merging per-block partials and
// turning them into compare's outcome. The kernel itself is checked
// against compare on a GPU (TestIntegrationGPUCompare).

func TestReducePartials(t *testing.T) {
	ps := []cmpPartial{
		{Sum: 1.5, MaxAbs: 0.75, MaxRel: 0.25, AbsIdx: 700, RelIdx: 700, NaNIdx: -1},
		{Sum: 0, MaxAbs: 0, MaxRel: 0, AbsIdx: -1, RelIdx: -1, NaNIdx: -1}, // a block past the end
		{Sum: 2.25, MaxAbs: 2, MaxRel: 0.125, AbsIdx: 1300, RelIdx: 1301, NaNIdx: 1900},
		// Ties: the same errors at smaller indexes win, whatever the block order.
		{Sum: 4, MaxAbs: 2, MaxRel: 0.25, AbsIdx: 256, RelIdx: 300, NaNIdx: 1800},
		{Sum: 0.25, MaxAbs: 0.25, MaxRel: 0.5, AbsIdx: 2000, RelIdx: 2001, NaNIdx: -1},
	}
	r := reducePartials(ps)
	want := cmpPartial{Sum: 8, MaxAbs: 2, MaxRel: 0.5, AbsIdx: 256, RelIdx: 2001, NaNIdx: 1800}
	if r != want {
		t.Fatalf("reduce = %+v, want %+v", r, want)
	}
	// Nothing compared: no place, no NaN.
	if r := reducePartials(ps[1:2]); r != (cmpPartial{AbsIdx: -1, RelIdx: -1, NaNIdx: -1}) {
		t.Fatalf("empty reduce = %+v", r)
	}
	// Sums add in block order: 1e16 + 1 + 1 - 1e16 is 0 in double, 2 in the other order.
	r = reducePartials([]cmpPartial{{Sum: 1e16, AbsIdx: -1, RelIdx: -1, NaNIdx: -1}, {Sum: 1, AbsIdx: -1, RelIdx: -1, NaNIdx: -1}, {Sum: 1, AbsIdx: -1, RelIdx: -1, NaNIdx: -1}, {Sum: -1e16, AbsIdx: -1, RelIdx: -1, NaNIdx: -1}})
	if r.Sum != 0 {
		t.Fatalf("sum in block order = %g, want 0", r.Sum)
	}
	// An infinite error (a NaN mismatch) makes the sum infinite.
	r = reducePartials([]cmpPartial{ps[0], {Sum: math.Inf(1), MaxAbs: math.Inf(1), MaxRel: math.Inf(1), AbsIdx: 5, RelIdx: 5, NaNIdx: 5}})
	if !math.IsInf(r.Sum, 1) || r.AbsIdx != 5 || r.RelIdx != 5 || r.NaNIdx != 5 {
		t.Fatalf("with a NaN mismatch: %+v", r)
	}
}

func TestPartialFinish(t *testing.T) {
	r := cmpPartial{Sum: 3.5, MaxAbs: 2, MaxRel: 0.5, AbsIdx: 10, RelIdx: 20, NaNIdx: -1}
	cases := []struct {
		method    string
		threshold float64
		ok        bool
		err       float64
		worst     int64
	}{
		{MethodSideBySide, 2, true, 2, 10},
		{"", 1.5, false, 2, 10},
		{MethodAbsoluteDifference, 3.5, true, 3.5, 10},
		{MethodAbsoluteDifference, 3, false, 3.5, 10},
		{MethodSideBySideRelative, 0.5, true, 0.5, 20},
		{MethodSideBySideRelative, 0.25, false, 0.5, 20},
	}
	for _, c := range cases {
		got, err := r.finish(c.method, c.threshold)
		if err != nil || got.OK != c.ok || got.Error != c.err || got.Worst != c.worst || got.NaNIndex != -1 {
			t.Errorf("%q at %g: %+v %v", c.method, c.threshold, got, err)
		}
	}
	// A NaN mismatch fails whatever the threshold.
	n := r
	n.NaNIdx = 7
	if got, _ := n.finish(MethodSideBySide, math.Inf(1)); got.OK || got.NaNIndex != 7 {
		t.Fatalf("NaN mismatch: %+v", got)
	}
	// Only NaN relative errors (infinite references): comparePart keeps
	// the first component with a NaN error.
	q := cmpPartial{Sum: 0, AbsIdx: 0, RelIdx: -1, NaNIdx: -1}
	if got, _ := q.finish(MethodSideBySideRelative, 1); got.OK || got.Worst != 0 || !math.IsNaN(got.Error) {
		t.Fatalf("NaN relative errors: %+v", got)
	}
	if _, err := r.finish("Closeness", 1); err == nil || !strings.Contains(err.Error(), `"Closeness" is not one of`) {
		t.Fatalf("unknown method: %v", err)
	}
}

func TestDecodePartials(t *testing.T) {
	b := make([]byte, 2*partialBytes)
	put := func(p []byte, vals ...uint64) {
		for i, v := range vals {
			binary.LittleEndian.PutUint64(p[8*i:], v)
		}
	}
	put(b, math.Float64bits(1.25), math.Float64bits(0.5), math.Float64bits(math.Inf(1)), 3, 1<<40, math.MaxUint64)
	put(b[partialBytes:], 0, 0, 0, math.MaxUint64, math.MaxUint64, 9)
	ps := decodePartials(b)
	want := []cmpPartial{
		{Sum: 1.25, MaxAbs: 0.5, MaxRel: math.Inf(1), AbsIdx: 3, RelIdx: 1 << 40, NaNIdx: -1},
		{AbsIdx: -1, RelIdx: -1, NaNIdx: 9},
	}
	if len(ps) != 2 || ps[0] != want[0] || ps[1] != want[1] {
		t.Fatalf("decode = %+v", ps)
	}
}

func TestCompareKernelTypes(t *testing.T) {
	want := map[string]string{
		"float": "float", "float4": "float", "float16": "float", "double": "double", "double2": "double",
		"bool": "bool", "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16",
		"int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
	}
	for name, et := range elemTypes {
		k, ok := cmpKernelType(et)
		if et.Kind == kHalf {
			if ok {
				t.Errorf("%s has a GPU comparison (%s); half is compared on the host", name, k)
			}
			continue
		}
		if exp, listed := want[name]; listed && k != exp {
			t.Errorf("%s compares as %q, want %q", name, k, exp)
		}
		if !ok || !strings.Contains(compareSource, "GTUNE_COMPARE("+k+",") {
			t.Errorf("%s: no kernel gtune_compare_%s in the source", name, k)
		}
	}
	if len(cmpKernelTypes) != 11 {
		t.Fatalf("%d kernel types", len(cmpKernelTypes))
	}
	for _, k := range cmpKernelTypes {
		if !strings.Contains(compareSource, "GTUNE_COMPARE("+k+",") {
			t.Errorf("no kernel gtune_compare_%s in the source", k)
		}
	}
	if !strings.HasPrefix(compareSource, "#define THREADS 256\n") {
		t.Fatalf("source starts %q", compareSource[:30])
	}
	for _, c := range []struct {
		n    int64
		want int
	}{{1, 1}, {256, 1}, {257, 2}, {256 * 1024, 1024}, {1 << 28, 1024}} {
		if got := cmpBlocks(c.n); got != c.want {
			t.Errorf("cmpBlocks(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
