package report

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	goldenfile "github.com/gtune/gtune/internal/golden"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update, "go test ./report -update")
}

func outcome(key string, bx int, t, e float64) *tuner.Evaluation {
	return &tuner.Evaluation{Key: key, Params: []store.Param{{Name: "block_size_x", Value: bx}}, Status: backend.StatusValid, Value: t,
		Observations: map[string]float64{"time": t, "energy": e, "power": e / t * 1e3, "registers": 16}}
}

// A run with two objectives: the best by time and the Pareto front over
// time × energy, as a table and as JSON.
func TestTuneGolden(t *testing.T) {
	tm := objective.Objective{Name: "time", Unit: "ms"}
	en := objective.Objective{Name: "energy", Unit: "J"}
	a, b, c, d := outcome("64", 64, 1.0, 0.60), outcome("128", 128, 1.1, 0.55), outcome("256", 256, 1.2, 0.58), outcome("512", 512, 1.3, 0.50)
	failed := &tuner.Evaluation{Key: "1024", Params: []store.Param{{Name: "block_size_x", Value: 1024}}, Status: backend.StatusCompileFailed, Reason: "too many registers"}
	sum := &tuner.Summary{RunID: 3, Device: device.Description{Name: "NVIDIA H100 80GB HBM3",
		Local: backend.DeviceInfo{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-x", Backend: "cuda", PowerLimitW: 700}},
		Objective: tm, Objectives: []objective.Objective{tm, en}, Strategy: "brute_force", SpaceSize: 5, Evaluated: 5, Invalid: 1,
		Best: []*tuner.Evaluation{a, b, c, d}, Front: []*tuner.Evaluation{a, b, d}, Evaluations: []*tuner.Evaluation{a, b, c, d, failed}, Elapsed: 1500 * time.Millisecond,
		Time: tuner.Time{Backend: 1200 * time.Millisecond, CompileWait: 100 * time.Millisecond, Framework: 2 * time.Millisecond, Compile: 3 * time.Second,
			Prepare: 4993 * time.Millisecond, Reference: 4756 * time.Millisecond}}
	var buf bytes.Buffer
	TuneTable(&buf, nil, sum, "gtune.db")
	golden(t, "tune.txt", buf.Bytes())
	buf.Reset()
	if err := TuneJSON(&buf, sum, "gtune.db"); err != nil {
		t.Fatal(err)
	}
	golden(t, "tune.json", buf.Bytes())
}

// runs and show read a real database: two runs, a failed configuration
// and a plan's typed observations.
func TestRunsAndShowGolden(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &store.Run{SpecHash: "h", SpecPath: "examples/vector_add/spec.json", Kernel: "vector_add", Objective: "time", Strategy: "brute_force",
		DeviceName: "NVIDIA H100 80GB HBM3", DeviceUUID: "GPU-x", Backend: "cuda", GtuneVersion: "test"}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	v := 1.25
	obs := measure.Observations{{Name: "time", Unit: "ms", Value: 1.25, Method: "cuda-events", Launch: measure.PlanScope},
		{Name: "time", Unit: "ms", Value: 1.25, Method: "cuda-events", Launch: 0}}
	for _, e := range []*store.Evaluation{
		{RunID: r.ID, Key: "64,1", Status: "valid", Objective: &v, Observations: obs.Plan(), Typed: obs,
			Launches: []store.Launch{{Kernel: "vector_add", Key: "64,1", Registers: 16}}},
		{RunID: r.ID, Key: "1024,8", Status: "compile_failed", Reason: "ptxas error   : Entry function 'vector_add' uses too much shared data\nsecond line"},
	} {
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.EndRun(r.ID, store.RunDone); err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	counts, err := db.StatusCounts()
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows(runs, counts)
	if len(rows) != 1 || rows[0].Valid != 1 || rows[0].Invalid != 1 || rows[0].ByStatus["compile_failed"] != 1 {
		t.Fatalf("rows %+v", rows)
	}
	// Times vary from run to run: fix them for the golden file.
	rows[0].Started, rows[0].ElapsedS = time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC), 2.5
	var buf bytes.Buffer
	RunsTable(&buf, rows)
	golden(t, "runs.txt", buf.Bytes())

	evals, err := db.Evaluations(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := ShowTable(&buf, runs[0], evals, true, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "show-failed.txt", buf.Bytes())
	buf.Reset()
	if err := ShowTable(&buf, runs[0], evals, false, db.Observations); err != nil {
		t.Fatal(err)
	}
	golden(t, "show.txt", buf.Bytes())
}
