package strategy

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/occupancy"
)

// The occupancy-guided strategies of multi-kernel-autotuning-performance-
// energy.md (section III): the search space is first reduced to the
// configurations of high theoretical occupancy (equations 1–5, Algorithm 1
// steps 1–5), then walked greedily in that order with the paper's stopping
// rules — Algorithm 1 for minimum time, Algorithm 2 for minimum energy
// over configuration × SM clock.

// ClockParam is the reserved name of the tunable parameter that is the SM
// (core) clock in MHz; it equals backend.ParamCoreClock (Kernel Tuner's
// cache name), repeated here so that strategies do not depend on the
// backend contract.
const ClockParam = "nvml_gr_clock"

// DefaultMinOccupancy is the default of the hyperparameter min_occupancy:
// the paper keeps "distributions with higher occupancy (e.g. occupancy >
// 80 %)" (section III.A).
const DefaultMinOccupancy = 0.8

// Target is what the occupancy-guided strategies need in Options.Target:
// the GPU, and each configuration's launch geometry, which the occupancy
// (threads per block) and the ordering (thread blocks in the grid) depend
// on and which only the spec knows.
type Target struct {
	Device *device.Description
	// Geometry gives configuration index's threads per thread block (the
	// product of the block dimensions) and thread blocks in the grid (the
	// product of the grid dimensions).
	Geometry func(index int) (threadsPerBlock, blocks int, err error)
}

// Candidate is one distribution of the reduced search space.
type Candidate struct {
	// Index is the space index of the distribution (for a space with an
	// nvml_gr_clock parameter: at its highest clock).
	Index             int
	Occupancy         float64 // theoretical occupancy, 0..1 (equation 5)
	ActiveBlocksPerSM int     // maxTB_SM (equation 1)
	ThreadsPerBlock   int
	Blocks            int // thread blocks in the grid
	Registers         int // per thread
	SharedMemory      int // bytes per thread block
}

// Chooser is implemented by strategies that, like the paper's procedures,
// end with one chosen configuration, which need not be the best measured.
type Chooser interface {
	// Choice is the space index the procedure returned; ok is false while
	// the search is not over.
	Choice() (index int, ok bool)
}

// occDist is one configuration of the parameters other than the SM
// clock, with the space index of each clock (-1 where the restrictions
// exclude it).
type occDist struct {
	byClock []int // aligned with occClocks.mhz
}

// occClocks lists the values of the SM-clock parameter, highest first; a
// space without one has a single pseudo clock (mhz 0).
type occClocks struct {
	param int // index of the parameter, -1 when absent
	mhz   []int
	pos   []int // value index of the parameter -> position in mhz
}

func occSpaceClocks(o Options) (occClocks, error) {
	c := occClocks{param: -1, mhz: []int{0}}
	for i, p := range o.Space.Params() {
		if p.Name != ClockParam {
			continue
		}
		c.param = i
		c.mhz = make([]int, len(p.Values))
		for j, v := range p.Values {
			n, ok := v.Int()
			if !ok || n <= 0 {
				return c, fmt.Errorf("tunable parameter %s holds %s; its values must be SM clocks in MHz (positive integers)", ClockParam, v.String())
			}
			c.mhz[j] = int(n)
		}
		order := make([]int, len(c.mhz))
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool { return c.mhz[order[a]] > c.mhz[order[b]] })
		c.pos = make([]int, len(order))
		sorted := make([]int, len(order))
		for k, j := range order {
			c.pos[j] = k
			sorted[k] = c.mhz[j]
		}
		c.mhz = sorted
	}
	return c, nil
}

// occDistributions groups the space by the parameters other than the clock,
// in space order of first appearance.
func occDistributions(o Options, c occClocks) []occDist {
	sp := o.Space
	var ds []occDist
	byKey := map[string]int{}
	for i := range sp.Len() {
		ix := sp.Indexes(i)
		k := 0
		if c.param >= 0 {
			k = c.pos[ix[c.param]]
			ix = slices.Clone(ix)
			ix[c.param] = -1
		}
		key := fmt.Sprint(ix)
		d, ok := byKey[key]
		if !ok {
			d = len(ds)
			byKey[key] = d
			bc := make([]int, len(c.mhz))
			for j := range bc {
				bc[j] = -1
			}
			ds = append(ds, occDist{byClock: bc})
		}
		ds[d].byClock[k] = i
	}
	return ds
}

// first is the index of the distribution at its highest available clock.
func (d occDist) first() int {
	for _, i := range d.byClock {
		if i >= 0 {
			return i
		}
	}
	return -1
}

// occTarget is Options.Target, checked (New has checked it is given).
func occTarget(name string, o Options) (*Target, error) {
	t := o.Target
	if t == nil || t.Device == nil || t.Geometry == nil {
		return nil, fmt.Errorf("strategy %s needs the GPU's description and each configuration's launch geometry (Options.Target)", name)
	}
	return t, nil
}

// Reduce is the occupancy-based reduction of the search space
// (multi-kernel-autotuning-performance-energy.md, Algorithm 1 steps 1–5):
// for every distribution (configuration of the parameters other than
// nvml_gr_clock) it computes maxTB_SM and the theoretical occupancy
// (equations 1–5, package occupancy) from the threads per block of
// t.Geometry and the registers per thread and shared memory per block of
// resources, keeps those with occupancy ≥ minOccupancy, and orders them
// by occupancy, highest first, then by thread blocks in the grid, fewest
// first, then by space index.
//
// The order reads step 5 ("non-decreasing order of occupancy (and thread
// block size)") together with the text, which starts from "the
// distribution with the best potential to provide the highest
// performance (D[0])", and Table IV: streamcluster on the K20c, with the
// four 100 %-occupancy block sizes 128–1024, needs 4 iterations to return
// 128 and on the GTX580 2 to return 1024, which holds only if the
// largest thread blocks (fewest blocks) come first.
//
// A distribution the device cannot launch (block too large, too many
// registers or too much shared memory) has occupancy 0. Errors: a nil
// resources function (the spec must declare the registers and shared
// memory, or the backend report them), an error of resources or
// geometry (naming the configuration), or no distribution reaching
// minOccupancy (naming the highest occupancy found).
func Reduce(o Options, t *Target, resources func(int) (int, int, error), minOccupancy float64) ([]Candidate, error) {
	c, err := occSpaceClocks(o)
	if err != nil {
		return nil, err
	}
	cands, _, err := occReduce(o, t, resources, minOccupancy, c)
	return cands, err
}

// ReduceRelative is Reduce with the threshold relative to each
// thread-block size (occFilter): a distribution is kept when its
// occupancy is at least minOccupancy times the highest any distribution
// of as many threads per block reaches. Errors: Reduce's.
func ReduceRelative(o Options, t *Target, resources func(int) (int, int, error), minOccupancy float64) ([]Candidate, error) {
	c, err := occSpaceClocks(o)
	if err != nil {
		return nil, err
	}
	cands, _, err := occReduceCapped(o, t, resources, occFilter{min: minOccupancy, relative: true}, c, false)
	return cands, err
}

func occReduce(o Options, t *Target, resources func(int) (int, int, error), minOccupancy float64, c occClocks) ([]Candidate, []occDist, error) {
	return occReduceCapped(o, t, resources, occFilter{min: minOccupancy}, c, false)
}

// occFilter is the reduction's threshold: the paper's, occupancy ≥ min
// (absolute), or relative to what each thread-block size can reach:
// occupancy ≥ min × the highest occupancy of any distribution with as
// many threads per block (issue 50: on an H100 the absolute threshold
// of 0.8 drops the 32-thread blocks, which cannot exceed 0.5, where
// particlefilter and streamcluster are fastest).
type occFilter struct {
	min      float64
	relative bool
}

// occReduceCapped is occReduce; with capped, a space none of whose
// distributions reaches minOccupancy keeps those of its highest
// occupancy instead of failing (the multi-kernel procedures: one kernel
// that cannot reach the threshold keeps its best distributions, the
// paper's "distributions with higher occupancy").
func occReduceCapped(o Options, t *Target, resources func(int) (int, int, error), f occFilter, c occClocks, capped bool) ([]Candidate, []occDist, error) {
	minOccupancy := f.min
	if resources == nil {
		return nil, nil, errors.New("the registers per thread and shared memory per thread block of every configuration are unknown: " +
			"the spec must declare them (Gtune.Simulation.Registers and SharedMemory expressions), or the backend report them")
	}
	ds := occDistributions(o, c)
	all := make([]Candidate, len(ds))
	best := 0.0
	for k, d := range ds {
		i := d.first()
		threads, blocks, err := t.Geometry(i)
		if err != nil {
			return nil, nil, fmt.Errorf("configuration %s: launch geometry: %w", o.Space.Key(i), err)
		}
		regs, smem, err := resources(i)
		if err != nil {
			return nil, nil, fmt.Errorf("configuration %s: registers and shared memory: %w", o.Space.Key(i), err)
		}
		cd := Candidate{Index: i, ThreadsPerBlock: threads, Blocks: blocks, Registers: regs, SharedMemory: smem}
		r, err := occupancy.Compute(t.Device, occupancy.Input{BlockSize: threads, RegistersPerThread: regs, SharedMemoryPerBlock: smem})
		if err == nil {
			cd.Occupancy, cd.ActiveBlocksPerSM = r.Occupancy, r.ActiveBlocksPerSM
		}
		best = math.Max(best, cd.Occupancy)
		all[k] = cd
	}
	if capped && best > 0 {
		minOccupancy = math.Min(minOccupancy, best)
	}
	bySize := map[int]float64{} // threads per block → the highest occupancy
	for _, cd := range all {
		bySize[cd.ThreadsPerBlock] = math.Max(bySize[cd.ThreadsPerBlock], cd.Occupancy)
	}
	var cands []Candidate
	var kept []occDist
	for k, cd := range all {
		threshold := minOccupancy
		if f.relative {
			threshold = minOccupancy * bySize[cd.ThreadsPerBlock]
		}
		if cd.Occupancy >= threshold && cd.ActiveBlocksPerSM > 0 {
			cands = append(cands, cd)
			kept = append(kept, ds[k])
		}
	}
	if len(cands) == 0 {
		return nil, nil, fmt.Errorf("no configuration of the %d reaches occupancy %.2f on %s (the highest is %g); lower the hyperparameter min_occupancy",
			len(ds), minOccupancy, t.Device.ID, best)
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := cands[order[a]], cands[order[b]]
		if x.Occupancy != y.Occupancy {
			return x.Occupancy > y.Occupancy
		}
		if x.Blocks != y.Blocks {
			return x.Blocks < y.Blocks
		}
		return x.Index < y.Index
	})
	outC := make([]Candidate, len(order))
	outD := make([]occDist, len(order))
	for k, i := range order {
		outC[k], outD[k] = cands[i], kept[i]
	}
	return outC, outD, nil
}

// occMinParam reads the hyperparameter min_occupancy (a number in
// (0, 1], default DefaultMinOccupancy) and rejects any other name.
func occMinParam(name string, p map[string]any) (float64, error) {
	f, err := occFilterParams(name, p, false)
	return f.min, err
}

// occFilterParams reads min_occupancy (a number in (0, 1], default
// DefaultMinOccupancy) and, where filter is true, occupancy_filter
// ("absolute", the paper's and the default, or "relative": occFilter),
// rejecting any other name.
func occFilterParams(name string, p map[string]any, filter bool) (occFilter, error) {
	out := occFilter{min: DefaultMinOccupancy}
	valid := "min_occupancy"
	if filter {
		valid = "min_occupancy, occupancy_filter"
	}
	for k, x := range p {
		if k == "occupancy_filter" && filter {
			switch x {
			case "absolute":
			case "relative":
				out.relative = true
			default:
				return out, fmt.Errorf("strategy %s: occupancy_filter must be absolute or relative, got %v", name, x)
			}
			continue
		}
		if k != "min_occupancy" {
			return out, fmt.Errorf("strategy %s has no hyperparameter %q (valid: %s)", name, k, valid)
		}
		var f float64
		switch n := x.(type) {
		case float64:
			f = n
		case int64:
			f = float64(n)
		case int:
			f = float64(n)
		default:
			return out, fmt.Errorf("strategy %s: min_occupancy must be a number in (0, 1], got %v (%T)", name, x, x)
		}
		if !(f > 0 && f <= 1) {
			return out, fmt.Errorf("strategy %s: min_occupancy must lie in (0, 1], got %v", name, f)
		}
		out.min = f
	}
	return out, nil
}

func init() {
	Register("occupancy_greedy", Needs{Target: true, Resources: true}, func(o Options) (Strategy, error) { return newOccGreedy(o, false) })
	Register("occupancy_greedy_energy", Needs{Target: true, Resources: true}, func(o Options) (Strategy, error) { return newOccGreedy(o, true) })
}

func newOccGreedy(o Options, energy bool) (Strategy, error) {
	name := "occupancy_greedy"
	if energy {
		name = "occupancy_greedy_energy"
	}
	filter, err := occFilterParams(name, o.Params, true)
	if err != nil {
		return nil, err
	}
	t, err := occTarget(name, o)
	if err != nil {
		return nil, err
	}
	c, err := occSpaceClocks(o)
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", name, err)
	}
	if energy && c.param < 0 {
		return nil, fmt.Errorf("strategy %s (Algorithm 2) tunes the SM clock: the spec needs a tunable parameter %s listing the clocks in MHz", name, ClockParam)
	}
	cands, ds, err := occReduceCapped(o, t, o.Resources, filter, c, false)
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", name, err)
	}
	g := &occGreedy{name: name, memo: map[int]float64{}, reduced: cands}
	observe := "time"
	if energy {
		observe = "energy"
	}
	g.observe = observe
	var body func(measure func(int) float64) int
	if energy {
		body = func(m func(int) float64) int { return occAlgorithm2(ds, len(c.mhz), m) }
	} else {
		// Algorithm 1 assumes the highest clock ("performance is maximized at
		// the highest operating frequency", section IV.A): first() is it.
		idx := make([]int, len(cands))
		for k, cd := range cands {
			idx[k] = cd.Index
		}
		body = func(m func(int) float64) int { return occAlgorithm1(idx, m) }
	}
	g.next, g.stop = iter.Pull(g.procedure(body))
	return g, nil
}

// occAlgorithm1 is steps 6–12 of Algorithm 1 (performance auto-tuning) over
// the ordered reduced space D (space indexes): walk D while the measured
// time T keeps falling and return the last configuration before the first
// rise (step 9), or the last of D when it never rises (step 12). A single
// distribution is still measured once, so that the run reports it
// (Table IV counts it as one iteration).
func occAlgorithm1(D []int, T func(int) float64) int {
	if len(D) > 1 { // step 6
		prev := 0.0
		for id := range D { // step 7
			t := T(D[id]) // step 8
			if id > 0 && t > prev {
				return D[id-1] // step 9
			}
			prev = t
		}
	} else {
		T(D[0])
	}
	return D[len(D)-1] // step 12
}

// occAlgorithm2 is Algorithm 2 (energy-aware auto-tuning) over the ordered
// reduced distributions D and nf clocks (position 0 the highest: F is
// walked from the highest clock down, as the text says: "reducing the GPU
// operating frequency F[i_f] ... as long as the reduction in the energy
// consumption is attained", with f_min = F[length(F)] the lowest). E gives
// the energy of a space index (+Inf for a pair the restrictions exclude).
// It returns the space index of the chosen distribution at the chosen
// clock. Measurements are memoised by the caller, so returning to step 4
// re-uses what was measured (the paper's T and E tables).
func occAlgorithm2(D []occDist, nf int, measure func(int) float64) int {
	E := func(d, f int) float64 {
		i := D[d].byClock[f]
		if i < 0 {
			return math.Inf(1)
		}
		return measure(i)
	}
	iF, d, fMin := 0, 0, nf-1 // step 3
	for {
		var f int
		f, iF = clockWalk(iF, nf, func(f int) float64 { return E(d, f) }) // steps 4–10
		// step 11: the clock is part of each configuration measured below.
		restart := false
		if len(D) > 1 { // step 12
			for id := range D { // step 13
				e := E(id, f)                 // step 14
				if id > 0 && e > E(id-1, f) { // step 15
					if d != id-1 && f != fMin { // step 16
						d = id - 1
						restart = true
						break
					}
					return D[id-1].byClock[f] // step 17
				}
			}
		}
		if !restart {
			if i := D[len(D)-1].byClock[f]; i >= 0 {
				return i // step 21
			}
			return D[d].byClock[f]
		}
	}
}

// clockWalk is steps 4–10 of Algorithms 2 and 4: from clock position iF
// (clocks highest first, nf of them) lower the clock while the energy
// e(f) falls; f is the clock before the first rise, else the lowest
// (f_min, step 10), and next is where the walk stopped, so that a restart
// of the procedure resumes there rather than at the highest clock.
func clockWalk(iF, nf int, e func(f int) float64) (f, next int) {
	f = -1
	for iF < nf && f == -1 { // step 5
		v := e(iF)                 // steps 6–7
		if iF > 0 && v > e(iF-1) { // step 8
			f = iF - 1
		} else {
			iF++
		}
	}
	if f == -1 { // step 10
		f = nf - 1
	}
	return f, iF
}

// occGreedy runs a procedure written as straight-line code (occAlgorithm1,
// occAlgorithm2) as an ask/tell strategy: the procedure is a coroutine
// (iter.Pull) that yields each configuration it needs measured and
// resumes when Tell brings the result.
type occGreedy struct {
	name    string
	observe string // the observation the procedure compares: time or energy; "": the run's objective (Score)
	reduced []Candidate
	next    func() (int, bool)
	stop    func()
	memo    map[int]float64
	// kernelTimes are the per-kernel times of each measured index (the
	// multi-kernel procedures order kernels by them).
	kernelTimes map[int][]float64
	// samples are the repeats' scores of each measured index
	// (Evaluation.Samples), where a procedure compares through the noise
	// (order_search); nil otherwise.
	samples map[int][]float64
	pending int
	waiting bool
	last    Evaluation
	done    bool
	choice  int
	chosen  bool
}

// errOccStopped unwinds a procedure whose strategy was stopped.
var errOccStopped = errors.New("strategy stopped")

func (g *occGreedy) procedure(body func(measure func(int) float64) int) iter.Seq[int] {
	return func(yield func(int) bool) {
		defer func() {
			if r := recover(); r != nil && r != errOccStopped { //nolint:errorlint // sentinel identity
				panic(r)
			}
		}()
		measure := func(i int) float64 {
			if v, ok := g.memo[i]; ok {
				return v
			}
			if !yield(i) {
				panic(errOccStopped)
			}
			v := math.Inf(1)
			if g.last.Valid && g.observe == "" {
				v = g.last.Score
			} else if g.last.Valid {
				if x, ok := g.last.Observations[g.observe]; ok && !math.IsNaN(x) {
					v = x
				}
			}
			g.memo[i] = v
			if g.kernelTimes != nil {
				g.kernelTimes[i] = g.last.KernelTimes
			}
			if g.samples != nil && g.last.Valid {
				g.samples[i] = g.last.Samples
			}
			return v
		}
		g.choice = body(measure)
		g.chosen = true
	}
}

func (g *occGreedy) Name() string { return g.name }

// timesOf gives the per-kernel times measured with index i (nil when it
// was not measured or reported none).
func (g *occGreedy) timesOf(i int) []float64 { return g.kernelTimes[i] }

// Next proposes the one configuration the procedure needs next; it
// returns nothing while that result is outstanding or once the procedure
// has returned.
func (g *occGreedy) Next(n int) []int {
	if g.done || g.waiting || n <= 0 {
		return nil
	}
	i, ok := g.next()
	if !ok {
		g.done = true
		g.stop()
		return nil
	}
	g.pending, g.waiting = i, true
	return []int{i}
}

// Tell passes the result of the outstanding configuration to the
// procedure; results of other indexes are ignored.
func (g *occGreedy) Tell(r Evaluation) {
	if !g.waiting || r.Index != g.pending {
		return
	}
	g.last, g.waiting = r, false
}

// Choice is the configuration the procedure returned.
func (g *occGreedy) Choice() (int, bool) { return g.choice, g.chosen }

// Reduced is the ordered reduced space the procedure walks.
func (g *occGreedy) Reduced() []Candidate { return g.reduced }
