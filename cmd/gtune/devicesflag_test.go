package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"

	"github.com/gtune/gtune/tuner"
)

// gtune tune --devices on the simulated GPU: four simulated GPUs of one
// model tune as one run, each measuring a share, with the best of one
// GPU's run; the summary says what each did. Bad lists, --devices all
// on the simulator and --device with --devices are refused.
func TestTuneDevices(t *testing.T) {
	spec := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	type doc struct {
		Best      struct{ Key string }
		Evaluated int
		GPUs      []struct {
			UUID      string
			Evaluated int
		}
	}
	tune := func(db string, extra ...string) doc {
		t.Helper()
		code, out, errs := gtune(t, append([]string{"tune", spec, "--backend", "sim", "--db", filepath.Join(dir, db), "--json", "--no-progress"}, extra...)...)
		var d doc
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		return d
	}
	one := tune("one.db")
	four := tune("four.db", "--devices", "0,1,2,3")
	if four.Best.Key != one.Best.Key || four.Evaluated != one.Evaluated || len(four.GPUs) != 4 || one.GPUs != nil {
		t.Fatalf("four GPUs: best %s, %d evaluated, %d GPUs; one: %s, %d", four.Best.Key, four.Evaluated, len(four.GPUs), one.Best.Key, one.Evaluated)
	}
	total := 0
	for i, g := range four.GPUs {
		want := []string{"SIM-h100_sxm", "SIM-h100_sxm-1", "SIM-h100_sxm-2", "SIM-h100_sxm-3"}[i]
		if g.UUID != want || g.Evaluated == 0 {
			t.Errorf("GPU %d: %+v, want %s with configurations", i, g, want)
		}
		total += g.Evaluated
	}
	if total != four.Evaluated {
		t.Errorf("the GPUs measured %d, the run %d", total, four.Evaluated)
	}
	code, out, _ := gtune(t, "tune", spec, "--backend", "sim", "--db", filepath.Join(dir, "t.db"), "--devices", "0,1", "--no-progress")
	if code != 0 || !strings.Contains(out, "GPUs: 2 × Simulated NVIDIA H100 80GB HBM3\n  GPU 0, SIM-h100_sxm: ") {
		t.Errorf("the table: exit %d\n%s", code, out)
	}
	// Simulated GPUs of one model measure alike: an energy objective
	// over several needs no calibration and says nothing of it; measured
	// GPUs are calibrated on an anchor, and the run says so first.
	for _, devices := range []string{"", "0,1"} {
		args := []string{"tune", spec, "--backend", "sim", "--db", filepath.Join(dir, "e.db"), "--objective", "energy", "--no-progress", "--fresh"}
		if devices != "" {
			args = append(args, "--devices", devices)
		}
		code, _, errs := gtune(t, args...)
		if code != 0 || strings.Contains(errs, "calibrated") {
			t.Errorf("--objective energy, --devices %q: exit %d:\n%s", devices, code, errs)
		}
	}
	s := builtinObjectives()
	var b strings.Builder
	tuner.NoteCalibration(&b, s, []string{"time", "energy"}, 4, false)
	tuner.NoteCalibration(&b, s, []string{"energy"}, 4, true)
	tuner.NoteCalibration(&b, s, []string{"time"}, 4, false)
	tuner.NoteCalibration(&b, s, []string{"energy"}, 1, false)
	if want := "gtune: objective energy needs energy, measured by each of the 4 GPUs on itself; GPUs of one model differ by a few per cent, so each GPU also measures an anchor configuration through the run (one measurement in 8 more) and its energies are calibrated to the first GPU's\n"; b.String() != want {
		t.Errorf("note:\n%s\nwant\n%s", b.String(), want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--devices", "all"}, "--devices all: the simulated GPU has no GPUs to count"},
		{[]string{"--devices", "0,x"}, `--devices "0,x": want all, or GPU indexes 0-1023`},
		{[]string{"--devices", "1,1"}, `--devices "1,1": GPU 1 is named twice`},
		{[]string{"--devices", "0,1", "--device", "1"}, "give --device or --devices, not both"},
	} {
		code, _, errs := gtune(t, append([]string{"tune", spec, "--backend", "sim", "--db", filepath.Join(dir, "bad.db"), "--no-progress"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

// kill -9 of a run over four simulated GPUs, then the same command
// again: the second run reuses every result the first stored and
// measures the rest, none twice; the first run is marked interrupted.
func TestTuneDevicesKilledAndResumed(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "k.db")
	work, err := filepath.Abs(filepath.Join("..", "..", "examples", "workloads", "rodinia-4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"tune", work, "--backend", "sim", "--devices", "0,1,2,3", "--db", db, "--no-progress", "--max-evals", "120"}
	raw, _ := json.Marshal(args)
	child := exec.Command(os.Args[0], "-test.run=^TestChildGtune$")
	child.Env = append(os.Environ(), "GTUNE_CHILD_ARGS="+string(raw))
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it has stored some plans, before it ends.
	deadline := time.Now().Add(30 * time.Second)
	stored := 0
	for stored < 10 {
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the child stored nothing in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
		if rdb, err := store.OpenReadOnly(db); err == nil {
			if es, err := rdb.RunEvaluations(1); err == nil {
				stored = len(es)
			}
			rdb.Close()
		}
	}
	child.Process.Kill()
	child.Wait()
	code, out, errs := gtune(t, append(args, "--json")...)
	var doc struct{ Evaluated, Reused int }
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("the second run: exit %d: %s", code, errs)
	}
	rdb, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	first, _ := rdb.RunEvaluations(1)
	second, _ := rdb.RunEvaluations(2)
	own := map[string]int64{} // key: the run that measured it
	for _, e := range first {
		own[e.Key] = 1
	}
	for _, e := range second {
		if e.RunID != 2 {
			continue
		}
		if _, twice := own[e.Key]; twice {
			t.Fatalf("%s measured by both runs", e.Key)
		}
		own[e.Key] = 2
	}
	if len(first) < 10 || doc.Reused != len(first) || doc.Evaluated+doc.Reused != 120 || len(second) != 120 || len(own) != 120 {
		t.Fatalf("the first run stored %d; the second reused %d and evaluated %d (%d in its account, %d measured in all); want all of the first's and 120",
			len(first), doc.Reused, doc.Evaluated, len(second), len(own))
	}
	if r, err := rdb.Run(1); err != nil || r.Status != store.RunInterrupted {
		t.Errorf("the killed run: %+v, %v", r, err)
	}
}

// builtinObjectives is a spec with no metrics: the built-in objectives'
// view of what needs energy.
func builtinObjectives() *spec.Spec { return &spec.Spec{} }
