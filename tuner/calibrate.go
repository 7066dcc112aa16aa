package tuner

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// AnchorEvery is how many configurations a GPU measures between two
// measurements of the anchor in a run calibrated across GPUs
// (Config.Calibrate). One energy measurement takes about 0.5 s on an
// H100 (BENCHMARKS.md, "Energy from a cold start"), so the anchor adds an
// eighth to the measuring; vector_add's 96 configurations over four
// H100s gave 19 anchors.
const AnchorEvery = 8

// anchors is a run's anchor: the configuration's key (set once one was
// measured valid) and each slot's measurements of it, in time order.
type anchors struct {
	key    string
	points map[int][]float64 // the anchor's mean board power, W
	failed int               // anchor runs that failed, were unstable or gave no power
	// offsets are each slot's offset once calibrate has run (W; the
	// first slot's none), for the re-measurements after it.
	offsets map[int]float64
	// capped counts the valid configurations passed over as the anchor
	// for drawing too near the power limit (AnchorHeadroom).
	capped int
}

// AnchorHeadroom is how far under the power limit an anchor must draw, as
// a fraction of it. A configuration at the limit reads what the power
// limiter lets through in the window, not what the GPU would draw: on a
// four-H100 host a DGEMM anchor at the 700 W limit read 93 W apart on GPUs
// whose own readings of the same 450 configurations lay within 3 %, and
// the calibration moved their energies by that; in the next run on the
// same GPUs another capped anchor put them 24 W apart the other way
// (BENCHMARKS.md, "cuBLAS through purego, and the sweep measured twice").
// Windows of 0.3-0.5 s on capped DGEMMs read up to 15 % over the limit,
// so the anchor stays 10 % under it.
const AnchorHeadroom = 0.10

// calibrating says whether the run calibrates its GPUs' energies on an
// anchor: Config.Calibrate, or by itself where it measures energy on
// several GPUs whose results are measured, not modelled.
func (r *run) calibrating() bool {
	if !r.request.Energy || r.request.Trials == nil {
		return false
	}
	return r.c.Calibrate || len(r.c.GPUs) > 0 && !backend.TraitsOf(r.c.Backend).Modelled
}

// setAnchor makes the first configuration measured valid the run's
// anchor (executor.Executor.SetAnchor): each GPU measures it again
// before its next configuration, then 2, 4 and every
// AnchorEvery configurations.
func (r *run) setAnchor(p *pending, o *Evaluation) {
	if r.anchor.key != "" || !o.Valid() || !r.calibrating() {
		return
	}
	if pw, limit := o.Observations["power"], o.PowerLimit(r.sum.Device.PowerLimitW); limit > 0 && pw >= (1-AnchorHeadroom)*limit {
		r.anchor.capped++
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
	var p float64
	ok := a.Err == nil && a.Result != nil && a.Result.Status == backend.StatusValid
	if ok {
		p, ok = a.Result.Observations.Get("power")
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
		r.anchor.points = map[int][]float64{}
	}
	r.anchor.points[out.Slot] = append(r.anchor.points[out.Slot], p)
}

// anchorPower is a GPU's power on the anchor: the median of its
// measurements ps, W. One anchor measurement on an H100 varied 5–8 %
// within a run (the load's start, the host's other work), more than the
// GPU drifted as it warmed (0.3 %/°C), so the median of all of them
// stands for the GPU, not their course in time.
func anchorPower(ps []float64) float64 { return measure.Median(ps) }

// calibrate puts the energies of a run over several GPUs on the first
// GPU's scale: GPU s drew ΔP_s = anchorPower(s) − anchorPower(first) more
// on the same configuration, taken out of each configuration it
// measured additively, as a difference of leakage or of the power
// sensor's offset is (energy × (1 − ΔP/P), as ThermalFit.Factor does).
// The measured energy stays as energy_uncorrected and ΔP as gpu_offset;
// the evaluation, its metrics and objective are replaced in the database
// (store.DB.Remeasured), and the ranking follows the calibrated
// energies. On four H100s, 72 configurations measured on different GPUs
// in two runs were 0.970 of each other (median) as measured, 1.002
// calibrated, their deviation from it 2.0 % (median) and 7.1 % (largest)
// as measured, 1.2 % and 3.8 % calibrated (BENCHMARKS.md, "Measuring
// while the GPU warms", energy comparable across GPUs). Sets
// Summary.ThermalNote's calibration part. Errors: the database's.
func (r *run) calibrate() error {
	if !r.calibrating() {
		return nil
	}
	if r.anchor.key == "" {
		if r.anchor.capped > 0 {
			r.note(fmt.Sprintf("calibration: no anchor, all %d valid configurations drew within %.0f %% of the power limit: energies are as each GPU measured them", r.anchor.capped, 100*AnchorHeadroom))
		}
		return nil
	}
	slots := make([]int, 0, len(r.anchor.points))
	for s := range r.anchor.points {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	if len(slots) == 0 {
		r.note(fmt.Sprintf("calibration: no valid measurement of the anchor %s (%d failed): energies are as each GPU measured them", r.anchor.key, r.anchor.failed))
		return nil
	}
	ref := anchorPower(r.anchor.points[slots[0]])
	offsets := map[int]float64{}
	for _, s := range slots {
		offsets[s] = anchorPower(r.anchor.points[s]) - ref
	}
	r.anchor.offsets = offsets
	delete(r.anchor.offsets, slots[0])
	var rs []store.Remeasurement
	for _, o := range r.sum.Evaluations {
		dp, ok := offsets[o.slot]
		if !o.Valid() || o.Reused || o.evalID == 0 || !ok || o.slot == slots[0] {
			continue
		}
		pw, ok := o.Observations["power"]
		if _, has := o.Observations["energy"]; !ok || !has || !(pw > 0) {
			continue
		}
		rs = append(rs, r.correctBy(o, dp, 1-dp/pw))
	}
	// One transaction for all: a run of thousands of configurations
	// would otherwise commit (and sync) once per configuration.
	if err := r.c.DB.Remeasured(rs...); err != nil {
		return err
	}
	r.note(r.calibrationNote(slots, offsets, ref, len(rs)))
	ws := map[string]float64{}
	for _, s := range slots {
		ws[r.slotGPU(s)] = offsets[s]
	}
	return r.c.DB.SetRunSettings(r.store.ID, map[string]any{"calibration_anchor": r.anchor.key, "calibration_offsets_w": ws})
}

// slotGPU is the UUID of slot s's GPU.
func (r *run) slotGPU(s int) string {
	if sh := r.ex.Shares(); s < len(sh) {
		return sh[s].GPU
	}
	return fmt.Sprint(s)
}

// note adds s to Summary.ThermalNote ("; "-separated).
func (r *run) note(s string) {
	if r.sum.ThermalNote != "" {
		s = r.sum.ThermalNote + "; " + s
	}
	r.sum.ThermalNote = s
}

// anchorScaled are the plan-level energy observations a correction
// scales: those of one run of the plan.
var anchorScaled = []string{"energy", "energy_ci_low", "energy_ci_high", "dynamic_energy", "edp", "sample_energy"}

// correctBy takes dp (W) out of o's power and scales its energies by f,
// keeping the measured energy as energy_uncorrected (where a leakage
// correction has not kept it already) and dp as gpu_offset, and gives
// what the database is to store of it (store.DB.Remeasured).
func (r *run) correctBy(o *Evaluation, dp, f float64) store.Remeasurement {
	var plan measure.Observations
	for _, x := range o.Typed {
		if x.Launch != measure.PlanScope {
			continue
		}
		switch {
		case slices.Contains(anchorScaled, x.Name) || strings.HasPrefix(x.Name, "energy_trial_"):
			if _, had := o.Observations["energy_uncorrected"]; x.Name == "energy" && !had {
				// As measured; under the model thermal policy it is
				// there already, before the leakage correction.
				plan = append(plan, measure.Observation{Name: "energy_uncorrected", Unit: x.Unit, Value: x.Value, Launch: x.Launch, Method: x.Method})
			}
			x.Value *= f
		case x.Name == "power":
			x.Value -= dp
		default:
			continue
		}
		x.Method += "-calibrated"
		plan = append(plan, x)
	}
	plan = append(plan, measure.Observation{Name: "gpu_offset", Unit: "W", Value: dp, Launch: measure.PlanScope, Method: "anchor"})
	for _, x := range plan {
		o.Observations[x.Name] = x.Value
	}
	metrics, _ := r.sub.metrics(o.Observations, r.c.Space.Values(o.Index))
	v, ok := r.c.Objective.Value(o.Observations, metrics)
	if !ok {
		v = o.Value
	}
	o.Metrics, o.Value = metrics, v
	return store.Remeasurement{ID: o.evalID, Observations: plan, Metrics: metrics, Objective: &v}
}

// calibrationNote says what calibrate did: the anchor, its measurements
// and each GPU's offset.
func (r *run) calibrationNote(slots []int, offsets map[int]float64, ref float64, n int) string {
	s := fmt.Sprintf("calibration: anchor %s measured %d times, %.1f W on GPU %d (median); %d energies of the other GPUs corrected by their offsets", r.anchor.key, r.anchorCount(), ref, slots[0], n)
	for _, sl := range slots[1:] {
		s += fmt.Sprintf(" %+.1f", offsets[sl])
	}
	return s + " W"
}

// anchorCount is the number of anchor measurements kept.
func (r *run) anchorCount() int {
	n := 0
	for _, ps := range r.anchor.points {
		n += len(ps)
	}
	return n
}

// onFirstScale is obs, the plan-level observations of a measurement on
// slot, on the first GPU's scale (calibrate's offset of the slot taken
// out of its power and energies); obs itself where the run was not
// calibrated or the slot is the first. Confirmation's re-measurements,
// after calibrate, go through it.
func (r *run) onFirstScale(obs map[string]float64, slot int) map[string]float64 {
	dp, ok := r.anchor.offsets[slot]
	pw := obs["power"]
	if !ok || !(pw > 0) {
		return obs
	}
	out := maps.Clone(obs)
	f := 1 - dp/pw
	for name, v := range obs {
		if slices.Contains(anchorScaled, name) || strings.HasPrefix(name, "energy_trial_") {
			out[name] = v * f
		}
	}
	out["power"] = pw - dp
	return out
}

// NoteCalibration says, on a run over several measured GPUs whose
// objectives need energy, that each GPU measures its own energy, GPUs of
// one model differ by a few per cent (BENCHMARKS.md: 2.9-5.3 % on four
// H100s), and so each measures an anchor configuration through the run
// to which its energies are calibrated (calibrate). Modelled
// GPUs (the simulator, a projection) of one model measure alike: nothing
// to say.
func NoteCalibration(log io.Writer, s *spec.Spec, objectives []string, gpus int, modelled bool) {
	if gpus < 2 || modelled {
		return
	}
	for _, o := range objectives {
		if s.ObjectiveNeedsEnergy(o) {
			fmt.Fprintf(log, "gtune: objective %s needs energy, measured by each of the %d GPUs on itself; GPUs of one model differ by a few per cent, so each GPU also measures an anchor configuration through the run (one measurement in %d more) and its energies are calibrated to the first GPU's\n", o, gpus, AnchorEvery)
			return
		}
	}
}
