package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// k20cVariant writes examples/rodinia/NAME/spec.json with the K20c's SM
// clocks as tunable parameter nvml_gr_clock, simulated on the K20c.
func k20cVariant(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("../../examples/rodinia", name, "spec.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	cs := d["ConfigurationSpace"].(map[string]any)
	cs["TuningParameters"] = append(cs["TuningParameters"].([]any),
		map[string]any{"Name": "nvml_gr_clock", "Type": "int", "Values": "[758, 705, 666, 640, 614]", "Default": 758})
	ks := d["KernelSpecification"].(map[string]any)
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(src), "kernel.cu"))
	if err != nil {
		t.Fatal(err)
	}
	ks["KernelFile"] = abs
	d["Gtune"].(map[string]any)["Simulation"].(map[string]any)["Device"] = "k20c"
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type tuneDoc struct {
	Space     int `json:"space"`
	Evaluated int `json:"evaluated"`
	Best      struct {
		Key string `json:"key"`
	} `json:"best"`
}

func tuneJSON(t *testing.T, args ...string) tuneDoc {
	t.Helper()
	code, out, errs := gtune(t, append([]string{"tune"}, args...)...)
	if code != 0 {
		t.Fatalf("gtune %v: exit %d: %s", args, code, errs)
	}
	var doc tuneDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return doc
}

// Algorithm 2 (occupancy_greedy_energy) on the simulated K20c finds the
// brute-force energy optimum of the LU internal update, 32×32 threads at
// 614 MHz, in 6 of the 80 configuration × clock pairs: the scan of the
// first distribution (32×32, the fewest thread blocks) falls to 614 MHz,
// and at 614 MHz the next distribution (64×16) costs more.
func TestAlgorithm2FindsTheEnergyOptimumOnSimulatedK20c(t *testing.T) {
	spec := k20cVariant(t, "lud")
	dir := t.TempDir()
	bf := tuneJSON(t, spec, "--backend", "sim", "--objective", "energy", "--db", filepath.Join(dir, "bf.db"), "--json", "--no-progress", "--allow-gpu-settings")
	alg := tuneJSON(t, spec, "--backend", "sim", "--objective", "energy", "--db", filepath.Join(dir, "alg.db"), "--json", "--no-progress",
		"--strategy", "occupancy_greedy_energy", "--allow-gpu-settings")
	if bf.Space != 80 || bf.Evaluated != 80 || bf.Best.Key != "32,32,614" {
		t.Errorf("brute force: %+v, want 80 evaluated, best 32,32,614", bf)
	}
	if alg.Evaluated != 6 || alg.Best.Key != bf.Best.Key {
		t.Errorf("Algorithm 2: %+v, want 6 evaluated, best %s", alg, bf.Best.Key)
	}
}

// Without nvml_gr_clock in the space Algorithm 2 refuses to start (exit
// status 2, a bad run configuration).
func TestOccupancyStrategiesNeedTheirInputs(t *testing.T) {
	code, _, errs := gtune(t, "tune", "../../examples/rodinia/lud/spec.json", "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"),
		"--strategy", "occupancy_greedy_energy", "--no-progress")
	if code != 2 || !strings.Contains(errs, "needs a tunable parameter nvml_gr_clock") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
