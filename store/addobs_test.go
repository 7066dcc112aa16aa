package store

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/measure"
)

// Observations added after the evaluation was stored (a profiler pass):
// typed rows readable with their unit and method, the whole-plan ones in
// the observation map too, a second pass replacing the first, a launch's
// own kept out of the map; a bad observation or an unknown evaluation
// writes nothing.
func TestAddObservations(t *testing.T) {
	db, r, e := oneEvaluation(t)
	dram := "dram__bytes_read.sum"
	first := measure.Observations{
		{Name: dram, Unit: "byte", Value: 100, Method: "ncu", Launch: measure.PlanScope},
		{Name: "sm__warps_active.avg.pct_of_peak_sustained_active", Unit: "%", Value: 61.5, Method: "ncu", Launch: measure.PlanScope},
		{Name: dram, Unit: "byte", Value: 100, Method: "ncu", Launch: 0},
	}
	if err := db.AddObservations(e.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := db.AddObservations(e.ID, measure.Observations{{Name: dram, Unit: "byte", Value: 120, Method: "ncu", Launch: measure.PlanScope}}); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Evaluations(r.ID)
	if err != nil || len(evs) != 1 {
		t.Fatalf("%v %v", evs, err)
	}
	if o := evs[0].Observations; o[dram] != 120 || o["sm__warps_active.avg.pct_of_peak_sustained_active"] != 61.5 || o["time"] != 0.01 || len(o) != 3 {
		t.Errorf("observation map %v", o)
	}
	typed, err := db.Observations(e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x, ok := typed.Get(dram); !ok || x != 120 {
		t.Errorf("typed %s: %v %v", dram, x, ok)
	}
	if x, ok := typed.GetLaunch(dram, 0); !ok || x != 100 {
		t.Errorf("typed %s of launch 0: %v %v", dram, x, ok)
	}
	if err := db.AddObservations(e.ID+7, first); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown evaluation: %v", err)
	}
	bad := measure.Observations{{Name: "x", Unit: "", Value: math.NaN(), Method: "ncu", Launch: measure.PlanScope}}
	if err := db.AddObservations(e.ID, bad); err == nil {
		t.Error("a NaN observation was written")
	}
}

// oneEvaluation opens a fresh database holding one run of one valid
// evaluation (key "1", time 0.01 ms); the test closes db at its end.
func oneEvaluation(t *testing.T) (*DB, *Run, *Evaluation) {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &Run{SpecHash: "h", SpecPath: "s.json", Kernel: "k", Objective: "time", Strategy: "brute_force", DeviceName: "d", DeviceUUID: "u", Backend: "sim"}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	v := 0.01
	e := &Evaluation{RunID: r.ID, Key: "1", Params: []Param{{Name: "x", Value: 1}}, Status: "valid", Objective: &v,
		Observations: map[string]float64{"time": 0.01}}
	if err := db.Add(e); err != nil {
		t.Fatal(err)
	}
	return db, r, e
}

// A remeasurement replaces an evaluation's observations, metrics and
// objective value; several are written in one transaction, so that one
// naming an unknown evaluation writes none of them.
func TestRemeasured(t *testing.T) {
	db, r, e := oneEvaluation(t)
	v := 0.02
	energy := measure.Observation{Name: "energy", Unit: "J", Value: 0.4, Method: "calibrated", Launch: measure.PlanScope}
	bad := Remeasurement{ID: e.ID + 7, Observations: measure.Observations{energy}}
	if err := db.Remeasured(Remeasurement{ID: e.ID, Observations: measure.Observations{energy}, Metrics: map[string]float64{"GB/s": 5}, Objective: &v}, bad); !errors.Is(err, ErrNotFound) {
		t.Fatalf("with an unknown evaluation: %v", err)
	}
	if evs, _ := db.Evaluations(r.ID); evs[0].Observations["energy"] != 0 || *evs[0].Objective != 0.01 {
		t.Fatalf("written in part: %v, objective %v", evs[0].Observations, *evs[0].Objective)
	}
	if err := db.Remeasured(Remeasurement{ID: e.ID, Observations: measure.Observations{energy}, Metrics: map[string]float64{"GB/s": 5}, Objective: &v}); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Evaluations(r.ID)
	if err != nil || evs[0].Observations["energy"] != 0.4 || evs[0].Observations["time"] != 0.01 || evs[0].Metrics["GB/s"] != 5 || *evs[0].Objective != 0.02 {
		t.Errorf("%+v, %v", evs[0], err)
	}
}
