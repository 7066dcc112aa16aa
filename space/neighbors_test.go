package space

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func small(t *testing.T, rs ...string) *Space {
	t.Helper()
	s, err := Build([]Param{{"a", ints(1, 2, 3, 4)}, {"b", ints(1, 2, 4, 8)}}, restr(rs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseNeighborKind(t *testing.T) {
	for _, c := range []struct {
		s    string
		want NeighborKind
	}{{"Hamming", Hamming}, {"hamming", Hamming}, {"adjacent", Adjacent}, {"strictly-adjacent", StrictlyAdjacent}} {
		k, err := ParseNeighborKind(c.s)
		if err != nil || k != c.want {
			t.Errorf("ParseNeighborKind(%q) = %v, %v", c.s, k, err)
		}
		if k, _ := ParseNeighborKind(c.want.String()); k != c.want {
			t.Errorf("round trip of %v", c.want)
		}
	}
	if _, err := ParseNeighborKind("closest"); err == nil || err.Error() != `space: unknown neighbour kind "closest" (want Hamming, adjacent or strictly-adjacent)` {
		t.Errorf("got %v", err)
	}
}

// Neighbour sets worked out by hand. Value indexes (a, b) of the valid
// configurations of a*b <= 8 and a != 3 (a=3 is index 2, never valid):
// 0:(0,0) 1:(0,1) 2:(0,2) 3:(0,3) 4:(1,0) 5:(1,1) 6:(1,2) 7:(3,0) 8:(3,1).
func TestNeighborsByHand(t *testing.T) {
	s := small(t, "a*b <= 8", "a != 3")
	if s.Len() != 9 {
		t.Fatalf("Len %d, want 9", s.Len())
	}
	cases := []struct {
		i    int
		kind NeighborKind
		want []int
	}{
		{5, Hamming, []int{1, 4, 6, 8}},
		{5, StrictlyAdjacent, []int{0, 1, 2, 4, 6}},
		// a: nearest valid index above 1 is 3 (Δ+2), below 0 (Δ-1); b: ±1.
		{5, Adjacent, []int{0, 1, 2, 4, 6, 7, 8}},
		// (3,0): a has nothing above (unbounded), nearest below is 1 (Δ-2);
		// b has nothing below, nearest above is 1.
		{7, Adjacent, []int{4, 5, 8}},
		{7, StrictlyAdjacent, []int{8}},
		{7, Hamming, []int{0, 4, 8}},
		{8, Adjacent, []int{4, 5, 6, 7}},
		{3, Adjacent, []int{2, 6}},
		{3, StrictlyAdjacent, []int{2, 6}},
		{3, Hamming, []int{0, 1, 2}},
	}
	for _, c := range cases {
		if got := s.Neighbors(c.i, c.kind); !slices.Equal(got, c.want) {
			t.Errorf("Neighbors(%d, %v) = %v, want %v", c.i, c.kind, got, c.want)
		}
	}
	// Without a != 3 every value occurs, so adjacent is strictly adjacent.
	s = small(t, "a*b <= 8")
	want := []int{0, 1, 2, 4, 6, 7, 8} // around (1,1): all of the 3x3 box but (2,2)
	for _, k := range []NeighborKind{Adjacent, StrictlyAdjacent} {
		if got := s.Neighbors(5, k); !slices.Equal(got, want) {
			t.Errorf("full space: Neighbors(5, %v) = %v, want %v", k, got, want)
		}
	}
}

func absI(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

// Every neighbourhood of every configuration of a 4-parameter space agrees
// with the definitions applied by a linear scan.
func TestNeighborsAgainstScan(t *testing.T) {
	params := []Param{
		{"w", ints(1, 2, 3, 4, 5, 6)},
		{"x", ints(1, 2, 4, 8, 16)},
		{"y", ints(0, 1, 2)},
		{"z", ints(7)},
		{"v", ints(1, 2, 3, 4, 5, 6, 7)},
	}
	s, err := Build(params, restr("w*x <= 24", "(w + y + v) % 3 != 0", "v != 4 and w != 3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Len()
	all := make([][]int32, n)
	for i := range n {
		all[i] = s.Indexes(i)
	}
	np := len(params)
	for i := range n {
		var ham, strict, adj []int
		lo, hi := make([]int32, np), make([]int32, np)
		for p := range np {
			lo[p], hi[p] = -1<<30, 1<<30
			for j := range n {
				d := all[j][p] - all[i][p]
				if d > 0 {
					hi[p] = min(hi[p], d)
				}
				if d < 0 {
					lo[p] = max(lo[p], d)
				}
			}
		}
		for j := range n {
			if j == i {
				continue
			}
			diff, maxd, inAdj := 0, int32(0), true
			for p := range np {
				d := all[j][p] - all[i][p]
				if d != 0 {
					diff++
				}
				maxd = max(maxd, absI(d))
				if d < lo[p] || d > hi[p] {
					inAdj = false
				}
			}
			if diff == 1 {
				ham = append(ham, j)
			}
			if maxd <= 1 {
				strict = append(strict, j)
			}
			if inAdj {
				adj = append(adj, j)
			}
		}
		for _, c := range []struct {
			k    NeighborKind
			want []int
		}{{Hamming, ham}, {StrictlyAdjacent, strict}, {Adjacent, adj}} {
			if got := s.Neighbors(i, c.k); !slices.Equal(got, c.want) {
				t.Fatalf("Neighbors(%d, %v) = %v, scan %v", i, c.k, got, c.want)
			}
		}
	}
}

func TestSample(t *testing.T) {
	s := small(t, "a*b <= 8") // 11 configurations
	r := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, s.Len())
	const trials = 11000
	for range trials {
		got := s.Sample(r, 3)
		if len(got) != 3 || got[0] == got[1] || got[0] == got[2] || got[1] == got[2] {
			t.Fatalf("Sample(3) = %v", got)
		}
		for _, i := range got {
			counts[i]++
		}
	}
	// Each configuration is drawn with probability 3/11: 3000 expected,
	// standard deviation about 47.
	for i, c := range counts {
		if c < 2700 || c > 3300 {
			t.Errorf("configuration %d drawn %d times in %d samples of 3, want about 3000", i, c, trials)
		}
	}
	for _, k := range []int{6, 11, 20} { // Fisher–Yates branch and all
		got := s.Sample(r, k)
		if len(got) != min(k, 11) {
			t.Fatalf("Sample(%d) has %d", k, len(got))
		}
		sorted := slices.Sorted(slices.Values(got))
		if len(slices.Compact(slices.Clone(sorted))) != len(got) || sorted[0] < 0 || sorted[len(sorted)-1] >= 11 {
			t.Errorf("Sample(%d) = %v", k, got)
		}
	}
	if s.Sample(r, 0) != nil {
		t.Error("Sample(0) not empty")
	}
	a := s.Sample(rand.New(rand.NewPCG(7, 7)), 4)
	b := s.Sample(rand.New(rand.NewPCG(7, 7)), 4)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different samples %v %v", a, b)
	}
}

func TestLatinHypercube(t *testing.T) {
	// Full 4x4 grid, k=4: every value of each parameter is used exactly once.
	s := small(t)
	for seed := range uint64(20) {
		got := s.LatinHypercube(rand.New(rand.NewPCG(seed, 1)), 4)
		var seenA, seenB [4]int
		for _, i := range got {
			ix := s.Indexes(i)
			seenA[ix[0]]++
			seenB[ix[1]]++
		}
		if seenA != [4]int{1, 1, 1, 1} || seenB != [4]int{1, 1, 1, 1} {
			t.Fatalf("seed %d: LHS %v uses a %v, b %v", seed, got, seenA, seenB)
		}
	}
	// With restrictions: k = Len() takes every configuration once, larger k
	// is capped.
	s = small(t, "a*b <= 8", "a != 3")
	for _, k := range []int{9, 15} {
		got := s.LatinHypercube(rand.New(rand.NewPCG(3, 3)), k)
		if !slices.Equal(slices.Sorted(slices.Values(got)), []int{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
			t.Errorf("LatinHypercube(%d) = %v", k, got)
		}
	}
	// Snapping: one parameter 0..9 valid at 0, 1, 8 and 9 (configurations
	// 0..3). With k=2 the strata [0,5) and [5,10) give targets 0..4, which
	// snap to x=0 or x=1, and 5..9, which snap to x=8 or x=9.
	s1, err := Build([]Param{{"x", ints(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)}}, restr("x in [0, 1, 8, 9]"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(20) {
		got := s1.LatinHypercube(rand.New(rand.NewPCG(seed, 9)), 2)
		slices.Sort(got)
		if len(got) != 2 || got[0] > 1 || got[1] < 2 {
			t.Fatalf("seed %d: LatinHypercube(2) = %v, want one of {0,1} and one of {2,3}", seed, got)
		}
	}
}
