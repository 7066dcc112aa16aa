package strategy

import (
	"math"
	"slices"

	"github.com/gtune/gtune/space"
)

// maxReshapeShapes bounds the thread-block shapes (combinations of the
// block-size parameters' values) reshapeFunc enumerates: spaces with more
// get no reshape neighbourhood rather than a slow one.
const maxReshapeShapes = 1 << 16

// reshapeFunc gives the thread-block reshapes of a configuration: the
// configurations of sp that differ from it only in the thread block's
// dimensions (the tunable parameters block_size_x, block_size_y and
// block_size_z that have two values or more) and have as many threads per
// block (the product of those dimensions). 16×48 and 8×96 are reshapes of
// each other; no Hamming or adjacent neighbourhood holds both, since two
// parameters change, by several values each.
//
// Why: at a given thread count a kernel's occupancy, and the shared memory
// and registers a thread block needs, are often alike, while the block's
// shape moves memory access patterns (coalescing, tile reuse) — so a good
// configuration's reshapes are candidates a local search would otherwise
// only reach through worse configurations. On benchmark_hub's
// dedispersion A100 cache, the 4th best configuration of 11,130
// (16,48,…) has no better Hamming neighbour, and the 2nd best (8,96,…)
// is its reshape.
//
// It returns nil when sp has fewer than two such parameters (blockDims), a
// value of one that is not a positive integer up to 2^20, or more than
// maxReshapeShapes shapes.
// The result of a call is the configurations' indexes, in no order the
// caller may rely on; the configuration itself is not among them.
func reshapeFunc(sp *space.Space) func(int) []int {
	params, fv, ok := blockDims(sp)
	if !ok || len(params) < 2 {
		return nil
	}
	// Integers only: threads per block is then an exact product, a map key.
	vals := make([][]int64, len(fv))
	shapes := 1
	for d, v := range fv {
		vals[d] = make([]int64, len(v))
		for j, x := range v {
			if x != math.Trunc(x) || x > 1<<20 {
				return nil
			}
			vals[d][j] = int64(x)
		}
		if shapes *= len(v); shapes > maxReshapeShapes {
			return nil
		}
	}
	// byThreads: threads per block -> the shapes (one value index per
	// block-size parameter) with that many.
	byThreads := map[int64][][]int32{}
	shape := make([]int32, len(params))
	var walk func(d int, threads int64)
	walk = func(d int, threads int64) {
		if d == len(params) {
			byThreads[threads] = append(byThreads[threads], slices.Clone(shape))
			return
		}
		for j, v := range vals[d] {
			shape[d] = int32(j)
			walk(d+1, threads*v)
		}
	}
	walk(0, 1)
	return func(i int) []int {
		idx := sp.Indexes(i)
		threads := int64(1)
		for d, p := range params {
			threads *= vals[d][idx[p]]
		}
		var out []int
		c := slices.Clone(idx)
		for _, s := range byThreads[threads] {
			same := true
			for d, p := range params {
				c[p] = s[d]
				same = same && s[d] == idx[p]
			}
			if same {
				continue
			}
			if j, ok := sp.IndexOf(c); ok {
				out = append(out, j)
			}
		}
		return out
	}
}

// withReshapes is the neighbourhood nf extended by the thread-block
// reshapes rf gives (rf nil: nf itself).
func withReshapes(nf, rf func(int) []int) func(int) []int {
	if rf == nil {
		return nf
	}
	return func(i int) []int {
		n := nf(i)
		for _, j := range rf(i) {
			if !slices.Contains(n, j) {
				n = append(n, j)
			}
		}
		return n
	}
}
