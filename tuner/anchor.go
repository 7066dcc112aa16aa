package tuner

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
)

// AnchorEvery is how many configurations a GPU measures between two
// measurements of the anchor under measure.ThermalAnchor. One energy
// measurement takes about 0.5 s on an H100 (BENCHMARKS.md, "Energy from
// a cold start"), so the anchor adds an eighth to the measuring and
// follows the GPU every few seconds: vector_add's 96 configurations take
// about 57 s on one H100.
const AnchorEvery = 8

// anchors is a run's anchor: the configuration's key (set once one was
// measured valid) and each slot's measurements of it, in time order.
type anchors struct {
	key    string
	points map[int][]anchorPoint
	failed int // anchor runs that failed or gave no power
}

// anchorPoint is one measurement of the anchor: when it ended, its mean
// board power (W) and its temperature (°C).
type anchorPoint struct {
	at     time.Time
	powerW float64
	tempC  float64
}

// anchoring says whether the run corrects energies by an anchor
// (measure.ThermalAnchor).
func (r *run) anchoring() bool {
	t := r.request.Trials
	return r.request.Energy && t != nil && t.Thermal == measure.ThermalAnchor
}

// setAnchor makes the first configuration measured valid the run's
// anchor (executor.Executor.SetAnchor): each GPU measures it again
// before its next configuration and every AnchorEvery after.
func (r *run) setAnchor(p *pending, o *Evaluation) {
	if r.anchor.key != "" || !o.Valid() || !r.anchoring() {
		return
	}
	a := *p.plan
	a.Launches = slices.Clone(p.plan.Launches)
	r.anchor.key = o.Key
	r.ex.SetAnchor(&a, AnchorEvery)
}

// noteAnchor keeps the anchor measured before out's trial, where one
// was, for its slot.
func (r *run) noteAnchor(out executor.Outcome) {
	a := out.Anchor
	if a == nil {
		return
	}
	var p, t float64
	ok := a.Err == nil && a.Result != nil && a.Result.Status == backend.StatusValid
	if ok {
		p, ok = a.Result.Observations.Get("power")
		t, _ = a.Result.Observations.Get("temperature")
		// An anchor whose trials disagree was not the steady load it
		// stands for (on a host whose CPUs were busy starting compile
		// processes, H100s measured launches 3–20 times their time).
		if u, _ := a.Result.Observations.Get("unstable"); u == 1 {
			ok = false
		}
	}
	if !ok || !(p > 0) {
		r.anchor.failed++
		return
	}
	if r.anchor.points == nil {
		r.anchor.points = map[int][]anchorPoint{}
	}
	r.anchor.points[out.Slot] = append(r.anchor.points[out.Slot], anchorPoint{at: a.Ended, powerW: p, tempC: t})
}

// anchorTarget is the power the anchor is taken to draw at refC on the
// GPU of ps: the least-squares line of its power on its temperature,
// evaluated at refC. The slope is a leakage's: where the readings span
// under 3 °C, are fewer than 3, or the fitted slope is negative or over
// MaxLeakage of the mean power per °C, it is the prior
// (measure.PriorLeakage of the mean power per °C) through their means.
// W, W/°C.
func anchorTarget(ps []anchorPoint, refC float64) (targetW, slopeWPerC float64, prior bool) {
	ts := make([]float64, len(ps))
	ws := make([]float64, len(ps))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, p := range ps {
		ts[i], ws[i] = p.tempC, p.powerW
		lo, hi = math.Min(lo, p.tempC), math.Max(hi, p.tempC)
	}
	mt, mw := mean(ts), mean(ws)
	slope := measure.Slope(ts, ws)
	if len(ps) < 3 || hi-lo < 3 || !(slope >= 0) || slope > MaxLeakage*mw {
		slope, prior = measure.PriorLeakage*mw, true
	}
	return mw + slope*(refC-mt), slope, prior
}

// MaxLeakage is the steepest leakage slope a fit on the anchor is taken
// to show, per °C of the anchor's mean power: H100s measured 0.24–0.66
// %/°C (BENCHMARKS.md, "Energy from a cold start"); a steeper fit is the
// anchor's noise.
const MaxLeakage = 0.01

// anchorInliers are ps without the measurements more than 8 % from
// their median power: a GPU drifts a few per cent over a run, and a
// measurement further off was not the anchor's steady load.
func anchorInliers(ps []anchorPoint) []anchorPoint {
	ws := make([]float64, len(ps))
	for i, p := range ps {
		ws[i] = p.powerW
	}
	m := measure.Median(ws)
	var out []anchorPoint
	for _, p := range ps {
		if math.Abs(p.powerW/m-1) <= 0.08 {
			out = append(out, p)
		}
	}
	return out
}

// anchorAt is the anchor's power on a slot at time t: its measurements
// ps interpolated linearly in time; the first before them, the last
// after. W.
func anchorAt(ps []anchorPoint, t time.Time) float64 {
	k := sort.Search(len(ps), func(i int) bool { return !ps[i].at.Before(t) })
	switch {
	case k == 0:
		return ps[0].powerW
	case k == len(ps):
		return ps[len(ps)-1].powerW
	}
	a, b := ps[k-1].at, ps[k].at
	f := 0.0
	if span := b.Sub(a); span > 0 {
		f = float64(t.Sub(a)) / float64(span)
	}
	return ps[k-1].powerW + f*(ps[k].powerW-ps[k-1].powerW)
}

// anchorScaled are the plan-level energy observations a correction
// scales: those of one run of the plan.
var anchorScaled = []string{"energy", "energy_ci_low", "energy_ci_high", "dynamic_energy", "edp", "sample_energy"}

// anchorCorrect corrects, under measure.ThermalAnchor, the energy of
// every configuration the run measured by the anchor on its GPU: the
// anchor's power there at the time (anchorAt) less the anchor's power
// at the reference temperature on the run's first GPU with anchors
// (anchorTarget) is the GPU's offset ΔP, W, taken out of the
// configuration's power as leakage and a GPU's difference are, additively
// (energy × (1 − ΔP/P), as ThermalFit.Factor does). The measured energy
// stays as energy_uncorrected and ΔP as anchor_offset; the evaluation,
// its metrics and objective are replaced in the database
// (store.DB.Remeasured). Sets Summary.ThermalNote. Errors: the
// database's.
func (r *run) anchorCorrect() error {
	if !r.anchoring() {
		return nil
	}
	slots := make([]int, 0, len(r.anchor.points))
	for s, ps := range r.anchor.points {
		r.anchor.points[s] = anchorInliers(ps)
		slots = append(slots, s)
	}
	slices.Sort(slots)
	if len(slots) == 0 {
		if r.sum.Evaluated > 0 {
			r.sum.ThermalNote = fmt.Sprintf("anchor: no measurement of an anchor (%d failed): energies are as measured", r.anchor.failed)
		}
		return nil
	}
	refC := r.request.Trials.WithDefaults().RefTempC
	target, slope, prior := anchorTarget(r.anchor.points[slots[0]], refC)
	n := 0
	for _, o := range r.sum.Evaluations {
		ps := r.anchor.points[o.slot]
		if !o.Valid() || o.Reused || o.evalID == 0 || len(ps) == 0 {
			continue
		}
		pw, ok := o.Observations["power"]
		if _, has := o.Observations["energy"]; !ok || !has || !(pw > 0) {
			continue
		}
		dp := anchorAt(ps, o.ended) - target
		if err := r.correctBy(o, dp, 1-dp/pw); err != nil {
			return err
		}
		n++
	}
	r.sum.ThermalNote = r.anchorNote(slots, target, slope, prior, refC, n)
	return r.c.DB.SetRunSettings(r.store.ID, map[string]any{"anchor": r.anchor.key, "anchor_target_w": target,
		"anchor_slope_w_per_c": slope, "anchor_slope_prior": prior, "temperature_ref_c": refC})
}

// correctBy takes dp (W) out of o's power and scales its energies by f,
// keeping the measured energy as energy_uncorrected, and stores the
// result (store.DB.Remeasured). Errors: the database's.
func (r *run) correctBy(o *Evaluation, dp, f float64) error {
	var plan measure.Observations
	for _, x := range o.Typed {
		if x.Launch != measure.PlanScope {
			continue
		}
		switch {
		case slices.Contains(anchorScaled, x.Name) || len(x.Name) > 13 && x.Name[:13] == "energy_trial_":
			if x.Name == "energy" {
				plan = append(plan, measure.Observation{Name: "energy_uncorrected", Unit: x.Unit, Value: x.Value, Launch: x.Launch, Method: x.Method})
			}
			x.Value *= f
		case x.Name == "power":
			x.Value -= dp
		default:
			continue
		}
		x.Method += "-anchor-corrected"
		plan = append(plan, x)
	}
	plan = append(plan, measure.Observation{Name: "anchor_offset", Unit: "W", Value: dp, Launch: measure.PlanScope, Method: "anchor"})
	for _, x := range plan {
		o.Observations[x.Name] = x.Value
	}
	metrics, _ := r.sub.metrics(o.Observations, r.c.Space.Values(o.Index))
	v, ok := r.c.Objective.Value(o.Observations, metrics)
	if !ok {
		v = o.Value
	}
	o.Metrics, o.Value = metrics, v
	return r.c.DB.Remeasured(o.evalID, plan, metrics, &v)
}

// anchorNote says what anchorCorrect did: the anchor, its measurements
// per GPU, the drift of the first GPU's and each GPU's last offset.
func (r *run) anchorNote(slots []int, target, slope float64, prior bool, refC float64, n int) string {
	first := r.anchor.points[slots[0]]
	how := "fitted"
	if prior {
		how = "prior"
	}
	s := fmt.Sprintf("anchor: %s measured %d times; %d energies corrected to its %.1f W at %.0f °C (slope %.2f W/°C, %s); on the first GPU it drew %.1f W at %.0f °C first, %.1f W at %.0f °C last",
		r.anchor.key, r.anchorCount(), n, target, refC, slope, how, first[0].powerW, first[0].tempC, first[len(first)-1].powerW, first[len(first)-1].tempC)
	if len(slots) > 1 {
		s += "; GPUs' last offsets"
		for _, sl := range slots {
			ps := r.anchor.points[sl]
			s += fmt.Sprintf(" %+.1f", ps[len(ps)-1].powerW-target)
		}
		s += " W"
	}
	return s
}

// anchorCount is the number of anchor measurements kept.
func (r *run) anchorCount() int {
	n := 0
	for _, ps := range r.anchor.points {
		n += len(ps)
	}
	return n
}

// mean is the arithmetic mean of xs (NaN for none).
func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
