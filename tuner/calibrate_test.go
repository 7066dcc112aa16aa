package tuner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
)

// simGPUs are simulated H100s, one per options (Index set to its place),
// each wrapped by wrap where given, closed when the test ends.
func simGPUs(t *testing.T, wrap func(*sim.Sim) backend.Backend, opts ...sim.Options) []backend.Backend {
	t.Helper()
	d, _ := device.Lookup("h100_sxm")
	var gpus []backend.Backend
	for i, o := range opts {
		o.Index = i
		g := sim.New(d, o)
		t.Cleanup(func() { g.Close() })
		var be backend.Backend = g
		if wrap != nil {
			be = wrap(g)
		}
		gpus = append(gpus, be)
	}
	return gpus
}

// runGPUs tunes fixture f by brute force (seed 3, two compile workers)
// over gpus (the first the run's own); set adjusts the run's Config
// (nil: none).
func runGPUs(t *testing.T, f *fixture, set func(*Config), gpus ...backend.Backend) (*Summary, error) {
	t.Helper()
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Subject: FromSpec(f.spec), Space: sp, Backend: gpus[0], GPUs: gpus[1:], DB: f.db,
		Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2}
	if set != nil {
		set(&c)
	}
	return Run(context.Background(), c)
}

// simTune is runGPUs over simGPUs; an error ends the test.
func simTune(t *testing.T, f *fixture, set func(*Config), wrap func(*sim.Sim) backend.Backend, opts ...sim.Options) *Summary {
	t.Helper()
	sum, err := runGPUs(t, f, set, simGPUs(t, wrap, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// energyTune is simTune of a new fixture tuned for energy under thermal
// policy policy, the GPUs without sensor noise (seed 7).
func energyTune(t *testing.T, policy string, set func(*Config), wrap func(*sim.Sim) backend.Backend, opts ...sim.Options) (*Summary, *fixture) {
	t.Helper()
	f := newFixture(t)
	f.spec.Objective, f.spec.ObjectiveMaximize = "energy", false
	f.spec.Measurement.Protocol.Thermal = policy
	for i := range opts {
		if opts[i].Noise == 0 {
			opts[i].Noise = -1
		}
		opts[i].Seed = 7
	}
	return simTune(t, f, set, wrap, opts...), f
}

// energyRun is energyTune under thermal policy none, calibrated across
// GPUs where calibrate is set.
func energyRun(t *testing.T, calibrate bool, wrap func(*sim.Sim) backend.Backend, opts ...sim.Options) (*Summary, *fixture) {
	t.Helper()
	return energyTune(t, measure.ThermalNone, func(c *Config) { c.Calibrate = calibrate }, wrap, opts...)
}

// twoGPURun is energyTune over two GPUs, the second's board drawing 25
// W more, calibrated, with confirm (0: none) of the best confirmed in up
// to 3 rounds.
func twoGPURun(t *testing.T, policy string, confirm int) (*Summary, *fixture) {
	t.Helper()
	return energyTune(t, policy, func(c *Config) { c.Calibrate, c.Confirm, c.ConfirmRounds = true, confirm, 3 }, nil, sim.Options{}, sim.Options{PowerOffsetW: 25})
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

// Two GPUs of one model whose boards draw 25 W apart measure the same
// configurations 6 % apart; calibrated on the anchor, a run over both
// gives each configuration the energy a run on the first alone gives,
// keeps what the second measured, and stores the calibrated values.
func TestCalibrateGPUs(t *testing.T) {
	apart := sim.Options{PowerOffsetW: 25}
	one, _ := energyRun(t, false, nil, sim.Options{})
	raw, _ := energyRun(t, false, nil, sim.Options{}, apart)
	two, f := energyRun(t, true, nil, sim.Options{}, apart)
	if two.GPUs[0].Evaluated == 0 || two.GPUs[1].Evaluated == 0 {
		t.Fatalf("GPUs measured %d and %d", two.GPUs[0].Evaluated, two.GPUs[1].Evaluated)
	}
	if d := worstApart(energies(raw), energies(one)); d < 0.03 || raw.ThermalNote != "" {
		t.Fatalf("uncalibrated, the offset GPU measures %.3f %% apart (%q)", 100*d, raw.ThermalNote)
	}
	if d := worstApart(energies(two), energies(one)); d > 1e-4 { // the counter reads whole mJ
		t.Errorf("calibrated on the anchor, two GPUs are %.3g %% from one; %s", 100*d, two.ThermalNote)
	}
	if !strings.Contains(two.ThermalNote, "calibration: anchor") || !strings.HasSuffix(two.ThermalNote, "+25.0 W") {
		t.Errorf("note %q", two.ThermalNote)
	}
	corrected, second := 0, 0
	for _, o := range two.Evaluations {
		if o.Valid() && o.GPU == two.GPUs[1].UUID {
			second++
		}
		off, ok := o.Observations["gpu_offset"]
		if !ok {
			continue
		}
		corrected++
		rawE := o.Observations["energy_uncorrected"]
		stored, err := f.db.Observations(o.evalID)
		se, _ := stored.Get("energy")
		if err != nil || math.Abs(off-25) > 0.05 || math.Abs(rawE/o.Value-1-off/o.Observations["power"]) > 1e-9 || se != o.Value {
			t.Errorf("%s: %v J measured, %v J calibrated (%v W offset), %v J stored (%v)", o.Key, rawE, o.Value, off, se, err)
		}
	}
	if corrected != second || second == 0 {
		t.Errorf("%d calibrated; the second GPU measured %d valid", corrected, second)
	}
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

// A configuration whose energy trials disagreed is measured again,
// once, and the second measurement stands; the first's energy is kept
// as energy_unstable.
func TestRemeasuresUnstable(t *testing.T) {
	faulty := func(s *sim.Sim) backend.Backend {
		return &unstableFirst{Sim: s, keys: map[string]bool{"64,2": true, "512,1": true}}
	}
	sum, _ := energyRun(t, false, faulty, sim.Options{})
	truth, _ := energyRun(t, false, nil, sim.Options{})
	want := energies(truth)
	n := 0
	for _, o := range sum.Evaluations {
		if _, ok := o.Observations["energy_unstable"]; ok {
			n++
			if o.Observations["unstable"] != 0 || math.Abs(o.Value/want[o.Key]-1) > 1e-9 {
				t.Errorf("%s: unstable %v, %v J; a run without the fault %v J", o.Key, o.Observations["unstable"], o.Value, want[o.Key])
			}
		}
	}
	if n != 2 || sum.ThermalNote != "2 configurations whose energy trials disagreed measured again" || truth.ThermalNote != "" {
		t.Errorf("%d re-measured: %q; without the fault %q", n, sum.ThermalNote, truth.ThermalNote)
	}
}

// Under the model thermal policy the energy as measured is kept once:
// calibration scales the leakage-corrected energy and leaves
// energy_uncorrected as the GPU measured it.
func TestCalibrateKeepsMeasured(t *testing.T) {
	sum, _ := twoGPURun(t, measure.ThermalModel, 0)
	n := 0
	for _, o := range sum.Evaluations {
		if _, ok := o.Observations["gpu_offset"]; !ok || !o.Valid() {
			continue
		}
		n++
		measured, _ := o.Typed.Get("energy_uncorrected") // what the GPU measured
		leak, _ := o.Typed.Get("energy")                 // leakage-corrected
		raw := o.Observations["energy_uncorrected"]
		if raw != measured || leak == measured || o.Value >= leak {
			t.Errorf("%s: energy_uncorrected %v J, measured %v J, leakage-corrected %v J, calibrated %v J", o.Key, raw, measured, leak, o.Value)
		}
	}
	if n == 0 {
		t.Fatal("nothing calibrated")
	}
}

// Confirmation after calibration compares the re-measurements on the
// first GPU's scale: a configuration re-measured on the GPU that reads
// 25 W more has the values the first GPU gives it.
func TestCalibratedConfirmation(t *testing.T) {
	sum, _ := twoGPURun(t, measure.ThermalNone, 3)
	if len(sum.Confirmed) != 3 {
		t.Fatalf("confirmed %d", len(sum.Confirmed))
	}
	for _, c := range sum.Confirmed {
		lo, hi := slices.Min(c.Values), slices.Max(c.Values)
		if hi/lo-1 > 1e-4 { // without noise, the same energy on either GPU
			t.Errorf("%s: values %v apart by %.3g %%", c.Key, c.Values, 100*(hi/lo-1))
		}
	}
}

// cappedAt is a simulated GPU whose measurements of the configurations
// in keys (all of them when keys is nil) read as drawing powerW.
type cappedAt struct {
	*sim.Sim
	keys   map[string]bool
	powerW float64
}

func (c *cappedAt) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	res, err := c.Sim.Run(ctx, p)
	if err != nil || c.keys != nil && !c.keys[p.Key] {
		return res, err
	}
	for i, x := range res.Observations {
		if x.Launch == measure.PlanScope && x.Name == "power" {
			res.Observations[i].Value = c.powerW
		}
	}
	return res, nil
}

// A configuration drawing within AnchorHeadroom of the power limit is
// not the anchor: the next one is, and the calibration is the same; a
// run whose configurations all draw that much has no anchor and says so.
func TestAnchorUnderThePowerLimit(t *testing.T) {
	apart := sim.Options{PowerOffsetW: 25}
	one, _ := energyRun(t, false, nil, sim.Options{})
	first := ""
	for _, o := range one.Evaluations {
		if o.Valid() {
			first = o.Key
			break
		}
	}
	capFirst := func(s *sim.Sim) backend.Backend {
		return &cappedAt{Sim: s, keys: map[string]bool{first: true}, powerW: 695}
	}
	two, _ := energyRun(t, true, capFirst, sim.Options{}, apart)
	if !strings.HasPrefix(two.ThermalNote, "calibration: anchor ") || strings.HasPrefix(two.ThermalNote, "calibration: anchor "+first+" ") || !strings.HasSuffix(two.ThermalNote, "+25.0 W") {
		t.Fatalf("the first configuration, %s, drew 695 W of 700 W; note %q", first, two.ThermalNote)
	}
	want := energies(one)
	delete(want, first)
	if d := worstApart(energies(two), want); d > 1e-4 {
		t.Errorf("calibrated on the second configuration, two GPUs are %.3g %% from one", 100*d)
	}
	all := func(s *sim.Sim) backend.Backend { return &cappedAt{Sim: s, powerW: 640} }
	none, _ := energyRun(t, true, all, sim.Options{}, apart)
	valid := 0
	for _, o := range none.Evaluations {
		if o.Valid() {
			valid++
			if _, ok := o.Observations["gpu_offset"]; ok {
				t.Errorf("%s corrected without an anchor", o.Key)
			}
		}
	}
	if w := "calibration: no anchor, all " + fmt.Sprint(valid) + " valid configurations drew within 10 % of the power limit: energies are as each GPU measured them"; none.ThermalNote != w {
		t.Errorf("every configuration at 640 W of 700 W: note %q, want %q", none.ThermalNote, w)
	}
}

// A configuration whose energy trials disagreed on one GPU and that was
// measured again on another is stored as that GPU's: its observations
// are the second GPU's now, and calibration takes that GPU's offset out
// of it. (On four H100s 43 of 51 such configurations kept the first
// GPU's UUID in the database while their energies were the second's.)
func TestRemeasuredOnAnotherGPU(t *testing.T) {
	f := newFixture(t)
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	every := map[string]bool{}
	for i := range sp.Len() {
		every[sp.Key(i)] = true
	}
	first := true
	wrap := func(s *sim.Sim) backend.Backend {
		if !first {
			return s
		}
		first = false
		return &unstableFirst{Sim: s, keys: every}
	}
	f.spec.Objective, f.spec.ObjectiveMaximize = "energy", false
	f.spec.Measurement.Protocol.Thermal = measure.ThermalNone
	sum := simTune(t, f, func(c *Config) { c.Calibrate = true }, wrap, sim.Options{Noise: -1, Seed: 7}, sim.Options{Noise: -1, Seed: 7, PowerOffsetW: 25})
	stored, err := f.db.Evaluations(sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	gpu := map[string]string{}
	for _, e := range stored {
		gpu[e.Key] = e.GPU
	}
	moved := 0
	for _, o := range sum.Evaluations {
		if _, ok := o.Observations["energy_unstable"]; !ok || !o.Valid() {
			continue
		}
		if gpu[o.Key] != o.GPU {
			t.Errorf("%s: measured again on %s, stored as %s's", o.Key, o.GPU, gpu[o.Key])
		}
		if o.GPU == sum.GPUs[1].UUID {
			moved++
			if off := o.Observations["gpu_offset"]; math.Abs(off-25) > 0.05 {
				t.Errorf("%s: measured again on the second GPU, corrected by %v W", o.Key, off)
			}
		}
	}
	if moved == 0 {
		t.Fatalf("no configuration unstable on the first GPU was measured again on the second; note %q", sum.ThermalNote)
	}
}
