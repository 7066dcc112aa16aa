package tuner

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

// TestDatabasePriors: a GPU's results become a prior from
// strategy.MinPriorValid valid configurations on, failed, implausible and
// unmeasured configurations are NaN, a maximised objective is inverted,
// and the run's own GPU is never its prior.
func TestDatabasePriors(t *testing.T) {
	var xs []expr.Value
	for x := 1; x <= 30; x++ {
		xs = append(xs, expr.Int(int64(x)))
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: xs}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := func(uuid string, n int) {
		r := &store.Run{SpecHash: "h", SpecPath: "s.json", Kernel: "k", Objective: "GB/s", Strategy: "bayes_opt",
			DeviceName: "GPU " + uuid, DeviceUUID: uuid, Driver: "580", Backend: "sim", GtuneVersion: "test"}
		if err := db.BeginRun(r); err != nil {
			t.Fatal(err)
		}
		for x := 1; x <= n; x++ {
			e := &store.Evaluation{RunID: r.ID, Key: fmt.Sprint(x), Status: "valid", Observations: map[string]float64{"time": 1}, Metrics: map[string]float64{"GB/s": float64(10 * x)}}
			switch x {
			case 3:
				e.Status, e.Observations, e.Metrics = "compile_failed", nil, nil
			case 4:
				e.Observations[implausibleKey] = 1
			}
			if err := db.Add(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	run("GPU-0", 30)
	run("GPU-1", strategy.MinPriorValid+2) // 2 of them not valid
	run("GPU-2", strategy.MinPriorValid+1) // one short
	ps, err := DatabasePriors(db, "h", "GPU-0", sp, objective.Objective{Name: "GB/s", Maximize: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Source != fmt.Sprintf("database: GPU GPU-1 (GPU-1), %d configurations", strategy.MinPriorValid) {
		t.Fatalf("priors %+v; want GPU-1's alone", ps)
	}
	for i, v := range ps[0].TimesMs {
		x := i + 1 // the space's order is the values'
		want := 1 / float64(10*x)
		if x == 3 || x == 4 || x > strategy.MinPriorValid+2 {
			want = math.NaN()
		}
		if !(v == want || math.IsNaN(v) && math.IsNaN(want)) {
			t.Errorf("x=%d: prior %v, want %v", x, v, want)
		}
	}
	// Time, minimised: GPU-0 alone has 30 valid configurations; from
	// GPU-1 it is the prior.
	ps, err = DatabasePriors(db, "h", "GPU-1", sp, objective.Objective{Name: "time"})
	if err != nil || len(ps) != 1 || ps[0].TimesMs[0] != 1 || ps[0].Source != "database: GPU GPU-0 (GPU-0), 28 configurations" {
		t.Fatalf("priors from GPU-1: %+v, %v; want GPU-0's times", ps, err)
	}
}
