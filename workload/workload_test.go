package workload

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

func load(t *testing.T, example string) *spec.Spec {
	t.Helper()
	s, err := spec.Load(filepath.Join("..", "examples", example, "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// first is the first configuration of s's search space.
func first(t *testing.T, s *spec.Spec) []expr.Value {
	t.Helper()
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	return sp.Values(0)
}

func simH100(t *testing.T) *sim.Sim {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(d, sim.Options{Seed: 1})
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPlanComposesKernels(t *testing.T) {
	va, mm := load(t, "vector_add"), load(t, "matmul")
	w := &Workload{Launches: []Launch{{Spec: va, Config: first(t, va)}, {Spec: mm, Config: first(t, mm), Stream: 1}}}
	prob, plan, err := w.Plan(measure.Request{Iterations: 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(prob.Kernels) != 2 || prob.Kernels[0].KernelName != va.KernelName || prob.Kernels[1].KernelName != mm.KernelName {
		t.Fatalf("kernels %+v", prob.Kernels)
	}
	if plan.Launches[1].Job.Kernel != 1 || plan.Launches[1].Stream != 1 || plan.Streams() != 2 {
		t.Fatalf("launch 1 %+v, %d streams", plan.Launches[1], plan.Streams())
	}
	want := va.Key(first(t, va)) + "@s0|" + mm.Key(first(t, mm)) + "@s1"
	if plan.Key != want {
		t.Fatalf("key %q, want %q", plan.Key, want)
	}
	if h := w.Hash(); h == va.Hash || h == mm.Hash || len(h) != 64 {
		t.Fatalf("hash %q", h)
	}
	ps := w.Params()
	if ps[0].Name != "k0."+va.Params[0].Name || ps[len(va.Params)].Name != "k1."+mm.Params[0].Name {
		t.Fatalf("params %+v", ps)
	}
	if _, _, err := (&Workload{Launches: []Launch{{Spec: va, Config: first(t, va), Stream: -1}}}).Plan(measure.Request{}, 0); err == nil ||
		!strings.Contains(err.Error(), "negative stream") {
		t.Fatalf("negative stream: %v", err)
	}
}

func TestConflictingSettings(t *testing.T) {
	p := &backend.Plan{}
	if err := mergeSettings(p, &backend.Settings{CoreClockMHz: 1410}, 0); err != nil {
		t.Fatal(err)
	}
	if err := mergeSettings(p, &backend.Settings{PowerLimitW: 400}, 1); err != nil || *p.Settings != (backend.Settings{CoreClockMHz: 1410, PowerLimitW: 400}) {
		t.Fatalf("merged %+v, %v", p.Settings, err)
	}
	if err := mergeSettings(p, &backend.Settings{CoreClockMHz: 990}, 2); err == nil || !strings.Contains(err.Error(), "nvml_gr_clock 990, an earlier launch for 1410") {
		t.Fatalf("conflict: %v", err)
	}
}

// Two different kernels on two streams on the simulated H100: measured
// once, stored with per-launch and whole-plan times and the plan's energy,
// each with its unit and method; on one stream the plan takes the sum of
// its launches, on two it overlaps.
func TestMeasureTwoKernelsOnTheSimulator(t *testing.T) {
	va, mm := load(t, "vector_add"), load(t, "matmul")
	db, err := store.Open(filepath.Join(t.TempDir(), "gtune.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plans := map[string]float64{}
	for _, streams := range [][2]int{{0, 1}, {0, 0}} {
		w := &Workload{Launches: []Launch{{Spec: va, Config: first(t, va), Stream: streams[0]}, {Spec: mm, Config: first(t, mm), Stream: streams[1]}}}
		m, err := w.Measure(context.Background(), simH100(t), db, measure.Request{Iterations: 5, Energy: true}, 0, "test")
		if err != nil {
			t.Fatal(err)
		}
		if m.Result.Status != backend.StatusValid {
			t.Fatalf("streams %v: %s %s", streams, m.Result.Status, m.Result.Reason)
		}
		obs, err := db.Observations(m.EvaluationID)
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
		plans[strings.Join([]string{string(rune('0' + streams[0])), string(rune('0' + streams[1]))}, "")] = plan / (t0 + t1)
		es, err := db.Evaluations(m.RunID)
		if err != nil || len(es) != 1 || len(es[0].Launches) != 2 || es[0].Launches[1].Kernel != mm.KernelName || es[0].Launches[1].Stream != streams[1] {
			t.Fatalf("stored launches %+v, %v", es, err)
		}
	}
	if plans["01"] >= plans["00"] {
		t.Errorf("two streams take %.3f of the sum of the launches, one stream %.3f: no overlap", plans["01"], plans["00"])
	}
}
