package strategy

import (
	"math"
	"slices"
	"sort"
)

// nsga2 is a multi-objective search for the Pareto front of time × energy
// (Deb et al., "A fast and elitist multiobjective genetic algorithm:
// NSGA-II", IEEE TEC 6(2), 2002): fast non-dominated sorting, crowding
// distance, elitist (µ+λ) survival and binary tournaments on (rank,
// crowding distance); children by crossover and per-gene mutation over
// value indexes, repaired to the nearest fresh valid configuration. It
// minimises the run's first two objectives (Evaluation.Objectives, e.g. time
// and energy), not Score; invalid configurations, and valid ones lacking
// either, are dominated by every other. One generation per
// Next/Tell round. The front found is ParetoFront(s).
//
// Hyperparameters:
//   - popsize: population size (default 20)
//   - mutation_chance: each gene mutates with probability 1/mutation_chance
//     (default 10)
//   - method: crossover, "uniform" (default), "single_point", "two_point"
//     or "disruptive_uniform"
type nsga2 struct {
	t *tracker
	d popDriver
	evolution
	sizes    []int
	obj      map[int][2]float64
	pop      []int
	rank     map[int]int
	crowd    map[int]float64
	children []int
}

func init() { Register("nsga2", Needs{Objectives: 2}, newNSGA2) }

func newNSGA2(o Options) (Strategy, error) {
	e, err := evolutionHyper("nsga2", o.Params, o.Batch)
	if err != nil {
		return nil, err
	}
	s := &nsga2{
		evolution: e,
		sizes:     dims(o.Space),
		obj:       map[int][2]float64{},
	}
	s.t = newTracker(o.Space, newRand(o.Seed, 19))
	s.d = popDriver{t: s.t, advance: s.advance}
	return s, nil
}

func (s *nsga2) Name() string     { return "nsga2" }
func (s *nsga2) Next(n int) []int { return s.d.next(n) }

func (s *nsga2) Tell(r Evaluation) {
	if math.IsNaN(s.t.tell(r)) {
		return
	}
	o := [2]float64{math.Inf(1), math.Inf(1)}
	if r.Valid && len(r.Objectives) >= 2 && !math.IsNaN(r.Objectives[0]) && !math.IsNaN(r.Objectives[1]) {
		o = [2]float64{r.Objectives[0], r.Objectives[1]}
	}
	s.obj[r.Index] = o
}

func (s *nsga2) objectives(i int) [2]float64 {
	if o, ok := s.obj[i]; ok {
		return o
	}
	return [2]float64{math.Inf(1), math.Inf(1)}
}

func dominates(a, b [2]float64) bool {
	return a[0] <= b[0] && a[1] <= b[1] && (a[0] < b[0] || a[1] < b[1])
}

// fronts is fast non-dominated sorting (Deb et al. 2002, Sec. III-A) of
// points; it gives the fronts as indexes into points, best first.
func fronts(points [][2]float64) [][]int {
	n := len(points)
	dominatedBy := make([][]int, n)
	count := make([]int, n)
	var cur []int
	for p := 0; p < n; p++ {
		for q := 0; q < n; q++ {
			if dominates(points[p], points[q]) {
				dominatedBy[p] = append(dominatedBy[p], q)
			} else if dominates(points[q], points[p]) {
				count[p]++
			}
		}
		if count[p] == 0 {
			cur = append(cur, p)
		}
	}
	var out [][]int
	for len(cur) > 0 {
		out = append(out, cur)
		var next []int
		for _, p := range cur {
			for _, q := range dominatedBy[p] {
				if count[q]--; count[q] == 0 {
					next = append(next, q)
				}
			}
		}
		cur = next
	}
	return out
}

// crowding gives the crowding distance of each member of one front
// (Deb et al. 2002, Sec. III-B).
func crowding(points [][2]float64, front []int) []float64 {
	d := make([]float64, len(front))
	for m := 0; m < 2; m++ {
		order := make([]int, len(front))
		for k := range order {
			order[k] = k
		}
		sort.SliceStable(order, func(a, b int) bool { return points[front[order[a]]][m] < points[front[order[b]]][m] })
		lo, hi := points[front[order[0]]][m], points[front[order[len(order)-1]]][m]
		d[order[0]], d[order[len(order)-1]] = math.Inf(1), math.Inf(1)
		if hi <= lo || math.IsInf(hi-lo, 0) {
			continue
		}
		for k := 1; k < len(order)-1; k++ {
			d[order[k]] += (points[front[order[k+1]]][m] - points[front[order[k-1]]][m]) / (hi - lo)
		}
	}
	return d
}

func (s *nsga2) advance() {
	r := s.t.rng
	if s.pop == nil {
		for _, i := range initial(s.t, s.popsize) {
			if j := s.d.add(i); j >= 0 {
				s.pop = append(s.pop, j)
			}
		}
		s.rank, s.crowd = map[int]int{}, map[int]float64{}
		return
	}
	all := append(slices.Clone(s.pop), s.children...)
	pts := make([][2]float64, len(all))
	for k, i := range all {
		pts[k] = s.objectives(i)
	}
	s.pop = s.pop[:0]
	s.rank, s.crowd = map[int]int{}, map[int]float64{}
	for rk, f := range fronts(pts) {
		cd := crowding(pts, f)
		order := make([]int, len(f))
		for k := range order {
			order[k] = k
		}
		sort.SliceStable(order, func(a, b int) bool { return cd[order[a]] > cd[order[b]] })
		for _, k := range order {
			if len(s.pop) == s.popsize {
				break
			}
			i := all[f[k]]
			s.pop = append(s.pop, i)
			s.rank[i], s.crowd[i] = rk, cd[k]
		}
	}
	tournament := func() []float64 {
		a, b := s.pop[r.IntN(len(s.pop))], s.pop[r.IntN(len(s.pop))]
		if s.rank[b] < s.rank[a] || s.rank[b] == s.rank[a] && s.crowd[b] > s.crowd[a] {
			a = b
		}
		return point(s.t.sp, a)
	}
	s.children = s.children[:0]
	for len(s.children) < s.popsize {
		c := crossover(s.method, tournament(), tournament(), r)
		for p := range c {
			if r.IntN(s.mutation) == 0 {
				c[p] = float64(r.IntN(s.sizes[p]))
			}
		}
		j := s.d.addPoint(c)
		if j < 0 {
			return
		}
		s.children = append(s.children, j)
	}
}

// ParetoFront gives the configurations on the Pareto front of the first
// two objectives among all configurations evaluated so far, sorted by the
// first (ties by the second, then index): those no other valid evaluated
// configuration dominates. Duplicated objective pairs are all kept. The
// run's own front (tuner.Summary.Front) is computed from every
// evaluation with objective.ParetoFront; this one is the search's state.
func (s *nsga2) ParetoFront() []int {
	var idx []int
	var pts [][2]float64
	for i, o := range s.obj {
		if !math.IsInf(o[0], 0) && !math.IsInf(o[1], 0) {
			idx = append(idx, i)
			pts = append(pts, o)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	f := fronts(pts)[0]
	out := make([]int, len(f))
	for k, p := range f {
		out[k] = idx[p]
	}
	sort.Slice(out, func(a, b int) bool {
		oa, ob := s.obj[out[a]], s.obj[out[b]]
		if oa[0] != ob[0] {
			return oa[0] < ob[0]
		}
		if oa[1] != ob[1] {
			return oa[1] < ob[1]
		}
		return out[a] < out[b]
	})
	return out
}
