package strategy

import "math"

// simulated_annealing after Kernel Tuner's strategy (Schoonhoven et al.,
// IEEE TEC 2022, Sec. III-B): a random walk over neighbours that always
// accepts a better configuration and accepts a worse one with probability
// exp(-((new-old)/old)/T) — the relative difference, so the temperature
// does not depend on the objective's unit. The temperature falls
// geometrically from T to T_min, reaching T_min at the end of the budget
// when Options.Budget is known; at T_min the walk reheats to T from the
// best configuration found. Sequential: one proposal at a time.
//
// Hyperparameters:
//   - T: initial temperature (default 1.0)
//   - T_min: final temperature (default 0.001)
//   - alpha: cooling factor per step when the budget is unknown
//     (default 0.995)
//   - maxiter: proposals per temperature (default 1)
//   - neighbor: "Hamming" (default), "adjacent" or "strictly-adjacent"
type simulatedAnnealing struct {
	t               *tracker
	neigh           func(int) []int
	T0, Tmin, alpha float64
	maxiter         int
	temp            float64
	steps           int
	cur             int
	curScore        float64
	waiting         int
}

func init() { Register("simulated_annealing", Needs{}, newSimulatedAnnealing) }

func newSimulatedAnnealing(o Options) (Strategy, error) {
	h, err := newHyper("simulated_annealing", o.Params, "T", "T_min", "alpha", "maxiter", "neighbor")
	if err != nil {
		return nil, err
	}
	T0 := h.float("T", 1, 1e-12, 1e12)
	Tmin := h.float("T_min", 0.001, 1e-15, 1e12)
	alpha := h.float("alpha", 0.995, 1e-6, 1-1e-12)
	maxiter := h.int("maxiter", 1, 1, 1<<20)
	kind := h.choice("neighbor", "Hamming", neighborKinds...)
	if h.err != nil {
		return nil, h.err
	}
	if Tmin >= T0 {
		return nil, errorf("simulated_annealing: T_min (%g) must be below T (%g)", Tmin, T0)
	}
	if o.Budget > 0 {
		// Cool from T0 to Tmin over the budget.
		alpha = math.Pow(Tmin/T0, float64(maxiter)/float64(o.Budget))
	}
	return &simulatedAnnealing{t: newTracker(o.Space, newRand(o.Seed, 13)), neigh: neighborFunc(o.Space, kind),
		T0: T0, Tmin: Tmin, alpha: alpha, maxiter: maxiter, temp: T0, cur: -1, curScore: math.Inf(1), waiting: -1}, nil
}

func (s *simulatedAnnealing) Name() string { return "simulated_annealing" }

func (s *simulatedAnnealing) Next(n int) []int {
	if n <= 0 || s.t.pending() > 0 {
		return nil
	}
	for free := 0; ; free++ {
		var c int
		if s.cur < 0 || free > 200 {
			// Start, or the walk is stuck among evaluated configurations.
			var ok bool
			if c, ok = s.t.randomFresh(); !ok {
				return nil
			}
			free = 0
		} else {
			nb := s.neigh(s.cur)
			if len(nb) == 0 {
				s.cur = -1
				continue
			}
			c = nb[s.t.rng.IntN(len(nb))]
		}
		if sc, ok := s.t.known(c); ok {
			s.step(c, sc)
			continue
		}
		s.t.propose(c)
		s.waiting = c
		return []int{c}
	}
}

// step applies the acceptance rule and the cooling schedule.
func (s *simulatedAnnealing) step(c int, sc float64) {
	if s.cur < 0 || accept(s.curScore, sc, s.temp, s.t.rng.Float64()) {
		s.cur, s.curScore = c, sc
	}
	s.steps++
	if s.steps%s.maxiter == 0 {
		s.temp *= s.alpha
		if s.temp < s.Tmin {
			s.temp = s.T0
			if s.t.best >= 0 {
				s.cur, s.curScore = s.t.best, s.t.bestScore
			}
		}
	}
}

// accept is Kernel Tuner's acceptance probability on relative cost.
func accept(old, new, T, u float64) bool {
	if new < old || math.IsInf(old, 1) {
		return !math.IsInf(new, 1) || math.IsInf(old, 1)
	}
	if math.IsInf(new, 1) {
		return false
	}
	rel := (new - old) / math.Abs(old)
	return u < math.Exp(-rel/T)
}

func (s *simulatedAnnealing) Tell(r Evaluation) {
	sc := s.t.tell(r)
	if math.IsNaN(sc) || r.Index != s.waiting {
		return
	}
	s.waiting = -1
	s.step(r.Index, sc)
}
