package store

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gtune/gtune/measure"
)

// Typed observations and launches of a plan of two kernels round-trip
// exactly, plan first then by launch and name.
func TestTypedObservationsRoundTrip(t *testing.T) {
	db := openTemp(t)
	r := newRun(t, db, "h", "GPU-0")
	obs := measure.Observations{
		{Name: "time", Unit: "ms", Value: 1.25, Method: "cuda-events", Launch: measure.PlanScope},
		{Name: "energy", Unit: "J", Value: 0.5, Method: "nvml-energy-counter-trials", Launch: measure.PlanScope},
		{Name: "time", Unit: "ms", Value: 0.75, Method: "cuda-events", Launch: 1},
		{Name: "time", Unit: "ms", Value: 1.0, Method: "cuda-events", Launch: 0},
	}
	launches := []Launch{
		{Kernel: "vadd", Key: "256", Stream: 0, Registers: 16, TimesMs: []float64{1, 1.1}},
		{Kernel: "fma", Key: "128", Stream: 1, Registers: 32, SharedStaticBytes: 1024, TimesMs: []float64{0.7, 0.8}},
	}
	e := &Evaluation{RunID: r.ID, Key: "256|128", Status: "valid", Objective: ptr(1.25), Observations: obs.Plan(), Typed: obs, Launches: launches}
	if err := db.Add(e); err != nil {
		t.Fatal(err)
	}
	got, err := db.Observations(e.ID)
	if err != nil || !reflect.DeepEqual(got, obs.Sorted()) {
		t.Fatalf("Observations = %+v, %v; want %+v", got, err, obs.Sorted())
	}
	es, err := db.Evaluations(r.ID)
	if err != nil || len(es) != 1 || !reflect.DeepEqual(es[0].Launches, launches) {
		t.Fatalf("Launches = %+v, %v", es[0].Launches, err)
	}
	bad := &Evaluation{RunID: r.ID, Key: "x", Status: "valid", Typed: measure.Observations{{Name: "time", Unit: "ms", Value: math.NaN(), Method: "m", Launch: -1}}}
	if err := db.Add(bad); err == nil || !strings.Contains(err.Error(), `"time" is NaN`) {
		t.Fatalf("NaN observation: %v", err)
	}
}

func TestStatusCounts(t *testing.T) {
	db := openTemp(t)
	a, b := newRun(t, db, "h", "GPU-0"), newRun(t, db, "h", "GPU-0")
	for i, st := range []string{"valid", "valid", "compile_failed"} {
		if err := db.Add(&Evaluation{RunID: a.ID, Key: string(rune('a' + i)), Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Add(&Evaluation{RunID: b.ID, Key: "x", Status: "timeout"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.StatusCounts()
	want := map[int64]map[string]int{a.ID: {"valid": 2, "compile_failed": 1}, b.ID: {"timeout": 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("StatusCounts = %v, %v; want %v", got, err, want)
	}
}
