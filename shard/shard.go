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
	"io"
	"strconv"
	"strings"

	"github.com/gtune/gtune/internal/badinput"
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

// Restrictor checks a --shard value (text, "I/K"; "" for none) against
// the run's strategy before any GPU work: the shards tune apart, so only
// a strategy whose choices within a shard do not depend on the other
// shards' results (brute_force, random_sample) splits a space. It
// returns what restricts the final search space to the shard (the
// identity without one), saying on log how much of it the shard holds.
// Errors (bad input, badinput): a malformed value, a learning strategy,
// a shard of an empty space.
func Restrictor(text, strategyName string) (func(log io.Writer, sp *space.Space) (*space.Space, error), error) {
	if text == "" {
		return func(_ io.Writer, sp *space.Space) (*space.Space, error) { return sp, nil }, nil
	}
	sh, err := Parse(text)
	if err != nil {
		return nil, badinput.New("--shard: %v", err)
	}
	if strategyName != "brute_force" && strategyName != "random_sample" {
		return nil, badinput.New("--shard %s: strategy %s learns from every result; shards tune apart, so only brute_force and random_sample split a space (for one run over many GPUs use --devices, or gtune slurm submit without --shards)", text, strategyName)
	}
	return func(log io.Writer, sp *space.Space) (*space.Space, error) {
		sub, err := Of(sp, sh)
		if err != nil {
			return nil, badinput.New("--shard: %v", err)
		}
		fmt.Fprintf(log, "gtune: shard %s: %d of the search space's %d configurations\n", sh, sub.Len(), sp.Len())
		return sub, nil
	}, nil
}
