package tuner

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
)

// anchorRun tunes the fixture for energy by brute force under thermal
// policy policy on simulated H100s without sensor noise: one per
// options, the first the run's own.
func anchorRun(t *testing.T, policy string, opts ...sim.Options) *Summary {
	t.Helper()
	f := newFixture(t)
	f.spec.Objective, f.spec.ObjectiveMaximize = "energy", false
	f.spec.Measurement.Protocol.Thermal = policy
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	var gpus []backend.Backend
	for i, o := range opts {
		o.Seed, o.Noise, o.Index = 7, -1, i
		g := sim.New(d, o)
		defer g.Close()
		gpus = append(gpus, g)
	}
	sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: gpus[0], GPUs: gpus[1:], DB: f.db,
		Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// energies maps each valid configuration's key to its energy.
func energies(sum *Summary) map[string]float64 {
	m := map[string]float64{}
	for _, o := range sum.Evaluations {
		if o.Valid() {
			m[o.Key] = o.Value
		}
	}
	return m
}

// worstApart is the largest relative difference between a's and b's
// energies of the configurations both hold.
func worstApart(a, b map[string]float64) float64 {
	worst := 0.0
	for k, v := range a {
		if w, ok := b[k]; ok {
			worst = math.Max(worst, math.Abs(v/w-1))
		}
	}
	return worst
}

// Under the anchor policy a GPU started cold measures from the start,
// and the anchor's drift on it takes the warming out of every energy:
// three runs started at 40, 48 and 55 °C agree to a fifth of what they
// do as measured, and the best is one of a GPU that never warms, while
// the warm-up is the short one and the anchor costs one measurement in
// AnchorEvery.
func TestAnchorColdStart(t *testing.T) {
	cold := func(c float64) sim.Options {
		return sim.Options{ColdStart: &sim.ColdStart{StartC: c, SinkTau: 20 * time.Second}}
	}
	var none, anchor []map[string]float64
	var first *Summary
	for _, c := range []float64{40, 48, 55} {
		none = append(none, energies(anchorRun(t, measure.ThermalNone, cold(c))))
		s := anchorRun(t, measure.ThermalAnchor, cold(c))
		if first == nil {
			first = s
		}
		anchor = append(anchor, energies(s))
	}
	sn := math.Max(worstApart(none[0], none[1]), worstApart(none[0], none[2]))
	sa := math.Max(worstApart(anchor[0], anchor[1]), worstApart(anchor[0], anchor[2]))
	t.Logf("runs apart by up to %.3f %% as measured, %.3f %% corrected; %s", 100*sn, 100*sa, first.ThermalNote)
	if sn < 0.01 || sa > sn/5 {
		t.Fatalf("runs apart by up to %.3f %% as measured, %.3f %% corrected by the anchor", 100*sn, 100*sa)
	}
	// The best is one of the best of a GPU that never warms (each plan
	// at its steady temperature: the model's energies, many alike).
	truth := anchorRun(t, measure.ThermalNone, sim.Options{})
	if e := energies(truth)[first.Best[0].Key]; e > truth.Best[0].Value*1.0005 {
		t.Errorf("best %s under anchor: %v J on a GPU that never warms, whose best is %s at %v J", first.Best[0].Key, e, truth.Best[0].Key, truth.Best[0].Value)
	}
	steady := anchorRun(t, measure.ThermalSteady, cold(40))
	if first.Time.Warmup >= steady.Time.Warmup/2 {
		t.Errorf("warm-up %v under anchor, %v steady", first.Time.Warmup, steady.Time.Warmup)
	}
	o := first.Best[0]
	raw, off := o.Observations["energy_uncorrected"], o.Observations["anchor_offset"]
	if want := raw * (1 - off/(o.Observations["power"]+off)); raw <= 0 || math.Abs(o.Value/want-1) > 1e-9 {
		t.Errorf("best: %v J corrected from %v J by %v W; want %v J", o.Value, raw, off, want)
	}
	if n := first.Evaluated; first.ThermalNote == "" || anchorsIn(first) < n/AnchorEvery {
		t.Errorf("%d anchors for %d configurations: %q", anchorsIn(first), n, first.ThermalNote)
	}
}

// Two GPUs of one model that read 25 W apart measure the same
// configurations 6 % apart; calibrated on the anchor, a run over both
// gives each configuration the energy a run on the first alone gives.
func TestAnchorCalibratesGPUs(t *testing.T) {
	apart := sim.Options{PowerOffsetW: 25}
	one := energies(anchorRun(t, measure.ThermalAnchor, sim.Options{}))
	two := anchorRun(t, measure.ThermalAnchor, sim.Options{}, apart)
	raw := energies(anchorRun(t, measure.ThermalNone, sim.Options{}, apart))
	if two.GPUs[0].Evaluated == 0 || two.GPUs[1].Evaluated == 0 {
		t.Fatalf("GPUs measured %d and %d", two.GPUs[0].Evaluated, two.GPUs[1].Evaluated)
	}
	oneNone := energies(anchorRun(t, measure.ThermalNone, sim.Options{}))
	if d := worstApart(raw, oneNone); d < 0.03 {
		t.Fatalf("the offset GPU measures only %.3f %% apart", 100*d)
	}
	if d := worstApart(energies(two), one); d > 0.002 {
		t.Errorf("calibrated on the anchor, two GPUs are %.3f %% from one; %s", 100*d, two.ThermalNote)
	}
}

// anchorsIn counts the anchor measurements a run's note states.
func anchorsIn(s *Summary) int {
	var key string
	var n int
	fmt.Sscanf(s.ThermalNote, "anchor: %s measured %d times", &key, &n)
	return n
}

// unstableFirst is a simulated GPU whose first measurement of the
// configurations in keys comes back three times the energy, its
// trials disagreeing (a host starving the load).
type unstableFirst struct {
	*sim.Sim
	keys map[string]bool
}

func (u *unstableFirst) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	res, err := u.Sim.Run(ctx, p)
	if err != nil || !u.keys[p.Key] {
		return res, err
	}
	delete(u.keys, p.Key)
	for i, x := range res.Observations {
		if x.Launch != measure.PlanScope {
			continue
		}
		switch x.Name {
		case "energy":
			res.Observations[i].Value *= 3
		case "unstable":
			res.Observations[i].Value = 1
		}
	}
	return res, nil
}

// Under the anchor policy a configuration whose energy trials disagreed
// is measured again, once, and the second measurement stands; the
// first's energy is kept as energy_unstable.
func TestAnchorRemeasuresUnstable(t *testing.T) {
	f := newFixture(t)
	f.spec.Objective, f.spec.ObjectiveMaximize = "energy", false
	f.spec.Measurement.Protocol.Thermal = measure.ThermalAnchor
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	be := &unstableFirst{Sim: sim.New(d, sim.Options{Seed: 7, Noise: -1}), keys: map[string]bool{"64,2": true, "512,1": true}}
	defer be.Close()
	sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: be, DB: f.db,
		Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	truth := energies(anchorRun(t, measure.ThermalAnchor, sim.Options{}))
	n := 0
	for _, o := range sum.Evaluations {
		if _, ok := o.Observations["energy_unstable"]; ok {
			n++
			if o.Observations["unstable"] != 0 || math.Abs(o.Value/truth[o.Key]-1) > 1e-6 {
				t.Errorf("%s: unstable %v, %v J; a run without the fault %v J", o.Key, o.Observations["unstable"], o.Value, truth[o.Key])
			}
		}
	}
	if n != 2 || !strings.Contains(sum.ThermalNote, "2 configurations whose energy trials disagreed measured again") {
		t.Errorf("%d re-measured: %q", n, sum.ThermalNote)
	}
}
