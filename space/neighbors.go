package space

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// NeighborKind selects a neighbourhood of a configuration, as Kernel
// Tuner's searchspace.py defines them (get_neighbors_indices with method
// "Hamming", "adjacent", "strictly-adjacent"). Distances are in value
// index space: the position of a value in its parameter's list.
type NeighborKind int

const (
	// Hamming: valid configurations differing in exactly one parameter.
	Hamming NeighborKind = iota
	// Adjacent: for each parameter p, bound the index difference Δ_p by
	// the closest value index above and below the configuration's own
	// among all valid configurations (unbounded on a side with none);
	// neighbours are the other valid configurations whose Δ_p lies in
	// those bounds for every p.
	Adjacent
	// StrictlyAdjacent: valid configurations other than itself with
	// |Δ_p| <= 1 for every parameter p.
	StrictlyAdjacent
)

var kindNames = [...]string{"Hamming", "adjacent", "strictly-adjacent"}

func (k NeighborKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("NeighborKind(%d)", int(k))
}

// ParseNeighborKind reads Kernel Tuner's method names "Hamming",
// "adjacent" and "strictly-adjacent" (case-insensitive). The error names
// the string and the accepted names.
func ParseNeighborKind(s string) (NeighborKind, error) {
	for i, n := range kindNames {
		if strings.EqualFold(s, n) {
			return NeighborKind(i), nil
		}
	}
	return 0, fmt.Errorf("space: unknown neighbour kind %q (want Hamming, adjacent or strictly-adjacent)", s)
}

// Neighbors gives the valid configurations that neighbour configuration i
// (0 <= i < Len()) under kind, as configuration numbers in ascending order;
// i itself is never included. Hamming costs one IndexOf per other value of
// each parameter (O(sum of value counts)); Adjacent and StrictlyAdjacent
// are box queries over the sorted packed codes, binary-searching one
// parameter at a time, so their cost grows with the number of non-empty
// prefixes in the box, not with Len(). Panics on an unknown kind or i out
// of range.
func (s *Space) Neighbors(i int, kind NeighborKind) []int {
	if i < 0 || i >= s.n {
		panic(fmt.Sprintf("space: Neighbors(%d) of a space of %d configurations", i, s.n))
	}
	cur := s.Indexes(i)
	np := len(s.params)
	var out []int
	switch kind {
	case Hamming:
		ix := slices.Clone(cur)
		for p := range np {
			for j := range len(s.params[p].Values) {
				if int32(j) == cur[p] {
					continue
				}
				ix[p] = int32(j)
				if k, ok := s.IndexOf(ix); ok {
					out = append(out, k)
				}
			}
			ix[p] = cur[p]
		}
		slices.Sort(out)
		return out
	case StrictlyAdjacent, Adjacent:
		lo, hi := make([]int32, np), make([]int32, np)
		for p := range np {
			last := int32(len(s.params[p].Values) - 1)
			if kind == StrictlyAdjacent {
				lo[p], hi[p] = max(cur[p]-1, 0), min(cur[p]+1, last)
				continue
			}
			pr := s.presence()[p]
			lo[p], hi[p] = 0, last // unbounded where no valid value lies beyond
			for j := cur[p] - 1; j >= 0; j-- {
				if pr[j] {
					lo[p] = j
					break
				}
			}
			for j := cur[p] + 1; j <= last; j++ {
				if pr[j] {
					hi[p] = j
					break
				}
			}
		}
		s.box(0, s.n, 0, lo, hi, &out)
		if k, ok := slices.BinarySearch(out, i); ok {
			out = slices.Delete(out, k, k+1)
		}
		return out
	}
	panic(fmt.Sprintf("space: unknown neighbour kind %d", int(kind)))
}

// presence gives, per parameter, which value indexes occur in at least one
// valid configuration (computed once).
func (s *Space) presence() [][]bool {
	s.presentOnce.Do(func() {
		s.present = make([][]bool, len(s.params))
		for p := range s.params {
			s.present[p] = make([]bool, len(s.params[p].Values))
		}
		for i := 0; i < s.n; i++ {
			for p := range s.params {
				s.present[p][s.field(i, p)] = true
			}
		}
	})
	return s.present
}

// box appends to out the configurations in [a, b) — which agree on
// parameters 0..d-1 — whose value index of every parameter q >= d lies in
// [lo[q], hi[q]], in ascending order.
func (s *Space) box(a, b, d int, lo, hi []int32, out *[]int) {
	if a >= b {
		return
	}
	if d == len(s.params) {
		for i := a; i < b; i++ {
			*out = append(*out, i)
		}
		return
	}
	if s.mask[d] == 0 { // single value: index 0, always within bounds
		s.box(a, b, d+1, lo, hi, out)
		return
	}
	i := s.firstAtLeast(a, b, d, lo[d])
	for i < b {
		v := s.field(i, d)
		if v > hi[d] {
			return
		}
		e := s.firstAtLeast(i+1, b, d, v+1)
		s.box(i, e, d+1, lo, hi, out)
		i = e
	}
}

// firstAtLeast gives the first i in [a, b) whose value index of parameter
// d is at least v (b if none); they are ascending there.
func (s *Space) firstAtLeast(a, b, d int, v int32) int {
	w, sh, m := s.word[d], s.shift[d], s.mask[d]
	stride := s.words
	for a < b {
		h := int(uint(a+b) >> 1)
		if int32((s.codes[h*stride+w]>>sh)&m) < v {
			a = h + 1
		} else {
			b = h
		}
	}
	return a
}

// Sample draws k distinct configuration numbers uniformly at random
// without replacement, in the order drawn (so any prefix is itself a
// uniform sample). k >= Len() gives a random permutation of all of them;
// k <= 0 gives none. Deterministic for a given r state.
func (s *Space) Sample(r *rand.Rand, k int) []int {
	if k <= 0 || s.n == 0 {
		return nil
	}
	if k >= s.n {
		return r.Perm(s.n)
	}
	out := make([]int, 0, k)
	if k > s.n/4 {
		// Partial Fisher–Yates: the first k of a uniform permutation.
		perm := make([]int, s.n)
		for i := range perm {
			perm[i] = i
		}
		for i := range k {
			j := i + r.IntN(s.n-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		return append(out, perm[:k]...)
	}
	seen := make(map[int]struct{}, k)
	for len(out) < k {
		j := r.IntN(s.n)
		if _, dup := seen[j]; dup {
			continue
		}
		seen[j] = struct{}{}
		out = append(out, j)
	}
	return out
}

// LatinHypercube draws min(k, Len()) distinct configurations by Latin
// hypercube sampling in value-index space (McKay, Beckman & Conover 1979):
// each parameter's range [0, n_p) is cut into k equal strata, every
// stratum used by exactly one point, strata paired across parameters by
// independent random permutations, a uniform position within each
// stratum; point j's target value index is c_p = floor(u_p*n_p). Each
// point is then snapped to the nearest valid configuration not yet taken,
// by the distance sum_p ((i_p - c_p)/n_p)^2 (every parameter's range
// scaled to [0,1)), ties to the lowest configuration number; a target
// that is itself valid and untaken is taken as is. The result is in point
// order. Cost: O(k·Len()·parameters) at worst. k <= 0 gives none.
func (s *Space) LatinHypercube(r *rand.Rand, k int) []int {
	k = min(k, s.n)
	if k <= 0 {
		return nil
	}
	np := len(s.params)
	perms := make([][]int, np)
	for p := range np {
		perms[p] = r.Perm(k)
	}
	taken := make([]bool, s.n)
	out := make([]int, 0, k)
	target := make([]int32, np)
	scale := make([]float64, np)
	for p := range np {
		scale[p] = 1 / float64(len(s.params[p].Values))
	}
	row := make([]int32, np)
	for j := range k {
		for p := range np {
			n := len(s.params[p].Values)
			u := (float64(perms[p][j]) + r.Float64()) / float64(k)
			target[p] = int32(min(int(u*float64(n)), n-1))
		}
		if i, ok := s.IndexOf(target); ok && !taken[i] {
			taken[i] = true
			out = append(out, i)
			continue
		}
		best, bestD := -1, math.Inf(1)
		for i := 0; i < s.n; i++ {
			if taken[i] {
				continue
			}
			row = s.IndexesTo(row, i)
			d := 0.0
			for p, t := range target {
				x := float64(row[p]-t) * scale[p]
				d += x * x
				if d >= bestD {
					break
				}
			}
			if d < bestD {
				best, bestD = i, d
			}
		}
		taken[best] = true
		out = append(out, best)
	}
	return out
}
