package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cases the first-user report listed as crashes, a broken command and
// silent acceptances: each is now refused with exit status 2 and one line
// naming what is wrong, before anything is written.
func TestFirstUserBattery(t *testing.T) {
	spec := writeSpec(t, "", "")
	dir := t.TempDir()
	kernel := func(src string) string {
		p := writeSpec(t, "", "")
		if err := os.WriteFile(filepath.Join(filepath.Dir(p), "kernel.cu"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := os.ReadFile("../../tuner/testdata/kernel.cu")
	if err != nil {
		t.Fatal(err)
	}
	random := bytes.Repeat([]byte{0x00, 0xff, 0x13, 0x37}, 1024)
	sim := func(args ...string) []string {
		return append(args, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"))
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"KernelName not in the file", sim("tune", writeSpec(t, `"KernelName": "vector_add"`, `"KernelName": "vector_sub"`)), "KernelSpecification.KernelName: vector_sub: no function of that name in kernel.cu"},
		{"empty kernel file", sim("tune", kernel("")), "KernelSpecification.KernelFile: kernel.cu holds no code"},
		{"random bytes as the kernel", sim("tune", kernel(string(random))), "KernelSpecification.KernelFile: kernel.cu is not text: byte 0 is NUL"},
		{"syntax error", sim("tune", kernel(strings.Replace(string(good), "}", "", 1))), "is never closed (the kernel cannot compile)"},
		{"--objective empty", sim("tune", spec, "--objective", ""), `invalid argument "" for "--objective" flag: an empty name in ""`},
		{"--objective trailing comma", sim("tune", spec, "--objective", "time,"), `invalid argument "time," for "--objective" flag: an empty name in "time,"`},
		{"--power-step 0", sim("tune", spec, "--gpu-settings", "g3", "--power-step", "0"), `invalid argument "0" for "--power-step" flag: must be above 0 and at most 10000`},
		{"--clock-step without --gpu-settings", sim("tune", spec, "--clock-step", "100"), "--clock-step takes effect only with --gpu-settings g1|g2|g3"},
		{"sensor-check --device 5 on the simulator", []string{"sensor-check", "--backend", "sim", "--device", "5"}, "--device 5: the simulated GPU is device 0"},
		{"runs --db missing", []string{"runs", "--db", filepath.Join(dir, "missing.db")}, "no such file"},
		{"show --db missing", []string{"show", "1", "--db", filepath.Join(dir, "missing.db")}, "no such file"},
		{"measure --iterations 0", sim("measure", spec, "--iterations", "0"), `invalid argument "0" for "--iterations" flag: must be between 1 and 1000000`},
		{"Iterations 0 in the spec", sim("tune", writeSpec(t, `"Iterations": 7`, `"Iterations": 0`)), "Gtune.Measurement.Iterations: 0: must be between 1 and 100000"},
		{"EnergyWindowSeconds 1e9", sim("tune", writeSpec(t, `"EnergyWindowSeconds": 1.0`, `"EnergyWindowSeconds": 1e9`)), "Gtune.Measurement.EnergyWindowSeconds: 1e+09: must be between 0"},
		{"bench-strategies --workers 0", []string{"bench-strategies", "--workers", "0"}, `invalid argument "0" for "--workers" flag: must be between 1 and 4096`},
		{"bench-strategies --workers -1", []string{"bench-strategies", "--workers", "-1"}, `invalid argument "-1" for "--workers" flag`},
		{"misspelled top-level key", sim("tune", writeSpec(t, `"KernelSpecification"`, `"KernelSpecificaton"`)), "KernelSpecificaton: unknown key (did you mean KernelSpecification?)"},
		{"misspelled parameters key", sim("tune", writeSpec(t, `"TuningParameters"`, `"TunningParameters"`)), "ConfigurationSpace.TunningParameters: unknown key (did you mean TuningParameters?)"},
		{"tune --max-evals -1", sim("tune", spec, "--max-evals", "-1"), `invalid argument "-1" for "--max-evals" flag: must be at least 0`},
		{"replay --repeats 0", []string{"replay", "x.json", "--repeats", "0"}, `invalid argument "0" for "--repeats" flag: must be between 1 and 1000000`},
	} {
		code, _, errs := gtune(t, c.args...)
		oneLine(t, c.name, code, errs, c.want, "")
	}
	// An unknown command is a usage error like an unknown flag (cobra
	// adds the command meant on lines of its own).
	if code, _, errs := gtune(t, "tuen", spec); code != 2 || !strings.Contains(errs, `unknown command "tuen" for "gtune"`) || !strings.Contains(errs, "Did you mean this?\n\ttune") {
		t.Errorf("unknown command: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("runs/show created the missing database")
	}
}

// Crashes: an unterminated quote in occupancy's CSV, a budget no memory
// holds, a cut compressed cache.
func TestFirstUserCrashes(t *testing.T) {
	var out, errb bytes.Buffer
	old := os.Stdin
	r, w, _ := os.Pipe()
	os.Stdin = r
	w.Write([]byte("\"a\n"))
	w.Close()
	code := run([]string{"occupancy", "--batch", "--sim-device", "h100_sxm"}, &out, &errb)
	os.Stdin = old
	oneLine(t, "occupancy --batch with an unterminated quote", code, errb.String(), `--batch: parse error on line 1`, "")

	code, _, errs := gtune(t, "bench-strategies", "--budgets", "1000000000000")
	oneLine(t, "bench-strategies --budgets 1e12", code, errs, "1000000000000 is more evaluations than a search space may hold", "")

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"device_name": "x", "kernel_name": "k", "tune_params_keys": ["a"], "tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1.0}, "2": {"a": 2, "time": 2.0}}}`))
	zw.Close()
	p := filepath.Join(t.TempDir(), "cut.json.gz")
	os.WriteFile(p, gz.Bytes()[:gz.Len()-12], 0o644)
	code, _, errs = gtune(t, "replay", p, "--max-evals", "1")
	oneLine(t, "a cut .json.gz", code, errs, "the compressed data ends early", "")
}

// measure --config KEY on a spec measures that configuration (it failed
// for every key with a flag measure does not have).
func TestMeasureConfigOnSpec(t *testing.T) {
	spec := writeSpec(t, "", "")
	code, out, errs := gtune(t, "measure", spec, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"), "--config", "64,2")
	if code != 0 || !strings.Contains(out, "plan 64,2, 1 launch(es) on 1 stream(s): valid") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = gtune(t, "measure", spec, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"), "--config", "65,2")
	if code != 2 || !strings.Contains(errs, "65,2") {
		t.Fatalf("unknown key: exit %d: %s", code, errs)
	}
}
