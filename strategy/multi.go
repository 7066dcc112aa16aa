package strategy

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"
)

// The multi-kernel procedures of multi-kernel-autotuning-performance-
// energy.md, section III.D: several kernels run together, each with its
// own occupancy-reduced, ordered candidate list D_i (Algorithm 3 steps
// 1–7, the reduction of Reduce applied to each kernel's own space), and
// one SM clock for the whole chip (Algorithm 4). A configuration of the
// combined space is one candidate per kernel (and a clock); every
// measurement is of all the kernels run together, and the procedures
// compare the whole plan's time (Algorithm 3) or energy (Algorithm 4).

func init() {
	Register("multi_occupancy_greedy", Needs{Kernels: true}, func(o Options) (Strategy, error) { return newMultiGreedy(o, false) })
	Register("multi_occupancy_greedy_energy", Needs{Kernels: true}, func(o Options) (Strategy, error) { return newMultiGreedy(o, true) })
	Register("multi_alone_greedy", Needs{Kernels: true, AloneTimes: true}, newMultiAloneGreedy)
}

// multiSpace maps a choice of one candidate per kernel and a clock onto
// the combined space.
type multiSpace struct {
	o     Options
	D     [][]Candidate // per kernel, indexes into its own space
	clock occClocks     // the chip's SM clock, highest first
	// clockValue[f] is the value index of clock position f.
	clockValue []int32
}

// index is the combined space's index of candidate d[k] of every kernel k
// at clock position f; every other parameter (a launch order, another
// GPU setting) at its first value. -1 when the combination is not in the
// space.
func (m *multiSpace) index(d []int, f int) int {
	ix := make([]int32, len(m.o.Space.Params()))
	for k, p := range m.o.Kernels {
		own := p.Space.Indexes(m.D[k][d[k]].Index)
		copy(ix[p.First:], own)
	}
	if m.clock.param >= 0 {
		ix[m.clock.param] = m.clockValue[f]
	}
	i, ok := m.o.Space.IndexOf(ix)
	if !ok {
		return -1
	}
	return i
}

func newMultiGreedy(o Options, energy bool) (Strategy, error) {
	name := "multi_occupancy_greedy"
	if energy {
		name = "multi_occupancy_greedy_energy"
	}
	minOcc, err := occMinParam(name, o.Params)
	if err != nil {
		return nil, err
	}
	c, err := occSpaceClocks(o)
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", name, err)
	}
	m := &multiSpace{o: o, clock: c, clockValue: make([]int32, len(c.mhz))}
	for v, f := range c.pos {
		m.clockValue[f] = int32(v)
	}
	var all []Candidate
	for _, p := range o.Kernels {
		if p.Target == nil || p.Target.Device == nil || p.Target.Geometry == nil || p.Space == nil {
			return nil, fmt.Errorf("strategy %s: kernel %s has no space or occupancy target", name, p.Name)
		}
		if got, want := len(p.Space.Params()), len(o.Space.Params())-p.First; p.First < 0 || got > want {
			return nil, fmt.Errorf("strategy %s: kernel %s's %d parameters do not fit the combined space from position %d", name, p.Name, got, p.First)
		}
		cands, err := ReduceKernel(p, minOcc)
		if err != nil {
			return nil, fmt.Errorf("strategy %s: kernel %s: %w", name, p.Name, err)
		}
		m.D = append(m.D, cands)
		all = append(all, cands...)
	}
	g := &occGreedy{name: name, memo: map[int]float64{}, kernelTimes: map[int][]float64{}, reduced: all, observe: "time"}
	var body func(measure func(int) float64) int
	if energy {
		g.observe = "energy"
		body = func(E func(int) float64) int { return multiAlgorithm4(m, E, g.timesOf) }
	} else {
		body = func(T func(int) float64) int { return multiAlgorithm3(m, T, g.timesOf) }
	}
	g.next, g.stop = iter.Pull(g.procedure(body))
	return g, nil
}

// ReduceKernel is the reduction of one kernel of several tuned together
// (Algorithm 3 steps 1–6): Reduce over the kernel's own space, except
// that a kernel none of whose distributions reaches minOccupancy keeps
// those of its highest occupancy ("store distributions with high
// occupancy in vector D_i"), since every kernel of the workload must run.
func ReduceKernel(p Part, minOccupancy float64) ([]Candidate, error) {
	o := Options{Space: p.Space}
	c, err := occSpaceClocks(o)
	if err != nil {
		return nil, err
	}
	cands, _, err := occReduceCapped(o, p.Target, p.Resources, occFilter{min: minOccupancy}, c, true)
	return cands, err
}

// byDecreasing orders the kernels by decreasing value of xs (a kernel
// with no value last), ties by kernel number.
func byDecreasing(xs []float64, n int) []int {
	K := make([]int, n)
	for i := range K {
		K[i] = i
	}
	v := func(i int) float64 {
		if i < len(xs) && !math.IsNaN(xs[i]) {
			return xs[i]
		}
		return math.Inf(-1)
	}
	sort.SliceStable(K, func(a, b int) bool { return v(K[a]) > v(K[b]) })
	return K
}

// walk is the single-kernel descent the multi-kernel procedures run for
// kernel k with the others held at delta (Algorithm 1 steps 6–11 for
// time, Algorithm 2 steps 12–21 for energy at a fixed clock): measure
// D_k in order while the plan's value keeps falling, return the
// candidate before the first rise, else the last.
func (m *multiSpace) walk(k int, delta []int, f int, measure func(int) float64) int {
	D := m.D[k]
	if len(D) == 1 {
		return 0
	}
	d := slices.Clone(delta)
	prev := 0.0
	for id := range D {
		d[k] = id
		v := measureAt(m.index(d, f), measure)
		if id > 0 && v > prev {
			return id - 1
		}
		prev = v
	}
	return len(D) - 1
}

// measureAt measures a combined index, +Inf for one not in the space.
func measureAt(i int, measure func(int) float64) float64 {
	if i < 0 {
		return math.Inf(1)
	}
	return measure(i)
}

// multiAlgorithm3 is Algorithm 3 (multi-kernel performance auto-tuning)
// at the highest clock: run every kernel at D_i[0] (step 8), order the
// kernels by decreasing time in that run (step 9), then for each kernel
// in that order find its best candidate with the others held (steps
// 10–11, Algorithm 1's walk); when a kernel other than the first changes
// its candidate, restart from the first (step 12). It returns the
// combined index of the final candidates. A restart into a choice
// already restarted from ends the procedure there: the paper's loop
// assumes it cannot cycle, which measurement noise does not guarantee.
func multiAlgorithm3(m *multiSpace, T func(int) float64, times func(int) []float64) int {
	n := len(m.D)
	delta := make([]int, n) // δ_i = D_i[0]
	first := m.index(delta, 0)
	measureAt(first, T)                // step 8
	K := byDecreasing(times(first), n) // step 9
	seen := map[string]bool{fmt.Sprint(delta): true}
	for i := 0; i < n; i++ { // step 10
		k := K[i]
		d := m.walk(k, delta, 0, T) // step 11
		if d == delta[k] {
			continue
		}
		delta[k] = d
		if i > 0 { // step 12
			key := fmt.Sprint(delta)
			if seen[key] {
				break
			}
			seen[key] = true
			i = -1
		}
	}
	return m.index(delta, 0)
}

// multiAlgorithm4 is Algorithm 4 (multi-kernel energy-aware auto-tuning):
// with every kernel at its current candidate, lower the chip's SM clock
// while the plan's energy falls (steps 4–10, the clock walk resuming
// where it stopped after a restart, as in Algorithm 2), then at that
// clock walk each kernel's candidates in order of decreasing energy
// (steps 11–14), and go back to the clock walk when a kernel other than
// the first changes (step 15). The energy of one kernel running with
// others is not measurable on one chip (one power sensor); step 12's
// order attributes the plan's energy to the kernels in proportion to
// their times, so it is the order of decreasing time. A space without an
// nvml_gr_clock parameter has one pseudo clock (the clocks as found):
// the procedure is then the energy walk over candidates alone. Cycles
// end the procedure as in multiAlgorithm3.
func multiAlgorithm4(m *multiSpace, E func(int) float64, times func(int) []float64) int {
	n, nf := len(m.D), len(m.clock.mhz)
	d := make([]int, n) // step 3
	iF := 0
	at := func(d []int, f int) float64 { return measureAt(m.index(d, f), E) }
	seen := map[string]bool{}
	for {
		var f int
		f, iF = clockWalk(iF, nf, func(f int) float64 { return at(d, f) }) // steps 4–10
		delta := slices.Clone(d)                                           // step 11
		at(delta, f)
		K := byDecreasing(times(m.index(delta, f)), n) // step 12
		restart := false
		for i := 0; i < n; i++ { // step 13
			k := K[i]
			dk := m.walk(k, delta, f, E) // step 14
			if dk == delta[k] {
				continue
			}
			delta[k] = dk
			if i > 0 { // step 15
				restart = true
				break
			}
		}
		key := fmt.Sprint(delta, f)
		if !restart || seen[key] {
			return m.index(delta, f) // step 17
		}
		seen[key] = true
		d = delta
	}
}

// newMultiAloneGreedy is multi_alone_greedy, gtune's variant of
// Algorithm 3 for GPUs where theoretical occupancy does not rank a
// kernel's configurations (Hopper: a 32-thread block reaches at most 50 %
// occupancy yet is often the fastest; BENCHMARKS.md, "Several kernels
// tuned together"). Steps 1–7 are replaced: each kernel's candidate list
// D_i is the configurations of its own space measured when it ran alone
// on this GPU (Part.AloneTimes, from the results database), fastest
// first; steps 8–13 are Algorithm 3's as multiAlgorithm3 implements them
// (every kernel at D_i[0], kernels in order of decreasing time in that
// plan, each walked while the plan's time falls, restarts on a change).
// The single-kernel results are prior knowledge, not charged to the run,
// as the transfer strategy's priors are. Errors: a kernel with no
// configuration measured alone (tune it first: gtune tune SPEC), a
// kernel that does not fit the combined space.
func newMultiAloneGreedy(o Options) (Strategy, error) {
	const name = "multi_alone_greedy"
	c, err := occSpaceClocks(o)
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", name, err)
	}
	if c.param >= 0 {
		return nil, fmt.Errorf("strategy %s tunes the kernels at one clock; the space tunes nvml_gr_clock (use multi_occupancy_greedy_energy)", name)
	}
	m := &multiSpace{o: o, clock: c, clockValue: make([]int32, len(c.mhz))}
	var all []Candidate
	for _, p := range o.Kernels {
		if p.Space == nil {
			return nil, fmt.Errorf("strategy %s: kernel %s has no space", name, p.Name)
		}
		if got, want := len(p.Space.Params()), len(o.Space.Params())-p.First; p.First < 0 || got > want {
			return nil, fmt.Errorf("strategy %s: kernel %s's %d parameters do not fit the combined space from position %d", name, p.Name, got, p.First)
		}
		D := AloneCandidates(p)
		if len(D) == 0 {
			return nil, fmt.Errorf("strategy %s: kernel %s has no configuration of its space measured alone on this GPU in the results database; tune it alone first (gtune tune SPEC)", name, p.Name)
		}
		m.D = append(m.D, D)
		all = append(all, D...)
	}
	g := &occGreedy{name: name, memo: map[int]float64{}, kernelTimes: map[int][]float64{}, reduced: all, observe: "time"}
	g.next, g.stop = iter.Pull(g.procedure(func(T func(int) float64) int { return multiAlgorithm3(m, T, g.timesOf) }))
	return g, nil
}

// AloneCandidates is multi_alone_greedy's candidate list of one kernel:
// the configurations of p.Space with a time measured alone
// (p.AloneTimes), fastest first, ties by index.
func AloneCandidates(p Part) []Candidate {
	var D []Candidate
	for i, t := range p.AloneTimes {
		if i < p.Space.Len() && !math.IsNaN(t) && !math.IsInf(t, 0) {
			D = append(D, Candidate{Index: i})
		}
	}
	sort.SliceStable(D, func(a, b int) bool { return p.AloneTimes[D[a].Index] < p.AloneTimes[D[b].Index] })
	return D
}
