package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// gtune tune --devices on the simulated GPU: four simulated GPUs of one
// model tune as one run, each measuring a share, with the best of one
// GPU's run; the summary says what each did. Bad lists, --devices all
// on the simulator, --device with --devices and GPU settings with
// --devices are refused.
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
	if code != 0 || !strings.Contains(out, "GPUs: 2 × Simulated NVIDIA H100 80GB HBM3\n  SIM-h100_sxm: ") {
		t.Errorf("the table: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--devices", "all"}, "--devices all: the simulated GPU has no GPUs to count"},
		{[]string{"--devices", "0,x"}, `--devices "0,x": want all, or GPU indexes 0-1023`},
		{[]string{"--devices", "1,1"}, `--devices "1,1": GPU 1 is named twice`},
		{[]string{"--devices", "0,1", "--device", "1"}, "give --device or --devices, not both"},
		{[]string{"--devices", "0,1", "--gpu-settings", "g1", "--allow-gpu-settings"}, "--devices with GPU settings (clocks, power limit) as tunable parameters is not supported"},
	} {
		code, _, errs := gtune(t, append([]string{"tune", spec, "--backend", "sim", "--db", filepath.Join(dir, "bad.db"), "--no-progress"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
