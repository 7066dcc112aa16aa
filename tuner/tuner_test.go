package tuner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/plausibility"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// The test spec has 112 valid configurations; block_size_x == 992 fails to
// compile (3 configurations) and (1024, 4) computes a wrong answer.
const (
	validConfigs   = 112
	compileFailing = 3
	wrongAnswer    = 1
)

type fixture struct {
	spec  *spec.Spec
	db    *store.DB
	dbp   string
	peaks plausibility.Peaks
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s, err := spec.Load("testdata/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	dbp := filepath.Join(t.TempDir(), "gtune.db")
	db, err := store.Open(dbp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fixture{spec: s, db: db, dbp: dbp}
}

func (f *fixture) run(t *testing.T, strat string, maxEvals int, fresh bool, obj string) *Summary {
	t.Helper()
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	if obj != "" {
		f.spec.Objective, f.spec.ObjectiveMaximize = obj, false
	}
	be := sim.New(d, sim.Options{Seed: 7, Noise: 0.01})
	defer be.Close()
	sum, err := Run(context.Background(), Config{
		Subject: FromSpec(f.spec), Space: sp, Backend: be, DB: f.db, Objective: objective.FromSpec(f.spec),
		Strategy: strat, Seed: 3, MaxEvals: maxEvals, Fresh: fresh, CompileWorkers: 2, Peaks: f.peaks,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestBruteForceFindsTheMinimumAndRecordsFailures(t *testing.T) {
	f := newFixture(t)
	sum := f.run(t, "brute_force", 0, false, "")
	if sum.SpaceSize != validConfigs || sum.Evaluated != validConfigs || sum.Reused != 0 {
		t.Fatalf("space %d evaluated %d reused %d", sum.SpaceSize, sum.Evaluated, sum.Reused)
	}
	if sum.Invalid != compileFailing+wrongAnswer {
		t.Fatalf("invalid = %d, want %d", sum.Invalid, compileFailing+wrongAnswer)
	}
	statuses := map[backend.Status]int{}
	var minTime float64
	var minKey string
	for _, o := range sum.Evaluations {
		statuses[o.Status]++
		if o.Valid() && (minKey == "" || o.Value < minTime) {
			minTime, minKey = o.Value, o.Key
		}
	}
	if statuses[backend.StatusCompileFailed] != compileFailing || statuses[backend.StatusVerificationFailed] != wrongAnswer {
		t.Fatalf("statuses %v", statuses)
	}
	if sum.Best[0].Key != minKey || sum.Best[0].Value != minTime {
		t.Fatalf("best %s %.6f, minimum %s %.6f", sum.Best[0].Key, sum.Best[0].Value, minKey, minTime)
	}
	for i := 1; i < len(sum.Best); i++ {
		if sum.Best[i].Value < sum.Best[i-1].Value {
			t.Fatalf("top list not sorted: %v", sum.Best)
		}
	}
	// GB/s must follow from time by its expression: 3*4*n/(time*1e6).
	b := sum.Best[0]
	want := 3 * 4 * 268435456 / (b.Observations["time"] * 1e6)
	if got := b.Metrics["GB/s"]; got != want {
		t.Fatalf("GB/s = %v, want %v", got, want)
	}
	// GB/s/W reads power, so the energy window ran although the objective
	// is time.
	if got, want := b.Metrics["GB/s/W"], want/b.Observations["power"]; got != want || want <= 0 {
		t.Fatalf("GB/s/W = %v, want %v", got, want)
	}

	evs, err := f.db.Evaluations(sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != validConfigs {
		t.Fatalf("%d evaluations stored", len(evs))
	}
	for _, e := range evs {
		if e.Status == string(backend.StatusCompileFailed) && (e.Reason == "" || e.Objective != nil) {
			t.Fatalf("compile failure stored without reason or with objective: %+v", e)
		}
	}
}

func TestRerunReusesAndFreshRemeasures(t *testing.T) {
	f := newFixture(t)
	first := f.run(t, "brute_force", 0, false, "")
	second := f.run(t, "brute_force", 0, false, "")
	if second.Evaluated != 0 || second.Reused != validConfigs {
		t.Fatalf("re-run evaluated %d reused %d", second.Evaluated, second.Reused)
	}
	if second.Best[0].Key != first.Best[0].Key || second.Best[0].Value != first.Best[0].Value {
		t.Fatalf("re-run best %s, first %s", second.Best[0].Key, first.Best[0].Key)
	}
	third := f.run(t, "brute_force", 0, true, "")
	if third.Evaluated != validConfigs || third.Reused != 0 {
		t.Fatalf("fresh run evaluated %d reused %d", third.Evaluated, third.Reused)
	}
}

func TestRandomSampleBudgetAndResume(t *testing.T) {
	f := newFixture(t)
	a := f.run(t, "random_sample", 20, false, "")
	if a.Evaluated != 20 {
		t.Fatalf("evaluated %d, want 20", a.Evaluated)
	}
	// Same seed, same budget: the same 20 configurations, all reused.
	b := f.run(t, "random_sample", 20, false, "")
	if b.Reused != 20 || b.Evaluated != 0 {
		t.Fatalf("second sample evaluated %d reused %d", b.Evaluated, b.Reused)
	}
	// Resuming as brute force measures only what is missing.
	c := f.run(t, "brute_force", 0, false, "")
	if c.Reused != 20 || c.Evaluated != validConfigs-20 {
		t.Fatalf("resume evaluated %d reused %d", c.Evaluated, c.Reused)
	}
}

func TestEnergyObjective(t *testing.T) {
	f := newFixture(t)
	sum := f.run(t, "brute_force", 0, false, objective.Energy)
	minE := -1.0
	for _, o := range sum.Evaluations {
		if !o.Valid() {
			continue
		}
		e, ok := o.Observations["energy"]
		if !ok || e <= 0 {
			t.Fatalf("%s: no energy observed: %v", o.Key, o.Observations)
		}
		if o.Value != e {
			t.Fatalf("objective %v != energy %v", o.Value, e)
		}
		if minE < 0 || e < minE {
			minE = e
		}
		if _, ok := o.Metrics["GB/s/W"]; !ok {
			t.Fatalf("%s: GB/s/W missing with an energy window", o.Key)
		}
	}
	if sum.Best[0].Value != minE {
		t.Fatalf("best energy %v, minimum %v", sum.Best[0].Value, minE)
	}
	// A time-only evaluation cannot answer an energy objective: nothing
	// from the first (time) run may be reused for energy.
	g := newFixture(t)
	off := false
	g.spec.Measurement.Energy = &off
	g.run(t, "brute_force", 10, false, "")
	g.spec.Measurement.Energy = nil
	e := g.run(t, "brute_force", 10, false, objective.Energy)
	if e.Reused != 0 {
		t.Fatalf("energy run reused %d time-only evaluations", e.Reused)
	}
}

func TestMetricsOverEnergyAreSkippedWithoutAnEnergyWindow(t *testing.T) {
	f := newFixture(t)
	off := false
	f.spec.Measurement.Energy = &off
	sum := f.run(t, "brute_force", 3, false, "")
	for _, o := range sum.Evaluations {
		if _, ok := o.Observations["power"]; ok {
			t.Fatalf("%s: power observed with Energy off", o.Key)
		}
		if _, ok := o.Metrics["GB/s/W"]; ok {
			t.Fatalf("%s: GB/s/W computed without an energy window", o.Key)
		}
		if _, ok := o.Metrics["GB/s"]; !ok {
			t.Fatalf("%s: GB/s missing", o.Key)
		}
	}
}

func TestBudgetFromSpec(t *testing.T) {
	f := newFixture(t)
	f.spec.Budget.MaxConfigurations = 5
	sum := f.run(t, "brute_force", 0, true, "")
	if sum.Evaluated != 5 {
		t.Fatalf("evaluated %d with ConfigurationCount 5", sum.Evaluated)
	}
	f.spec.Budget.MaxConfigurations = 0
	f.spec.Budget.Fraction = 0.25 // ceil(0.25*112) = 28
	sum = f.run(t, "brute_force", 0, true, "")
	if sum.Evaluated != 28 {
		t.Fatalf("evaluated %d with ConfigurationFraction 0.25", sum.Evaluated)
	}
	sum = f.run(t, "brute_force", 7, true, "")
	if sum.Evaluated != 7 {
		t.Fatalf("--max-evals 7 under fraction 0.25: evaluated %d", sum.Evaluated)
	}
}

// The simulated GPU reports modelled benchmark times, far longer than the
// wall time the simulation takes; framework time must still be the
// tuner's own (non-negative) time, as Kernel Tuner caches expect.
func TestFrameworkTimeIsNeverNegative(t *testing.T) {
	f := newFixture(t)
	sum := f.run(t, "brute_force", 20, false, "")
	evs, err := f.db.Evaluations(sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 20 {
		t.Fatalf("%d evaluations, want 20", len(evs))
	}
	for _, e := range evs {
		if e.FrameworkMs < 0 || e.FrameworkMs > 1000 {
			t.Errorf("%s: framework_ms %g, want the tuner's own time (≥ 0, well under a second)", e.Key, e.FrameworkMs)
		}
	}
}

// A metric that divides by zero for some configurations leaves them valid
// (the metric missing, with a note) when the objective is time, and makes
// them fail only when it is the objective itself.
func TestMissingMetricKeepsConfigurationValid(t *testing.T) {
	f := newFixture(t)
	f.spec.Metrics = append(f.spec.Metrics, spec.Metric{Name: "inv", Expr: expr.MustParse("1 / (block_size_x - 64)"), Maximize: true})
	sum := f.run(t, "brute_force", 0, false, "")
	if sum.Invalid != compileFailing+wrongAnswer {
		t.Fatalf("invalid = %d, want %d: a missing metric made configurations invalid", sum.Invalid, compileFailing+wrongAnswer)
	}
	seen := 0
	for _, o := range sum.Evaluations {
		if o.Params[0].Value != int64(64) || !o.Valid() {
			continue
		}
		seen++
		if _, ok := o.Metrics["inv"]; ok || !strings.Contains(o.Reason, `metrics missing: metric "inv"`) || o.Metrics["GB/s"] == 0 {
			t.Errorf("%s: metrics %v reason %q", o.Key, o.Metrics, o.Reason)
		}
	}
	if seen != 4 {
		t.Fatalf("%d valid configurations with block_size_x 64, want 4", seen)
	}
	g := newFixture(t)
	g.spec.Metrics = append(g.spec.Metrics, spec.Metric{Name: "inv", Expr: expr.MustParse("1 / (block_size_x - 64)"), Maximize: true})
	sum = g.run(t, "brute_force", 0, false, "inv")
	if sum.Invalid != compileFailing+wrongAnswer+4 {
		t.Errorf("objective inv: invalid = %d, want %d", sum.Invalid, compileFailing+wrongAnswer+4)
	}
}

// editedFixture is newFixture on a copy of testdata/spec.json changed by
// edit (the decoded JSON).
func editedFixture(t *testing.T, edit func(m map[string]any)) *fixture {
	t.Helper()
	data, err := os.ReadFile("testdata/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	dir := t.TempDir()
	out, _ := json.Marshal(m)
	src, _ := os.ReadFile("testdata/kernel.cu")
	os.WriteFile(filepath.Join(dir, "kernel.cu"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "spec.json"), out, 0o644)
	s, err := spec.Load(filepath.Join(dir, "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.spec = s
	return f
}

// fastConfig is simulated to move a thousandth of its bytes: 1000 times
// faster than its neighbours, the way a launch that does no work looks.
const fastConfig = "256,2"

func simulateBogus(m map[string]any) {
	m["Gtune"].(map[string]any)["Simulation"].(map[string]any)["Bytes"] = "12*n/1000 if block_size_x == 256 and work_per_thread == 2 else 12*n"
}

// Verified run: the GB/s metric of the bogus configuration exceeds the
// H100's memory bandwidth; it is flagged, stored as such and never the
// best.
func TestImplausibleAbovePeakIsNotTheBest(t *testing.T) {
	f := editedFixture(t, simulateBogus)
	d, _ := device.Lookup("h100_sxm")
	f.peaks = Peaks(d, f.spec)
	sum := f.run(t, "brute_force", 0, false, "")
	if len(sum.Implausible) != 1 || sum.Implausible[0].Key != fastConfig ||
		!strings.Contains(sum.Implausible[0].Implausible, `metric "GB/s" implies`) || !strings.Contains(sum.Implausible[0].Implausible, "the peak of 3352 GB/s (NVIDIA H100 80GB HBM3, device database)") {
		t.Fatalf("implausible %+v", sum.Implausible)
	}
	if sum.Best[0].Key == fastConfig || sum.Best[0].Implausible != "" {
		t.Errorf("best %s", sum.Best[0].Key)
	}
	evs, err := f.db.Evaluations(sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	flagged := 0
	for _, e := range evs {
		if e.Observations["implausible"] == 1 {
			flagged++
			if e.Key != fastConfig || e.Status != "valid" || !strings.Contains(e.Reason, "implausible: ") {
				t.Errorf("stored %s %s %q", e.Key, e.Status, e.Reason)
			}
		}
	}
	if flagged != 1 {
		t.Errorf("%d stored as implausible, want 1", flagged)
	}
	// Reused from the database, it stays flagged.
	again := f.run(t, "brute_force", 0, false, "")
	if again.Reused != validConfigs || len(again.Implausible) != 1 || again.Best[0].Key == fastConfig {
		t.Errorf("reused: %d reused, implausible %d, best %s", again.Reused, len(again.Implausible), again.Best[0].Key)
	}
}

// Unverified run without throughput metrics: the bogus configuration is
// 1000 times faster than its nearest neighbours and flagged at the end.
func TestUnverifiedOutlierIsFlagged(t *testing.T) {
	f := editedFixture(t, func(m map[string]any) {
		simulateBogus(m)
		g := m["Gtune"].(map[string]any)
		delete(g, "Reference")
		delete(g, "Metrics")
	})
	sum := f.run(t, "brute_force", 0, false, "")
	if len(sum.Implausible) != 1 || sum.Implausible[0].Key != fastConfig || !strings.Contains(sum.Implausible[0].Implausible, "nearest measured configurations, and its outputs are not verified") {
		t.Fatalf("implausible %+v", sum.Implausible)
	}
	if sum.Best[0].Key == fastConfig {
		t.Error("the outlier is the best")
	}
	evs, _ := f.db.Evaluations(sum.RunID)
	for _, e := range evs {
		if (e.Observations["implausible"] == 1) != (e.Key == fastConfig) {
			t.Errorf("%s: stored implausible=%v", e.Key, e.Observations["implausible"])
		}
	}
}

// A run that verifies its outputs against the reference configuration
// needs no temporary folder: each GPU keeps its reference (a run made
// one, and failed where TMPDIR could not hold it).
func TestReferenceWritesNothing(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "absent")
	t.Setenv("TMPDIR", tmp)
	f := newFixture(t)
	prob, err := f.spec.Problem()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := device.Lookup("h100_sxm"); !needsReference(sim.New(d, sim.Options{}), prob) {
		t.Fatal("the fixture's spec verifies nothing against a reference")
	}
	if sum := f.run(t, "brute_force", 5, true, ""); sum.Evaluated != 5 {
		t.Fatalf("evaluated %d", sum.Evaluated)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("TMPDIR made: %v", err)
	}
}

func TestAbovePowerLimitNoted(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	be := sim.New(d, sim.Options{})
	defer be.Close()
	for _, tc := range []struct {
		limit, power float64
		noted        bool
	}{{0, 741, true}, {0, 690, false}, {300, 350, true}, {300, 290, false}} {
		var set *backend.Settings
		if tc.limit > 0 {
			set = &backend.Settings{PowerLimitW: tc.limit}
		}
		o := &Evaluation{Observations: map[string]float64{"power": tc.power}}
		abovePowerLimit(be.Device().PowerLimitW, set, o)
		if got := o.Observations["above_power_limit"] == 1; got != tc.noted || got != strings.Contains(o.Reason, "is above the enforced power limit") {
			t.Errorf("limit %v power %v: noted %v reason %q", tc.limit, tc.power, got, o.Reason)
		}
	}
	if be.Device().PowerLimitW != 700 {
		t.Fatalf("the simulated H100's power limit is %v W", be.Device().PowerLimitW)
	}
}
