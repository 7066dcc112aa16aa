package space

import (
	"context"
	"fmt"
	"testing"

	"github.com/gtune/gtune/expr"
)

// Benchmarks of the construction on synthetic spaces, one per path of the
// enumeration: no restriction (leaves only), tabulated restrictions
// driving the candidates (with the final sort), and a restriction too
// large to tabulate (interval forward checking and full evaluation).

func pow2s(n int) []expr.Value {
	out := make([]expr.Value, n)
	for i := range out {
		out[i] = expr.Int(1 << i)
	}
	return out
}

func benchSpace(b *testing.B, params []Param, rs []Restriction, want int) {
	b.ReportAllocs()
	for b.Loop() {
		s, err := Build(params, rs, nil)
		if err != nil {
			b.Fatal(err)
		}
		if s.Len() != want {
			b.Fatalf("Len %d, want %d", s.Len(), want)
		}
	}
}

// 8^7 = 2,097,152 configurations, all valid.
func BenchmarkBuildProduct(b *testing.B) {
	var params []Param
	for i := range 7 {
		params = append(params, Param{fmt.Sprintf("p%d", i), ints(0, 1, 2, 3, 4, 5, 6, 7)})
	}
	benchSpace(b, params, nil, 1<<21)
}

// A GEMM-like space: block sizes bounded by products, divisibility, and
// free parameters; the binding order differs from the spec order, so the
// codes are sorted.
func BenchmarkBuildTabulated(b *testing.B) {
	params := []Param{
		{"free0", ints(0, 1)},
		{"mwg", pow2s(8)}, {"nwg", pow2s(8)}, {"kwg", pow2s(6)},
		{"mdim", pow2s(6)}, {"ndim", pow2s(6)},
		{"vw", ints(1, 2, 4, 8)}, {"free1", ints(0, 1, 2)},
	}
	rs := restr("mdim*ndim <= 1024", "mwg % (mdim*vw) == 0", "nwg % ndim == 0", "kwg <= mwg")
	ref, err := Build(params, rs, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchSpace(b, params, rs, ref.Len())
}

// One restriction over 6 parameters of 10 values (10^6 raw, above
// tabLimit): interval forward checking, then full evaluation at the last
// level.
func BenchmarkBuildUntabulated(b *testing.B) {
	var params []Param
	for i := range 6 {
		params = append(params, Param{fmt.Sprintf("p%d", i), ints(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)})
	}
	rs := restr("p0 + p1 + p2 + p3 + p4 + p5 <= 24")
	ref, err := Build(params, rs, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchSpace(b, params, rs, ref.Len())
}

// BenchmarkBuildUntabulated with a context that can be cancelled: the cost
// of looking at it every 1,024 search nodes.
func BenchmarkBuildUntabulatedCancellable(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := decimal(6)
	rs := restr("p0 + p1 + p2 + p3 + p4 + p5 <= 24")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildContext(ctx, params, rs, nil, BuildOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A 10^9 space that only the enumeration can prove too large (the
// restriction reads all 9 parameters, too many to tabulate): the time
// and memory spent before refusing it at the default limit.
func BenchmarkRefuseByEnumeration(b *testing.B) {
	params := decimal(9)
	rs := restr("p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7 + p8 >= 12")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(params, rs, nil); err == nil {
			b.Fatal("built")
		}
	}
}
