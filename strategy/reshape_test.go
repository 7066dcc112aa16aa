package strategy

import (
	"slices"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// TestReshapes checks the thread-block reshapes on a space of 4 × 4 block
// shapes and a third parameter, with a restriction that removes the 8 × 1
// shape: the reshapes of (2, 4, u) are exactly the other shapes of 8
// threads that remain, with the same u.
func TestReshapes(t *testing.T) {
	e, err := expr.Parse("not (block_size_x == 8 and block_size_y == 1)")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := space.Build([]space.Param{
		{Name: "block_size_x", Values: intValues(1, 2, 4, 8)},
		{Name: "block_size_y", Values: intValues(1, 2, 4, 8)},
		{Name: "unroll", Values: intValues(1, 2)},
	}, []space.Restriction{{Expr: e}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rf := reshapeFunc(sp)
	if rf == nil {
		t.Fatal("no reshape neighbourhood for two block-size parameters")
	}
	at := func(x, y, u int64) int {
		ix, ok := sp.IndexesOf(intValues(x, y, u))
		if !ok {
			t.Fatalf("(%d, %d, %d) is not a value of the space", x, y, u)
		}
		i, ok := sp.IndexOf(ix)
		if !ok {
			t.Fatalf("(%d, %d, %d) is not in the space", x, y, u)
		}
		return i
	}
	got := rf(at(2, 4, 2))
	slices.Sort(got)
	want := []int{at(1, 8, 2), at(4, 2, 2)} // (8, 1, 2) is restricted away
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reshapes of (2, 4, 2) = %v, want %v", got, want)
	}
	if got := rf(at(1, 1, 1)); len(got) != 0 {
		t.Errorf("reshapes of the only 1-thread shape = %v, want none", got)
	}
	// Extended Hamming neighbourhood: its own neighbours, then the reshapes
	// it lacks, each once.
	nf := neighborFunc(sp, "Hamming")
	ext := withReshapes(nf, rf)(at(2, 4, 2))
	if n := len(nf(at(2, 4, 2))); len(ext) != n+2 {
		t.Errorf("Hamming with reshapes has %d neighbours, want %d + 2", len(ext), n)
	}

	// One block-size parameter: no reshapes.
	sp1, err := space.Build([]space.Param{{Name: "block_size_x", Values: intValues(32, 64)}, {Name: "tile", Values: intValues(1, 2)}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reshapeFunc(sp1) != nil {
		t.Error("a reshape neighbourhood with one block-size parameter")
	}
	if f := withReshapes(nf, nil); f(at(2, 4, 2)) == nil {
		t.Error("withReshapes(nf, nil) is not nf")
	}
}
