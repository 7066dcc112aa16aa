package tuner

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/workload"
)

// twoKernels is streamcluster and particle filter run together on the
// simulated H100, 5 × 5 thread-block sizes, with the launch orders when
// orders.
func twoKernels(t *testing.T, orders bool) (*workload.Set, *workload.Layout, *space.Space) {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "examples", "rodinia"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "two.yaml")
	body := "kernels:\n" +
		"  - {name: sc, spec: RODINIA/streamcluster/spec.json, config: {block_size_x: [64, 128, 256, 512, 1024]}}\n" +
		"  - {name: pf, spec: RODINIA/particlefilter/spec.json, config: {block_size_x: [64, 128, 256, 512, 1024]}}\n"
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "RODINIA", abs)), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := workload.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	sp, lay, err := set.Space(context.Background(), orders, space.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set, lay, sp
}

// openWorkloadDB opens a results database in the test's folder, closed
// when the test ends.
func openWorkloadDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func runWorkload(t *testing.T, db *store.DB, set *workload.Set, lay *workload.Layout, sp *space.Space, strat string) *Summary {
	t.Helper()
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	be := sim.New(d, sim.Options{Seed: 7})
	defer be.Close()
	c := Config{Subject: FromWorkload(set, lay), Space: sp, Backend: be, DB: db, Objective: objective.Objective{Name: objective.Time, Unit: "ms"},
		Strategy: strat, Seed: 1, CompileWorkers: 2}
	if err := c.Provide(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// Every combination of the two kernels measured as one plan on two
// streams; each kernel's own time kept; a second brute force reuses all
// 25. Algorithm 3: streamcluster's 44 registers per thread cap it at
// 62.5 % occupancy, reached by 128 and 256 threads (D = [256, 128],
// fewest blocks first); particle filter's D starts at 1024. From (256,
// 1024) it walks particle filter, the slower kernel (1024 → 512 rises),
// then streamcluster (256 → 128 rises): 3 evaluations, within 2 % of the
// brute-force optimum (which has streamcluster at 1024 threads, outside
// the reduced space).
func TestWorkloadBruteForceAndAlgorithm3(t *testing.T) {
	set, lay, sp := twoKernels(t, false)
	db := openWorkloadDB(t)
	bf := runWorkload(t, db, set, lay, sp, "brute_force")
	if bf.Evaluated != 25 || bf.Invalid != 0 {
		t.Fatalf("brute force evaluated %d, invalid %d; want 25, 0", bf.Evaluated, bf.Invalid)
	}
	best := bf.Best[0]
	if len(best.KernelTimes) != 2 || math.IsNaN(best.KernelTimes[0]) || best.KernelTimes[0] >= best.Value || best.KernelTimes[1] > best.Value+1e-9 {
		t.Errorf("kernel times %v of a plan of %g ms", best.KernelTimes, best.Value)
	}
	g := runWorkload(t, db, set, lay, sp, "multi_occupancy_greedy")
	if g.Evaluated+g.Reused != 3 || g.Best[0].Key != "256,1024" {
		t.Errorf("Algorithm 3 considered %d configurations, best %s; want 3, 256,1024", g.Evaluated+g.Reused, g.Best[0].Key)
	}
	if gap := g.Best[0].Value/best.Value - 1; gap > 0.02 {
		t.Errorf("Algorithm 3's best %s is %.1f %% from the optimum %s", g.Best[0].Key, 100*gap, best.Key)
	}
	again := runWorkload(t, db, set, lay, sp, "brute_force")
	if again.Reused != 25 || again.Evaluated != 0 || again.Best[0].Key != best.Key {
		t.Errorf("second brute force reused %d, evaluated %d, best %s; want 25, 0, %s", again.Reused, again.Evaluated, again.Best[0].Key, best.Key)
	}
	if again.Best[0].KernelTimes == nil || math.Abs(again.Best[0].KernelTimes[0]-best.KernelTimes[0]) > 1e-9 {
		t.Errorf("reused kernel times %v, measured %v", again.Best[0].KernelTimes, best.KernelTimes)
	}
}

// With the launch orders in the space, the two orders of one
// configuration are both measured, and their plans differ only in issue
// order.
func TestWorkloadOrders(t *testing.T) {
	set, lay, sp := twoKernels(t, true)
	if sp.Len() != 50 {
		t.Fatalf("%d configurations with orders, want 50", sp.Len())
	}
	db := openWorkloadDB(t)
	sum := runWorkload(t, db, set, lay, sp, "brute_force")
	if sum.Evaluated != 50 || sum.Invalid != 0 {
		t.Fatalf("evaluated %d, invalid %d", sum.Evaluated, sum.Invalid)
	}
	if !strings.HasSuffix(sum.Best[0].Key, "sc>pf") && !strings.HasSuffix(sum.Best[0].Key, "pf>sc") {
		t.Errorf("best key %q names no order", sum.Best[0].Key)
	}
}

// Two different kernels named on a command line (workload.FromSpecs), on
// two streams and on one, on the simulated H100: the tuner measures the
// one plan of its space afresh, stores per-launch and whole-plan times
// and the plan's energy, each with its unit and method; on one stream
// the plan takes the sum of its launches, on two it overlaps.
func TestMeasureTwoSpecsOnTheSimulator(t *testing.T) {
	var cfgs [][]expr.Value
	load := func(name string) *spec.Spec {
		s, err := spec.Load(filepath.Join("..", "examples", name, "spec.json"))
		if err != nil {
			t.Fatal(err)
		}
		sp, err := s.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, sp.Values(0))
		return s
	}
	va, mm := load("vector_add"), load("matmul")
	db, err := store.Open(filepath.Join(t.TempDir(), "gtune.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	ratio := map[bool]float64{}
	for _, streams := range [][]int{{0, 1}, {0, 0}} {
		set, err := workload.FromSpecs([]*spec.Spec{va, mm}, cfgs, streams)
		if err != nil {
			t.Fatal(err)
		}
		set.Measurement = &workload.FileMeasurement{Iterations: 5, Energy: &on}
		sp, lay, err := set.Space(context.Background(), false, space.BuildOptions{})
		if err != nil || sp.Len() != 1 {
			t.Fatalf("space of %v configurations, %v", sp, err)
		}
		be := sim.New(d, sim.Options{Seed: 1})
		sum, err := Run(context.Background(), Config{Subject: FromWorkload(set, lay), Space: sp, Backend: be, DB: db,
			Objective: objective.Objective{Name: objective.Time, Unit: "ms"}, Strategy: "brute_force", RunKind: "measure", MaxEvals: 1, Fresh: true})
		be.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Evaluations) != 1 || !sum.Evaluations[0].Valid() {
			t.Fatalf("streams %v: %+v", streams, sum.Evaluations)
		}
		es, err := db.Evaluations(sum.RunID)
		if err != nil || len(es) != 1 || len(es[0].Launches) != 2 || es[0].Launches[1].Kernel != mm.KernelName || es[0].Launches[1].Stream != streams[1] {
			t.Fatalf("stored launches %+v, %v", es, err)
		}
		obs, err := db.Observations(es[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		get := func(name string, launch int, unit string) float64 {
			t.Helper()
			for _, o := range obs {
				if o.Name == name && o.Launch == launch {
					if o.Unit != unit || o.Method == "" || o.Method == store.MethodBeforeV3 {
						t.Errorf("%s[%d]: unit %q method %q", name, launch, o.Unit, o.Method)
					}
					return o.Value
				}
			}
			t.Fatalf("streams %v: %s[%d] not stored (%d observations)", streams, name, launch, len(obs))
			return 0
		}
		plan, t0, t1 := get("time", measure.PlanScope, "ms"), get("time", 0, "ms"), get("time", 1, "ms")
		if e, p := get("energy", measure.PlanScope, "J"), get("power", measure.PlanScope, "W"); e <= 0 || p <= 0 {
			t.Errorf("energy %v J, power %v W", e, p)
		}
		get("registers", 1, "count")
		if plan < max(t0, t1)*0.99 || plan > (t0+t1)*1.02 {
			t.Errorf("streams %v: plan %v ms, launches %v and %v ms", streams, plan, t0, t1)
		}
		ratio[streams[1] == 1] = plan / (t0 + t1)
		runs, err := db.Runs()
		if err != nil || runs[0].Strategy != "measure" {
			t.Fatalf("runs %+v, %v", runs, err)
		}
	}
	if ratio[true] >= ratio[false] {
		t.Errorf("two streams take %.3f of the sum of the launches, one stream %.3f: no overlap", ratio[true], ratio[false])
	}
}

// multi_alone_greedy on the simulated H100: without the kernels' times
// alone in the database it refuses to start, naming the command that
// fixes it; after a brute force of each spec alone (same database, same
// simulated GPU) it starts every kernel at its fastest configuration
// alone, and ends at the brute-force optimum of the combined space.
func TestWorkloadAloneGreedy(t *testing.T) {
	set, lay, sp := twoKernels(t, false)
	db := openWorkloadDB(t)
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	be := sim.New(d, sim.Options{Seed: 7})
	defer be.Close()
	c := Config{Subject: FromWorkload(set, lay), Space: sp, Backend: be, DB: db, Strategy: "multi_alone_greedy",
		Objective: objective.Objective{Name: objective.Time, Unit: "ms"}}
	if err := c.Provide(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "gtune tune SPEC") {
		t.Fatalf("without times alone: %v", err)
	}
	for _, m := range set.Members {
		msp, err := m.Spec.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), Config{Subject: FromSpec(m.Spec), Space: msp, Backend: be, DB: db,
			Objective: objective.Objective{Name: objective.Time, Unit: "ms"}, Strategy: "brute_force", CompileWorkers: 2}); err != nil {
			t.Fatal(err)
		}
	}
	bf := runWorkload(t, db, set, lay, sp, "brute_force")
	g := runWorkload(t, db, set, lay, sp, "multi_alone_greedy")
	if g.Evaluated+g.Reused != 6 || g.Best[0].Key != bf.Best[0].Key || bf.Best[0].Key != "1024,64" {
		t.Errorf("alone greedy considered %d, best %s; brute force best %s; want 6, 1024,64 twice", g.Evaluated+g.Reused, g.Best[0].Key, bf.Best[0].Key)
	}
}

// The compile cache: a brute force of the two-kernel workload (25 plans)
// compiles each kernel's five configurations once (10), and reuses them
// in the other 40 launches; a second run over another cache opened on
// the same folder, measuring everything afresh, compiles nothing. A run
// without the cache compiles the same 10, within the run.
func TestWorkloadCompileCache(t *testing.T) {
	set, lay, sp := twoKernels(t, false)
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(cc *compilecache.Cache) *Summary {
		be := sim.New(d, sim.Options{Seed: 7})
		defer be.Close()
		sum, err := Run(context.Background(), Config{Subject: FromWorkload(set, lay), Space: sp, Backend: be, DB: openWorkloadDB(t),
			Objective: objective.Objective{Name: objective.Time, Unit: "ms"}, Strategy: "brute_force", CompileWorkers: 2, CompileCache: cc})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	// The reference plan's two launches come through the run's build
	// layer too: two more reused (they were compiled outside it).
	for i, want := range [][2]int{{10, 42}, {0, 52}} {
		cc, err := compilecache.Open(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		sum := run(cc)
		if sum.Evaluated != 25 || sum.Compiled != want[0] || sum.CompileReused != want[1] {
			t.Errorf("run %d: evaluated %d, compiled %d, reused %d; want 25, %d, %d", i+1, sum.Evaluated, sum.Compiled, sum.CompileReused, want[0], want[1])
		}
	}
	if sum := run(nil); sum.Compiled != 10 || sum.CompileReused != 42 {
		t.Errorf("without the cache: compiled %d, reused %d; want 10, 42", sum.Compiled, sum.CompileReused)
	}
}
