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
	Tell(r Evaluation)
}

// Evaluation is what a strategy learns about one evaluated configuration
// (the tuner's tuner.Evaluation, reduced to scores).
type Evaluation struct {
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
	// Objectives are the scores (lower is better) of each of the run's
	// objectives, in order (Options.Objectives of them); +Inf where one
	// was not observed or the configuration is invalid. Multi-objective
	// strategies search on these.
	Objectives []float64
	// KernelTimes are, for several kernels tuned together, each kernel's
	// time in the plan (ms, by kernel of Options.Kernels; NaN where
	// unknown); nil otherwise.
	KernelTimes []float64
	// Samples are the score (lower is better) of each repeat when the
	// configuration was measured several times (tune --repeat N), in
	// repeat order; nil for one measurement. Score is their median
	// repeat's (by time).
	Samples []float64
}

// Options are the settings every strategy receives.
type Options struct {
	Space *space.Space // the search space; Space.Len() configurations
	Seed  uint64       // makes the strategy deterministic
	// Params are hyperparameters by name (from the command line or the
	// spec's T1 Search.Attributes). A strategy rejects names it does not
	// know, listing the valid ones.
	Params map[string]any
	// Budget is the number of evaluations the run allows (0: unknown).
	Budget int
	// Batch is how many configurations the caller measures at once (the
	// GPUs of a run over several); 0 or 1: one. A strategy that waits
	// for each result before its next proposal (bayes_opt) keeps up to
	// Batch outstanding instead; one that proposes a generation at a
	// time needs nothing of it.
	Batch int

	// What a strategy declares in its Needs, provided by the caller only
	// then (New checks):

	// Resources gives a configuration's registers per thread and shared
	// memory per thread block (static + dynamic, bytes) without running
	// it — from earlier measurements, compilation or the spec's
	// declarations (tuner.ResourceProvider).
	Resources func(index int) (registers, sharedMemory int, err error)
	// Target is the GPU's description and each configuration's launch
	// geometry (occupancy).
	Target *Target
	// Priors are the kernel's times on other GPUs (transfer), loaded by
	// the caller.
	Priors []PriorTimes
	// Objectives is the number of objectives the run scores every
	// configuration on (Evaluation.Objectives); 0 counts as 1.
	Objectives int
	// Kernels are the kernels of a workload tuned together, each with
	// its own space, occupancy target and resources (Needs.Kernels).
	Kernels []Part
}

// Part is one kernel of several tuned together over a combined space
// (package workload): where its parameters sit in Options.Space and what
// the occupancy-guided reduction needs of it, over its own space.
type Part struct {
	Name string
	// Space is the kernel's own search space; its parameters are those
	// of the combined space from position First on, in the same order
	// and with the same values.
	Space *space.Space
	First int
	// Target and Resources are as Options.Target and Options.Resources,
	// over Space.
	Target    *Target
	Resources func(index int) (registers, sharedMemory int, err error)
	// AloneTimes[i] is the time (ms) of configuration i of Space when the
	// kernel ran alone on this GPU, NaN where it was not measured or
	// failed; nil unless a strategy needs it (Needs.AloneTimes).
	AloneTimes []float64
}

// Needs is what a strategy needs besides the search space, the seed and
// its hyperparameters, declared when it registers (as a gonum/optimize
// Method declares what it Uses): the caller provides what is declared,
// and New refuses a strategy whose needs are not met, saying what is
// missing.
type Needs struct {
	Target     bool // Options.Target: the GPU's description and the launch geometry
	Resources  bool // Options.Resources: compiled registers and shared memory
	Priors     bool // Options.Priors: the kernel's times on other GPUs
	Objectives int  // at least this many objectives (multi-objective search); 0: one score
	// Exhaustive: it visits configurations in a fixed order whatever the
	// seed (brute force); comparisons of search efficiency leave it out.
	Exhaustive bool
	// Kernels: Options.Kernels, the kernels of a workload (each with
	// Target and Resources).
	Kernels bool
	// AloneTimes: Part.AloneTimes, each kernel's times run alone on this
	// GPU (from the results database); implies Kernels.
	AloneTimes bool
	// Orders: a space with a launch-order parameter (gtune tune WORKLOAD
	// --orders); it searches nothing else.
	Orders bool
}

// Factory makes a strategy; it returns an error for bad hyperparameters.
type Factory func(Options) (Strategy, error)

type entry struct {
	needs Needs
	make  Factory
}

var (
	regMu    sync.Mutex
	registry = map[string]entry{}
)

// Register makes a strategy available by name, with what it needs.
// Strategies register in an init function of their own file; a second
// registration of a name panics.
func Register(name string, needs Needs, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("strategy: " + name + " registered twice")
	}
	registry[name] = entry{needs, f}
}

// NeedsOf returns what the named strategy needs. Errors: an unknown
// name, listing the valid ones.
func NeedsOf(name string) (Needs, error) {
	regMu.Lock()
	e, ok := registry[name]
	regMu.Unlock()
	if !ok {
		return Needs{}, fmt.Errorf("unknown strategy %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return e.needs, nil
}

func init() {
	Register("brute_force", Needs{Exhaustive: true}, func(o Options) (Strategy, error) {
		if err := NoParams("brute_force", o.Params); err != nil {
			return nil, err
		}
		return &bruteForce{size: o.Space.Len()}, nil
	})
	Register("random_sample", Needs{}, func(o Options) (Strategy, error) {
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

// New makes the named strategy. Errors: an unknown name (listing the
// valid ones), a need it declared that o does not meet (naming it), bad
// hyperparameters.
func New(name string, o Options) (Strategy, error) {
	regMu.Lock()
	e, ok := registry[name]
	regMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown strategy %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	n := e.needs
	switch {
	case n.Target && (o.Target == nil || o.Target.Device == nil || o.Target.Geometry == nil):
		return nil, fmt.Errorf("strategy %s needs the GPU's description from the device database and each configuration's launch geometry; none was given (is the GPU in the device database? gtune devices --all)", name)
	case n.Resources && o.Resources == nil:
		return nil, fmt.Errorf("strategy %s needs each configuration's registers and shared memory (compiled resources); none were given", name)
	case n.Priors && len(o.Priors) == 0:
		return nil, fmt.Errorf("strategy %s needs the kernel's times on other GPUs: its hyperparameter prior is required (Kernel Tuner caches of the same kernel, --strategy-param prior=PATH[,PATH...])", name)
	case n.Kernels && len(o.Kernels) == 0:
		return nil, fmt.Errorf("strategy %s tunes several kernels run together: give it a workload file (gtune tune WORKLOAD), not a spec", name)
	case n.Objectives > max(o.Objectives, 1):
		return nil, fmt.Errorf("strategy %s searches %d objectives at once; the run has %d (e.g. --objective time,energy)", name, n.Objectives, max(o.Objectives, 1))
	}
	return e.make(o)
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

func (b *bruteForce) Tell(Evaluation) {}

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

func (r *randomSample) Tell(Evaluation) {}
