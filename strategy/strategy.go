// Package strategy holds the search methods. Every strategy speaks one small
// ask/tell interface over indexes into a space.Space, so the same strategy
// runs live on a GPU, on the simulated GPU or against a replayed cache.
package strategy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/gtune/gtune/space"
)

// Strategy proposes configurations and learns from their results.
type Strategy interface {
	// Name is the strategy's name as given on the command line.
	Name() string
	// Next proposes up to n configurations (indexes into the space) that it
	// has not proposed before. It returns an empty slice when the search is
	// over. A strategy that needs results before proposing more may return
	// fewer than n (but at least one while the search is not over, unless
	// results it is waiting for are still outstanding).
	Next(n int) []int
	// Tell reports the result of a configuration Next proposed.
	Tell(r Result)
}

// Result is what a strategy learns about one configuration.
type Result struct {
	Index int
	// Score is the objective oriented so that lower is better
	// (objective.Objective.Score); +Inf for invalid configurations.
	Score float64
	// Valid is false for configurations that failed to compile, launch,
	// run or verify.
	Valid bool
	// Observations are the measured quantities by name (time ms, energy J,
	// power W, registers, shared_memory, ...: spec.ObservationNames); nil
	// for configurations that did not run.
	Observations map[string]float64
}

// Options are the settings every strategy receives.
type Options struct {
	Space *space.Space // the search space; Space.Len() configurations
	Seed  uint64       // makes the strategy deterministic
	// Params are hyperparameters by name (from the command line or the
	// spec's T1 Search.Attributes). A strategy rejects names it does not
	// know, listing the valid ones.
	Params map[string]any
	// Resources, when set, gives a configuration's registers per thread and
	// shared memory per thread block (static + dynamic, bytes) without
	// running it — from earlier measurements, compilation or the spec's
	// declarations (tuner.ResourceProvider). Occupancy-guided strategies
	// need it.
	Resources func(index int) (registers, sharedMemory int, err error)
	// Device describes the GPU for strategies that reason about it (e.g.
	// occupancy); may be nil.
	Device any
	// Budget is the number of evaluations the run allows (0: unknown).
	Budget int
	// Priors are the kernel's times on other GPUs, for strategies that
	// learn from them (transfer), loaded by the caller; may be nil.
	Priors []PriorTimes
}

// Factory makes a strategy; it returns an error for bad hyperparameters.
type Factory func(Options) (Strategy, error)

var (
	regMu    sync.Mutex
	registry = map[string]Factory{}
)

// Register makes a strategy available by name. Strategies register in an
// init function of their own file; a second registration of a name panics.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("strategy: " + name + " registered twice")
	}
	registry[name] = f
}

func init() {
	Register("brute_force", func(o Options) (Strategy, error) {
		if err := NoParams("brute_force", o.Params); err != nil {
			return nil, err
		}
		return &bruteForce{size: o.Space.Len()}, nil
	})
	Register("random_sample", func(o Options) (Strategy, error) {
		if err := NoParams("random_sample", o.Params); err != nil {
			return nil, err
		}
		return newRandomSample(o), nil
	})
}

// Names lists the known strategies, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
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
	regMu.Lock()
	f, ok := registry[name]
	regMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown strategy %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return f(o)
}

// NoParams is the hyperparameter check of a strategy that has none.
func NoParams(name string, p map[string]any) error {
	for k := range p {
		return fmt.Errorf("strategy %s has no hyperparameter %q (it has none)", name, k)
	}
	return nil
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

func (b *bruteForce) Tell(Result) {}

// randomSample draws configurations uniformly without replacement: a
// seeded permutation of the space, so a budget of k evaluations is a uniform
// sample of k distinct configurations.
type randomSample struct {
	perm []int
	next int
}

func newRandomSample(o Options) *randomSample {
	r := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	return &randomSample{perm: r.Perm(o.Space.Len())}
}

func (r *randomSample) Name() string { return "random_sample" }

func (r *randomSample) Next(n int) []int {
	end := min(r.next+n, len(r.perm))
	out := append([]int(nil), r.perm[r.next:end]...)
	r.next = end
	return out
}

func (r *randomSample) Tell(Result) {}
