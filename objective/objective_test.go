package objective

import (
	"errors"
	"slices"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/spec"
)

func TestObservationsAddResourcesAndRecords(t *testing.T) {
	r := &backend.Result{
		Launches:     []backend.LaunchResult{{Registers: 32, SharedStaticBytes: 1024, LocalBytes: 8, MaxThreadsPerBlock: 1024}},
		BenchmarkMs:  50,
		Observations: measure.Observations{{Name: "time", Unit: "ms", Value: 3, Method: "cuda-events", Launch: measure.PlanScope}},
	}
	obs := Observations(r, 120, "cuda")
	for _, o := range obs {
		if !slices.Contains(spec.ObservationNames, o.Name) {
			t.Errorf("observation %q is not in spec.ObservationNames", o.Name)
		}
		if o.Unit != measure.UnitOf(o.Name) || o.Method == "" {
			t.Errorf("observation %+v: unit or method", o)
		}
	}
	m := obs.Plan()
	if m["time"] != 3 || m["registers"] != 32 || m["shared_memory"] != 1024 || m["compile_time"] != 120 || m["benchmark_time"] != 50 {
		t.Fatalf("plan view %v", m)
	}
	if v, ok := obs.GetLaunch("registers", 0); !ok || v != 32 {
		t.Fatalf("launch 0 registers %v %v", v, ok)
	}
	// Two launches: resources per launch only.
	r.Launches = append(r.Launches, backend.LaunchResult{Registers: 64})
	obs = Observations(r, 120, "cuda")
	if _, ok := obs.Get("registers"); ok {
		t.Fatal("a plan of two kernels has whole-plan registers")
	}
	if v, _ := obs.GetLaunch("registers", 1); v != 64 {
		t.Fatalf("launch 1 registers %v", v)
	}
}

func metric(name, src string) spec.Metric {
	return spec.Metric{Name: name, Expr: expr.MustParse(src)}
}

func TestMetricsInOrderAndSkipped(t *testing.T) {
	ms := []spec.Metric{
		metric("bw", "3*4*n/(time*1e6)"),
		metric("bw_per_w", "bw/power"),
		metric("half", "bw / 2"),
	}
	base := expr.MapEnv{"n": expr.Int(1 << 20)}
	got, err := Metrics(ms, map[string]float64{"time": 0.5}, base)
	if err != nil {
		t.Fatal(err)
	}
	want := 3 * 4 * float64(1<<20) / (0.5 * 1e6)
	if got["bw"] != want || got["half"] != want/2 {
		t.Fatalf("got %v", got)
	}
	if _, ok := got["bw_per_w"]; ok {
		t.Fatal("bw_per_w computed without power")
	}
	got, err = Metrics(ms, map[string]float64{"time": 0.5, "power": 100}, base)
	if err != nil || got["bw_per_w"] != want/100 {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := Metrics([]spec.Metric{metric("bad", "time/0")}, map[string]float64{"time": 1}, base); err == nil {
		t.Fatal("division by zero not reported")
	}
}

// A metric that cannot be computed for one configuration is missing for
// it, with what reads it; the others are kept.
func TestMetricMissing(t *testing.T) {
	ms := []spec.Metric{
		metric("eff", "1 / (power - 100)"),
		metric("eff2", "eff * 2"),
		metric("bw", "12 / time"),
	}
	got, err := Metrics(ms, map[string]float64{"time": 0.5, "power": 100}, expr.MapEnv{})
	var me *MissingError
	if !errors.As(err, &me) || len(me.Names) != 1 || me.Names[0] != "eff" ||
		err.Error() != `metrics missing: metric "eff" (1 / (power - 100)): ZeroDivisionError: float division by zero` {
		t.Fatalf("error %v", err)
	}
	if len(got) != 1 || got["bw"] != 24 {
		t.Errorf("values %v, want only bw = 24", got)
	}
	if _, ok := (Objective{Name: "bw"}).Value(nil, got); !ok {
		t.Error("bw missing")
	}
	if _, ok := (Objective{Name: "eff"}).Value(nil, got); ok {
		t.Error("eff reported")
	}
}

func TestScoreAndParetoFront(t *testing.T) {
	max := Objective{Name: "GB/s", Maximize: true}
	if max.Score(10) >= max.Score(5) {
		t.Fatal("maximised objective: larger must score lower")
	}
	pts := []Point{
		{ID: 0, Scores: []float64{1, 10}}, // front
		{ID: 1, Scores: []float64{2, 5}},  // front
		{ID: 2, Scores: []float64{3, 6}},  // dominated by 1
		{ID: 3, Scores: []float64{4, 1}},  // front
		{ID: 4, Scores: []float64{2, 5}},  // equal to 1: neither dominates
	}
	if got := ParetoFront(pts); !slices.Equal(got, []int{0, 1, 4, 3}) {
		t.Fatalf("front %v", got)
	}
}
