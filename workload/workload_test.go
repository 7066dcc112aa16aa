package workload

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/spec"
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
