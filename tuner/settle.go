package tuner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// SettleBiasPerC bounds how much lower a configuration's energy measured
// while the GPU warmed up can be than at the GPU's steady state, per °C
// below it: on a cold-started H100 the same configurations' energies
// rose 0.24–0.66 %/°C as the GPU warmed (BENCHMARKS.md, "Energy from a
// cold start"); 0.7 % bounds both calls.
const SettleBiasPerC = 0.007

// SettleMarginC is added to the temperature gap of a measurement made
// while the GPU warmed: the hottest reading of the run so far is not yet
// the steady temperature, °C.
const SettleMarginC = 2.0

// settling says whether the run re-measures under the settle thermal
// policy (measure.ThermalSettle): it measures energy and its objective
// reads it.
func (r *run) settling() bool {
	t := r.request.Trials
	if !r.request.Energy || t == nil || t.Thermal != measure.ThermalSettle {
		return false
	}
	s := r.sub.spec()
	if s == nil {
		s = &spec.Spec{} // a workload's objective is a built-in one
	}
	return s.ObjectiveNeedsEnergy(r.c.Objective.Name)
}

// warming says whether o was measured before its GPU reached a thermal
// steady state (observation thermal_steady 0).
func warming(o *Evaluation) bool {
	v, ok := o.Observations["thermal_steady"]
	return ok && v == 0
}

// unsettled are the configurations measured by this run while their GPU
// warmed (not in done) that could still be the best, best score first.
// A measurement ΔT °C below the GPU's steady temperature is optimistic by
// up to SettleBiasPerC·ΔT of its value (less leakage: less energy, more
// efficiency), ΔT taken as the hottest reading of its GPU in the run
// less its own, plus SettleMarginC; one made at a steady state is what it
// is. A configuration could be the best when its score as measured is
// no worse than the best of the pessimistic scores.
func (r *run) unsettled(done map[*Evaluation]bool) []*Evaluation {
	obj := r.c.Objective
	hot := map[string]float64{}
	var valid []*Evaluation
	for _, o := range r.sum.Evaluations {
		if !o.Valid() || o.Implausible != "" || math.IsInf(obj.Score(o.Value), 0) || math.IsNaN(o.Value) {
			continue
		}
		valid = append(valid, o)
		if t, ok := o.Observations["temperature"]; ok {
			hot[o.GPU] = math.Max(hot[o.GPU], t)
		}
	}
	gap := func(o *Evaluation) float64 {
		t, ok := o.Observations["temperature"]
		if !warming(o) || !ok {
			return 0
		}
		return math.Max(0, hot[o.GPU]-t) + SettleMarginC
	}
	bound := math.Inf(1)
	for _, o := range valid {
		s := obj.Score(o.Value)
		bound = math.Min(bound, s+math.Abs(s)*SettleBiasPerC*gap(o))
	}
	var out []*Evaluation
	for _, o := range valid {
		if warming(o) && !done[o] && o.evalID != 0 && obj.Score(o.Value) <= bound {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b *Evaluation) int { return cmp.Compare(obj.Score(a.Value), obj.Score(b.Value)) })
	return out
}

// settle re-measures, under the settle thermal policy, the configurations
// measured while their GPU warmed up that could still be the best
// (unsettled), once the GPU is at a steady state: each re-measurement
// asks for measure.Protocol.Settle, so a GPU the run has not yet brought
// to a steady state warms up first (ThermalSteady's slope, capped), and
// one it has goes on at once. The steady measurement replaces the
// evaluation's (store.DB.Remeasured; the warm one stays as a repeat,
// its energy as energy_warming), and rounds go on until no configuration
// that could be the best was measured warming. With Config.Repeat the
// re-measurement is as many repeats, their median (by time) standing
// for the configuration. Sets Summary.ThermalNote. Errors: the
// database's, every GPU failing.
func (r *run) settle() error {
	if !r.settling() {
		return nil
	}
	t0 := time.Now()
	warm := 0
	for _, o := range r.sum.Evaluations {
		if warming(o) && !o.Reused {
			warm++
		}
	}
	if warm == 0 {
		return nil
	}
	req := r.request
	tr := *req.Trials
	tr.Settle = true
	req.Trials = &tr
	done := map[*Evaluation]bool{}
	n := max(1, r.c.Repeat)
	remeasured := 0
	for r.ctx.Err() == nil {
		cands := r.unsettled(done)
		if len(cands) == 0 {
			break
		}
		if err := r.prepare(); err != nil {
			return err
		}
		outs := map[*Evaluation][]executor.Outcome{}
		var as []again
		for _, o := range cands {
			done[o] = true
			plan := r.planAgain(o, req)
			if plan == nil {
				continue
			}
			next, err := r.nextRepeat(o)
			if err != nil {
				return err
			}
			for k := range n {
				as = append(as, again{o: o, plan: plan, repeat: next + k})
			}
		}
		err := r.measureAgain("settle", as, func(a again, out executor.Outcome) error {
			outs[a.o] = append(outs[a.o], out)
			if len(outs[a.o]) < n {
				return nil
			}
			ok, err := r.resettle(a.o, outs[a.o], "energy_warming", "measured while the GPU warmed up (thermal policy settle)")
			if ok {
				remeasured++
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	r.sum.ThermalNote = fmt.Sprintf("settle: %d of %d configurations measured while the GPU warmed up could be the best; %d re-measured at a steady state in %.1f s", len(done), warm, remeasured, time.Since(t0).Seconds())
	return nil
}

// nextRepeat is the repeat number o's next measurement takes: after its
// stored repeats, else after this run's repeats (Config.Repeat).
func (r *run) nextRepeat(o *Evaluation) (int, error) {
	next := max(1, r.c.Repeat)
	reps, err := r.c.DB.Repeats(o.evalID)
	if err != nil {
		return 0, err
	}
	if len(reps) > 0 {
		next = max(next, reps[len(reps)-1].Repeat+1)
	}
	return next, nil
}

// resettle makes o's re-measurements outs (median by time) its
// measurement: stored as repeats, then as the evaluation's observations,
// metrics and objective value, the energy it replaces kept as the
// observation kept (how: its method). It reports whether o changed: not
// where no repeat was valid or observed the objective (o stays as it
// was). Errors: the database's.
func (r *run) resettle(o *Evaluation, outs []executor.Outcome, kept, how string) (bool, error) {
	var recs []store.Repeat
	for _, out := range outs {
		recs = append(recs, repeatOf(out, r.sum.Device.Backend))
	}
	if err := r.c.DB.AddRepeats(o.evalID, recs); err != nil {
		return false, err
	}
	out := medianRepeat(outs, nil)
	if _, ok := repeatTime(out); !ok {
		return false, nil
	}
	typed := objective.Observations(out.Result, 0, r.sum.Device.Backend)
	cfg := r.c.Space.Values(o.Index)
	obs := typed.Plan()
	metrics, _ := r.sub.metrics(obs, cfg)
	v, ok := r.c.Objective.Value(obs, metrics)
	if !ok {
		return false, nil
	}
	var plan measure.Observations
	for _, x := range typed {
		if x.Launch == measure.PlanScope {
			plan = append(plan, x)
		}
	}
	if e, ok := o.Observations["energy"]; ok {
		plan = append(plan, measure.Observation{Name: kept, Unit: "J", Value: e, Launch: measure.PlanScope, Method: how})
	}
	rm := store.Remeasurement{ID: o.evalID, Observations: plan, Metrics: metrics, Objective: &v}
	if len(r.c.GPUs) > 0 {
		rm.GPU = out.GPU
	}
	if err := r.c.DB.Remeasured(rm); err != nil {
		return false, err
	}
	for _, x := range plan {
		o.Observations[x.Name] = x.Value
	}
	o.Metrics, o.Value, o.Typed = metrics, v, typed
	o.slot = out.Slot
	if len(r.c.GPUs) > 0 {
		o.GPU = out.GPU
	}
	return true, nil
}

// remeasureUnstable measures again, once, each configuration this run
// measured with energy whose trials disagreed (observation unstable): a
// host still starting its compile processes has given energies 1.4–6.6
// times the configuration's (H100s, four runs at once: launches 3–20
// times their time while measuring energy), and a repeat is cheaper
// than a wrong ranking. The
// re-measurement replaces the measurement (resettle; the first energy
// kept as energy_unstable). Errors: the database's, every GPU failing.
func (r *run) remeasureUnstable() (int, error) {
	t := r.request.Trials
	if !r.request.Energy || t == nil || r.c.Repeat > 1 {
		// Repeats (Config.Repeat) stand for a configuration by their
		// median, which one unstable measurement does not move.
		return 0, nil
	}
	var as []again
	for _, o := range r.sum.Evaluations {
		if !o.Valid() || o.Reused || o.evalID == 0 || o.Observations["unstable"] != 1 {
			continue
		}
		if err := r.prepare(); err != nil {
			return 0, err
		}
		plan := r.planAgain(o, r.request)
		if plan == nil {
			continue
		}
		next, err := r.nextRepeat(o)
		if err != nil {
			return 0, err
		}
		as = append(as, again{o: o, plan: plan, repeat: next})
	}
	n := 0
	err := r.measureAgain("re-measuring unstable energies", as, func(a again, out executor.Outcome) error {
		ok, err := r.resettle(a.o, []executor.Outcome{out}, "energy_unstable", "the first measurement, whose trials disagreed (unstable)")
		if ok {
			n++
		}
		return err
	})
	return n, err
}

// repeatOf is out as a stored repeat: its status and plan-level
// observations (a failure: runtime_failed, none).
func repeatOf(out executor.Outcome, backendName string) store.Repeat {
	rec := store.Repeat{Repeat: out.Trial.Repeat, GPU: out.GPU}
	switch {
	case out.Err != nil:
		rec.Status = string(backend.StatusRuntimeFailed)
	case out.Result != nil:
		rec.Status = string(out.Result.Status)
		rec.Observations = objective.Observations(out.Result, 0, backendName).Plan()
	}
	return rec
}
