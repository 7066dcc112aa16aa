package tuner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/store"
)

// runOn tunes the fixture's spec by brute force on n simulated GPUs of
// model id (the first as Config.Backend, the rest as Config.GPUs).
func runOn(t *testing.T, f *fixture, n int, extra ...backend.Backend) (*Summary, error) {
	t.Helper()
	opts := make([]sim.Options, n)
	for i := range opts {
		opts[i] = sim.Options{Seed: 7, Noise: 0.01}
	}
	return runGPUs(t, f, nil, append(simGPUs(t, nil, opts...), extra...)...)
}

// One run over three simulated GPUs of one model measures what one GPU
// measures (the simulator's answers do not depend on the GPU): the same
// outcomes and best, each evaluation recording its GPU, every GPU busy;
// a re-run on one GPU reuses all of it.
func TestRunOverSeveralGPUs(t *testing.T) {
	one, err := runOn(t, newFixture(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	three, err := runOn(t, f, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(three.Evaluations) != len(one.Evaluations) || three.Evaluated != one.Evaluated || three.Invalid != one.Invalid {
		t.Fatalf("three GPUs: %d outcomes, %d evaluated, %d invalid; one GPU: %d, %d, %d",
			len(three.Evaluations), three.Evaluated, three.Invalid, len(one.Evaluations), one.Evaluated, one.Invalid)
	}
	byKey := map[string]*Evaluation{}
	for _, o := range one.Evaluations {
		byKey[o.Key] = o
	}
	for _, o := range three.Evaluations {
		w := byKey[o.Key]
		if w == nil || w.Status != o.Status || w.Value != o.Value {
			t.Fatalf("%s: %s %v on three GPUs, %v on one", o.Key, o.Status, o.Value, w)
		}
	}
	if three.Best[0].Key != one.Best[0].Key || three.Best[0].Value != one.Best[0].Value {
		t.Errorf("best %s %v, one GPU's %s %v", three.Best[0].Key, three.Best[0].Value, one.Best[0].Key, one.Best[0].Value)
	}
	if len(three.GPUs) != 3 || one.GPUs != nil {
		t.Fatalf("GPU shares %+v (one GPU: %+v)", three.GPUs, one.GPUs)
	}
	total := 0
	for i, g := range three.GPUs {
		want := "SIM-h100_sxm"
		if i > 0 {
			want += "-" + string(rune('0'+i))
		}
		if g.UUID != want || g.Evaluated == 0 {
			t.Errorf("GPU %d: %+v, want %s with evaluations", i, g, want)
		}
		total += g.Evaluated
	}
	// A configuration that failed to compile never reached a GPU: it is
	// the run's, stored with no GPU.
	compileFailed := 0
	for _, o := range three.Evaluations {
		if o.Status == backend.StatusCompileFailed {
			compileFailed++
		}
	}
	if compileFailed == 0 || total+compileFailed != three.Evaluated {
		t.Errorf("GPUs evaluated %d and %d failed to compile, the run %d", total, compileFailed, three.Evaluated)
	}
	stored, err := f.db.RunEvaluations(three.RunID)
	if err != nil {
		t.Fatal(err)
	}
	perGPU := map[string]int{}
	for _, e := range stored {
		perGPU[e.GPU]++
		if e.DeviceUUID != "SIM-h100_sxm" {
			t.Fatalf("%s: reuse key device %s, want the run's", e.Key, e.DeviceUUID)
		}
	}
	if perGPU[""] != compileFailed {
		t.Errorf("%d stored without a GPU, %d failed to compile", perGPU[""], compileFailed)
	}
	for _, g := range three.GPUs {
		if perGPU[g.UUID] != g.Evaluated {
			t.Errorf("%s: %d stored, %d evaluated", g.UUID, perGPU[g.UUID], g.Evaluated)
		}
	}
	again, err := runOn(t, f, 1)
	if err != nil || again.Evaluated != 0 || again.Reused != len(three.Evaluations) {
		t.Errorf("re-run on one GPU: evaluated %d, reused %d, %v", again.Evaluated, again.Reused, err)
	}
}

// GPUs of different models, or one GPU twice, are refused before any
// work.
func TestSeveralGPUsRefused(t *testing.T) {
	a100, _ := device.Lookup("a100_40gb")
	other := sim.New(a100, sim.Options{Index: 1})
	defer other.Close()
	_, err := runOn(t, newFixture(t), 2, other)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "GPUs of different models in one run: Simulated NVIDIA H100 80GB HBM3 (SIM-h100_sxm) and Simulated NVIDIA A100-PCIE-40GB (SIM-a100_40gb-1)") {
		t.Errorf("two models: %v", err)
	}
	h100, _ := device.Lookup("h100_sxm")
	twice := sim.New(h100, sim.Options{Index: 1})
	defer twice.Close()
	if _, err := runOn(t, newFixture(t), 2, twice); err == nil || !strings.Contains(err.Error(), "GPU SIM-h100_sxm-1 is given twice") {
		t.Errorf("a GPU twice: %v", err)
	}
}

// failingGPU is a simulated GPU whose backend fails (as a worker that
// died and cannot be restarted) on its first n runs after ok good ones,
// or on every run after them when n < 0.
type failingGPU struct {
	*sim.Sim
	ok, n, runs int
}

func (f *failingGPU) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	f.runs++
	if f.runs > f.ok && (f.n < 0 || f.runs-f.ok <= f.n) {
		return nil, errors.New("GPU worker died: the GPU has fallen off the bus")
	}
	return f.Sim.Run(ctx, p)
}

// A GPU whose backend fails costs no configuration: each goes to another
// GPU, is measured once and stored once; a GPU failing three times in a
// row leaves the run, saying why, and the run ends with every
// configuration measured. A GPU that fails twice and recovers stays. A
// run whose every GPU fails ends with the GPU's error.
func TestGPUFailuresRequeue(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	f := newFixture(t)
	// ok: 1, each GPU's own reference run passes (executor.Pool.Open).
	dead := &failingGPU{Sim: sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: 3}), ok: 1, n: -1}
	flaky := &failingGPU{Sim: sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: 4}), ok: 1, n: 2}
	sum, err := runOn(t, f, 2, dead, flaky)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Evaluated != validConfigs {
		t.Fatalf("evaluated %d, want %d", sum.Evaluated, validConfigs)
	}
	stored, _ := f.db.RunEvaluations(sum.RunID)
	seen := map[string]bool{}
	for _, e := range stored {
		if seen[e.Key] {
			t.Fatalf("%s stored twice", e.Key)
		}
		seen[e.Key] = true
		if e.GPU == "SIM-h100_sxm-3" {
			t.Fatalf("%s stored as measured on the dead GPU", e.Key)
		}
	}
	g := sum.GPUs
	if len(g) != 4 || g[2].Dropped == "" || !strings.Contains(g[2].Dropped, "3 failures in a row, the last: GPU worker died") || g[2].Evaluated != 0 || dead.runs != 1+executor.MaxFailures {
		t.Errorf("the dead GPU: %+v after %d runs", g[2], dead.runs)
	}
	if g[3].Dropped != "" || g[3].Evaluated == 0 {
		t.Errorf("the flaky GPU: %+v", g[3])
	}
	// Every GPU dead: the run fails with the GPU's error, nothing stored
	// as measured.
	f2 := newFixture(t)
	a := &failingGPU{Sim: sim.New(d, sim.Options{Index: 1}), ok: 1, n: -1} // the reference run passes
	b := &failingGPU{Sim: sim.New(d, sim.Options{Index: 2}), ok: 1, n: -1}
	sp, _ := f2.spec.BuildSpace()
	_, err = Run(context.Background(), Config{Subject: FromSpec(f2.spec), Space: sp, Backend: a, GPUs: []backend.Backend{b}, DB: f2.db,
		Objective: objective.FromSpec(f2.spec), Strategy: "brute_force", CompileWorkers: 2})
	if err == nil || !strings.Contains(err.Error(), "every GPU of the run failed") || !strings.Contains(err.Error(), "fallen off the bus") {
		t.Errorf("every GPU dead: %v", err)
	}
	// A further GPU whose own reference run fails leaves the run at
	// once, saying so; the others measure everything.
	f3 := newFixture(t)
	good := sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: 5})
	noRef := &failingGPU{Sim: sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: 6}), n: 1}
	sp3, _ := f3.spec.BuildSpace()
	sum, err = Run(context.Background(), Config{Subject: FromSpec(f3.spec), Space: sp3, Backend: good, GPUs: []backend.Backend{noRef}, DB: f3.db,
		Objective: objective.FromSpec(f3.spec), Strategy: "brute_force", CompileWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if g := sum.GPUs; sum.Evaluated != validConfigs || g[1].Evaluated != 0 || !strings.HasPrefix(g[1].Dropped, "the reference run on SIM-h100_sxm-6: ") || noRef.runs != 1 {
		t.Errorf("a GPU whose reference fails: %d evaluated, %+v, %d runs", sum.Evaluated, sum.GPUs, noRef.runs)
	}
}

// Strategies that wait for results (a generation, a model) use their
// whole budget on several GPUs: a proposal measuring on a GPU is
// outstanding, so a strategy that proposes nothing meanwhile has not
// ended the search.
func TestWaitingStrategiesOnSeveralGPUs(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	for _, name := range []string{"genetic_algorithm", "bayes_opt", "greedy_ils"} {
		f := newFixture(t)
		sp, _ := f.spec.BuildSpace()
		var gpus []backend.Backend
		for i := range 3 {
			be := sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: i})
			defer be.Close()
			gpus = append(gpus, be)
		}
		sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: gpus[0], GPUs: gpus[1:], DB: f.db,
			Objective: objective.FromSpec(f.spec), Strategy: name, Seed: 3, MaxEvals: 40, CompileWorkers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Evaluated != 40 {
			t.Errorf("%s on three GPUs: %d evaluated of a budget of 40", name, sum.Evaluated)
		}
	}
}

// bayes_opt with 4 configurations in flight on one GPU: the run is the
// same whatever the compile times (results are told in the order
// proposed, each before the next proposal), differs from one at a time,
// and its settings say how many; on the simulated GPU the default is 1.
func TestInFlight(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	order := func(inFlight int) ([]string, *store.Run) {
		f := newFixture(t)
		sp, _ := f.spec.BuildSpace()
		be := sim.New(d, sim.Options{Seed: 7, Noise: 0.01})
		defer be.Close()
		sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: be, DB: f.db,
			Objective: objective.FromSpec(f.spec), Strategy: "bayes_opt", Seed: 3, MaxEvals: 30, InFlight: inFlight, CompileWorkers: 4})
		if err != nil {
			t.Fatal(err)
		}
		es, err := f.db.Evaluations(sum.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range es {
			keys = append(keys, e.Key)
		}
		r, err := f.db.Run(sum.RunID)
		if err != nil {
			t.Fatal(err)
		}
		return keys, r
	}
	four, r := order(4)
	again, _ := order(4)
	one, r1 := order(0)
	if len(four) != 30 || !slices.Equal(four, again) {
		t.Errorf("4 in flight: %d evaluated; two runs %v\n%v", len(four), four, again)
	}
	if slices.Equal(four, one) {
		t.Errorf("4 in flight evaluated what 1 does: %v", four)
	}
	if got, got1 := r.Settings["in_flight"], r1.Settings["in_flight"]; got != 4.0 || got1 != 1.0 {
		t.Errorf("settings in_flight %v and, by default on the simulated GPU, %v; want 4 and 1", got, got1)
	}
}

// unpreparable is a simulated GPU whose arguments cannot be prepared
// (out of memory, a driver error).
type unpreparable struct{ *sim.Sim }

func (u unpreparable) Prepare(ctx context.Context, p *backend.Problem) error {
	return errors.New("out of memory")
}

// A further GPU whose preparation fails (executor.Pool.Open) leaves the
// run, its share saying why; the others measure everything. It used to
// end the run.
func TestGPUUnpreparedLeaves(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	bad := unpreparable{sim.New(d, sim.Options{Seed: 7, Index: 2})}
	defer bad.Close()
	sum, err := runOn(t, newFixture(t), 2, bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.GPUs) != 3 || sum.GPUs[2].Evaluated != 0 || !strings.Contains(sum.GPUs[2].Dropped, "preparing the kernel arguments on SIM-h100_sxm-2: out of memory") {
		t.Fatalf("shares %+v", sum.GPUs)
	}
	two, err := runOn(t, newFixture(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Evaluated != two.Evaluated || sum.Invalid != two.Invalid || sum.GPUs[0].Evaluated == 0 || sum.GPUs[1].Evaluated == 0 {
		t.Errorf("evaluated %d (%d invalid) on GPUs measuring %d and %d; two GPUs alone: %d (%d invalid)",
			sum.Evaluated, sum.Invalid, sum.GPUs[0].Evaluated, sum.GPUs[1].Evaluated, two.Evaluated, two.Invalid)
	}
}

// An energy run states what the warm-up cost: each GPU's warm-up before
// its first energy measurement, and their sum in Summary.Time.
func TestWarmupStated(t *testing.T) {
	f := newFixture(t)
	f.spec.Objective, f.spec.ObjectiveMaximize = "energy", false
	sum, err := runOn(t, f, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.GPUs[0].Warmup <= 0 || sum.GPUs[1].Warmup <= 0 || sum.Time.Warmup != sum.GPUs[0].Warmup+sum.GPUs[1].Warmup {
		t.Errorf("warm-up %v; GPUs %v and %v", sum.Time.Warmup, sum.GPUs[0].Warmup, sum.GPUs[1].Warmup)
	}
	noEnergy := newFixture(t)
	off := false
	noEnergy.spec.Measurement.Energy = &off
	if sum, err := runOn(t, noEnergy, 1); err != nil || sum.Time.Warmup != 0 {
		t.Errorf("a run without energy: warm-up %v, %v", sum.Time.Warmup, err)
	}
}

// slowFirst is a simulated GPU whose first Run takes d more (a slow
// warm-up), or until its context ends.
type slowFirst struct {
	*sim.Sim
	d      time.Duration
	warmed bool
}

func (s *slowFirst) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	if !s.warmed {
		s.warmed = true
		select {
		case <-time.After(s.d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Sim.Run(ctx, p)
}

// Config.WarmAll: the first configuration goes to every GPU at once; a
// GPU slow to warm up holds no configuration of its own, its duplicate is
// cancelled when nothing else is left, and the run does not wait for it.
// Every configuration is stored once, the same as on two GPUs alone.
func TestWarmAll(t *testing.T) {
	f := newFixture(t)
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	var gpus []backend.Backend
	for i := range 2 {
		g := sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: i})
		defer g.Close()
		gpus = append(gpus, g)
	}
	slow := &slowFirst{Sim: sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: 2}), d: time.Minute}
	defer slow.Close()
	gpus = append(gpus, slow)
	start := time.Now()
	sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: gpus[0], GPUs: gpus[1:], DB: f.db,
		Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2, WarmAll: true})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("the run waited %v for the slow GPU's warm-up", el)
	}
	if sum.GPUs[2].Evaluated != 0 || sum.GPUs[2].Dropped != "" {
		t.Errorf("the slow GPU: %+v", sum.GPUs[2])
	}
	evs, _ := f.db.Evaluations(sum.RunID)
	keys := map[string]int{}
	for _, e := range evs {
		keys[e.Key]++
	}
	two, err := runOn(t, newFixture(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(evs) || sum.Evaluated != two.Evaluated || sum.GPUs[0].Evaluated+sum.GPUs[1].Evaluated == 0 {
		t.Errorf("%d evaluations of %d configurations (each once?), %d evaluated; two GPUs alone: %d", len(evs), len(keys), sum.Evaluated, two.Evaluated)
	}
}

// lateGPU is a simulated GPU whose preparation takes prep and whose
// first trial after the reference run (its second Run) waits for hold
// (5 s at most; held says whether it had to give up): a GPU slow to
// open, and one whose first trial lasts (an energy warm-up). release,
// where set, is closed after its releaseAfter-th trial.
type lateGPU struct {
	*sim.Sim
	prep         time.Duration
	hold         chan struct{}
	held         bool
	release      chan struct{}
	releaseAfter int
	runs         int
	keys         []string // the plans it ran, in order
}

func (g *lateGPU) Prepare(ctx context.Context, p *backend.Problem) error {
	time.Sleep(g.prep)
	return g.Sim.Prepare(ctx, p)
}

func (g *lateGPU) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	if g.runs++; g.runs == 2 && g.hold != nil {
		select {
		case <-g.hold:
		case <-time.After(5 * time.Second):
			g.held = true
		}
	}
	if g.release != nil && g.runs == 1+g.releaseAfter {
		close(g.release)
	}
	g.keys = append(g.keys, p.Key)
	return g.Sim.Run(ctx, p)
}

// lateGPUs are two simulated GPUs: the first holds its first trial until
// the second, 100 ms slower to prepare, has run its release-th trial.
func lateGPUs(t *testing.T, release int) (first, late *lateGPU) {
	d, _ := device.Lookup("h100_sxm")
	ch := make(chan struct{})
	first = &lateGPU{Sim: sim.New(d, sim.Options{Seed: 7, Noise: 0.01}), hold: ch}
	late = &lateGPU{Sim: sim.New(d, sim.Options{Seed: 7, Noise: 0.01, Index: 1}), prep: 100 * time.Millisecond, release: ch, releaseAfter: release}
	t.Cleanup(func() { first.Close(); late.Close() })
	return first, late
}

// A GPU that is ready after the first has started a long trial measures
// at once (executor.Pool.Await): the first GPU's first trial lasts until
// the second GPU, ready after 100 ms, has measured 20 configurations
// (with Wait that GPU joined only when that trial ended, after 5 s, and
// measured none before).
func TestLateGPUMeasuresAtOnce(t *testing.T) {
	slow, late := lateGPUs(t, 20)
	sum, err := runGPUs(t, newFixture(t), nil, slow, late)
	if err != nil {
		t.Fatal(err)
	}
	if slow.held || sum.Evaluated != validConfigs {
		t.Errorf("the first GPU's first trial gave up waiting for the late GPU's 20 (%v); evaluated %d of %d", slow.held, sum.Evaluated, validConfigs)
	}
}

// Under Config.WarmAll a GPU that joins while the first configuration
// still warms the others up gets it too (warmOnFree): it warms up on
// the configuration every GPU warms on, not on one of its own.
func TestLateGPUWarmsWithTheOthers(t *testing.T) {
	// The first GPU's first trial lasts until the late GPU has run its
	// own first trial.
	first, late := lateGPUs(t, 1)
	sum, err := runGPUs(t, newFixture(t), func(c *Config) { c.WarmAll = true }, first, late)
	if err != nil {
		t.Fatal(err)
	}
	// Each ran the reference, then the first configuration.
	if first.held || len(first.keys) < 2 || len(late.keys) < 2 || late.keys[1] != first.keys[1] {
		t.Fatalf("first GPU ran %.3q (gave up waiting: %v), the late one %.3q", first.keys, first.held, late.keys)
	}
	if sum.Evaluated != validConfigs {
		t.Errorf("evaluated %d, want %d", sum.Evaluated, validConfigs)
	}
}
