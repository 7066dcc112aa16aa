// Package strategy holds the search methods. Every strategy speaks one small
// ask/tell interface over indexes into a space.Space, so the same strategy
// runs live on a GPU, on the simulated GPU or against a replayed cache.
package strategy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// Strategy proposes configurations and learns from their results.
type Strategy interface {
	// Name is the strategy's name as given on the command line.
	Name() string
	// Next proposes up to n configurations (indexes into the space) that it
	// has not proposed before. It returns an empty slice when the search is
	// over. A strategy that needs results before proposing more may return
	// fewer than n.
	Next(n int) []int
	// Tell reports the score of a configuration Next proposed: lower is
	// better (objective.Objective.Score); valid is false for configurations
	// that failed to compile, launch, run or verify.
	Tell(index int, score float64, valid bool)
}

// Options are the settings every strategy receives.
type Options struct {
	Size int    // number of valid configurations in the space
	Seed uint64 // makes the strategy deterministic
}

type factory func(Options) Strategy

var registry = map[string]factory{
	"brute_force":   func(o Options) Strategy { return &bruteForce{size: o.Size} },
	"random_sample": func(o Options) Strategy { return newRandomSample(o) },
}

// Names lists the known strategies, sorted.
func Names() []string {
	var ns []string
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// New makes the named strategy. An unknown name is an error listing the
// valid ones.
func New(name string, o Options) (Strategy, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown strategy %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return f(o), nil
}

// bruteForce walks the space in its construction order.
type bruteForce struct {
	size, next int
}

func (b *bruteForce) Name() string { return "brute_force" }

func (b *bruteForce) Next(n int) []int {
	var out []int
	for ; n > 0 && b.next < b.size; n-- {
		out = append(out, b.next)
		b.next++
	}
	return out
}

func (b *bruteForce) Tell(int, float64, bool) {}

// randomSample draws configurations uniformly without replacement: a
// seeded permutation of the space, so a budget of k evaluations is a uniform
// sample of k distinct configurations.
type randomSample struct {
	perm []int
	next int
}

func newRandomSample(o Options) *randomSample {
	r := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	return &randomSample{perm: r.Perm(o.Size)}
}

func (r *randomSample) Name() string { return "random_sample" }

func (r *randomSample) Next(n int) []int {
	end := min(r.next+n, len(r.perm))
	out := append([]int(nil), r.perm[r.next:end]...)
	r.next = end
	return out
}

func (r *randomSample) Tell(int, float64, bool) {}
