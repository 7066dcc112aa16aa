// Package shard splits a search space into disjoint shards, each tuned
// by its own job where jobs cannot talk to each other (a Slurm array
// job: gtune slurm submit --shards K), and merges the shards' results
// databases into one, as if one run had tuned the whole space (gtune
// merge).
//
// A shard is every K-th configuration of the space in its canonical
// order (index mod K), so that each shard holds a similar mix of the
// space's regions and the shards of one space take similar times.
// Strategies that split this way are those whose choice of a
// configuration does not depend on the others' results: brute force,
// and random sampling within the shard.
package shard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gtune/gtune/space"
)

// Spec names shard Index (0-based) of Count.
type Spec struct{ Index, Count int }

// Parse reads "I/K" (0 <= I < K). Errors name the text and what is
// wanted.
func Parse(s string) (Spec, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	k, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || k < 1 || i < 0 || i >= k {
		return Spec{}, fmt.Errorf("shard %q: want I/K, shard I (0 to K-1) of K, e.g. 0/4", s)
	}
	return Spec{Index: i, Count: k}, nil
}

func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Indexes are the configuration numbers of sp's shard s: i with
// i mod s.Count = s.Index, ascending.
func Indexes(n int, s Spec) []int {
	var out []int
	for i := s.Index; i < n; i += s.Count {
		out = append(out, i)
	}
	return out
}

// Of is the search space of shard s of sp (space.Subset of Indexes).
// Errors: a shard with no configuration (more shards than
// configurations).
func Of(sp *space.Space, s Spec) (*space.Space, error) {
	idx := Indexes(sp.Len(), s)
	if len(idx) == 0 {
		return nil, fmt.Errorf("shard %s of a search space of %d configurations is empty: give at most %d shards", s, sp.Len(), sp.Len())
	}
	return sp.Subset(idx)
}
