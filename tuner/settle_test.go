package tuner

import (
	"math"
	"testing"
	"time"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/model"
)

// settleRun tunes the fixture for energy by brute force on a simulated
// H100 started cold (40 °C, a heat sink of 20 s), without sensor noise,
// under thermal policy policy. The board draws what the H100's earlier
// calibration gave it (DRAM traffic at 0.48 of the dynamic range where
// HopperPowerModel has 0.43, clocked idle 0.09): under HopperPowerModel
// the fixture's two best configurations (512,1 and 1024,1) lie 0.013 %
// apart, a tie that the order of the warm-up decides, where this test is
// about settle finding the steady run's best.
func settleRun(t *testing.T, policy string) (*fixture, *Summary) {
	t.Helper()
	hot := model.HopperPowerModel()
	hot.ClockedIdle, hot.Busy, hot.Compute, hot.OnChip, hot.Memory = 0.09, 0, 1.2, 0, 0.48
	sum, f := energyTune(t, policy, nil, nil, sim.Options{Power: hot, ColdStart: &sim.ColdStart{StartC: 40, SinkTau: 20 * time.Second}})
	return f, sum
}

// Under the settle policy a cold GPU measures from the start: the
// configurations measured while it warmed that could be the best are
// measured again once it is steady, and the run finds the best that a
// steady warm-up finds, with the same energy, while its warm-up is the
// short one and the warm configurations far from the best are never
// measured twice.
func TestSettle(t *testing.T) {
	_, steady := settleRun(t, measure.ThermalSteady)
	f, settle := settleRun(t, measure.ThermalSettle)
	if steady.ThermalNote != "" || settle.ThermalNote == "" {
		t.Fatalf("settle notes: steady %q, settle %q", steady.ThermalNote, settle.ThermalNote)
	}
	t.Log(settle.ThermalNote)
	if settle.Best[0].Key != steady.Best[0].Key {
		t.Fatalf("best %s (%v J) under settle, %s (%v J) after a steady warm-up", settle.Best[0].Key, settle.Best[0].Value, steady.Best[0].Key, steady.Best[0].Value)
	}
	if d := settle.Best[0].Value/steady.Best[0].Value - 1; math.Abs(d) > 0.003 {
		t.Errorf("best energy %v J under settle, %v J steady: %.3f %% apart", settle.Best[0].Value, steady.Best[0].Value, 100*d)
	}
	if settle.Time.Warmup >= steady.Time.Warmup/2 {
		t.Errorf("warm-up %v under settle, %v steady", settle.Time.Warmup, steady.Time.Warmup)
	}
	warm, again := 0, 0
	for _, o := range settle.Evaluations {
		if !o.Valid() {
			continue
		}
		if w, ok := o.Observations["energy_warming"]; ok {
			again++
			if o.Observations["thermal_steady"] != 1 || w == o.Value {
				t.Errorf("%s re-measured: steady %v, %v J warming, %v J steady", o.Key, o.Observations["thermal_steady"], w, o.Value)
			}
			reps, err := f.db.Repeats(o.evalID)
			if err != nil || len(reps) != 1 || reps[0].Observations["energy"] != o.Value {
				t.Errorf("%s: repeats %+v, %v", o.Key, reps, err)
			}
			stored, err := f.db.Observations(o.evalID)
			if e, _ := stored.Get("energy"); err != nil || e != o.Value {
				t.Errorf("%s: stored energy %v, value %v (%v)", o.Key, e, o.Value, err)
			}
		} else if warming(o) {
			warm++
		}
	}
	if again == 0 || warm == 0 || settle.Best[0].Observations["thermal_steady"] != 1 {
		t.Errorf("%d re-measured, %d left as measured warming; best steady %v", again, warm, settle.Best[0].Observations["thermal_steady"])
	}
	if settle.Evaluated != steady.Evaluated {
		t.Errorf("evaluated %d under settle, %d steady", settle.Evaluated, steady.Evaluated)
	}
}
