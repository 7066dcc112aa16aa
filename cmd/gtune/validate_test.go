package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One validation path: every input tune refuses before GPU work (exit 2),
// check refuses too, with the same words, for specs and workloads alike.
// Each case is a class of bad input: numbers out of range or not finite
// in a measurement section (spec or workload), an unknown observer,
// values a workload fixes of the wrong type, thread blocks the GPU cannot
// launch, a kernel whose brackets cannot balance under its #if.
func TestCheckRefusesWhatTuneRefuses(t *testing.T) {
	vectorAdd, err := filepath.Abs(filepath.Join("..", "..", "examples", "vector_add", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	yamlSpec, _ := os.ReadFile(filepath.Join("..", "..", "examples", "vector_add", "spec.yaml"))
	kernel, _ := os.ReadFile(filepath.Join("..", "..", "examples", "vector_add", "kernel.cu"))
	specJSON, _ := os.ReadFile(vectorAdd)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "kernel.cu"), kernel, 0o644)
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	editJSON := func(name string, oldNew ...string) string {
		text := string(specJSON)
		for i := 0; i < len(oldNew); i += 2 {
			if !strings.Contains(text, oldNew[i]) {
				t.Fatalf("%s: the spec has no %q", name, oldNew[i])
			}
			text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
		}
		return file(name+".json", text)
	}
	var noReference map[string]any
	json.Unmarshal(specJSON, &noReference)
	delete(noReference["Gtune"].(map[string]any), "Reference")
	noRef, _ := json.Marshal(noReference)
	workload := func(name, extra string) string {
		return file(name+".yaml", "name: "+name+"\nkernels:\n  - name: va\n    spec: "+vectorAdd+"\n"+extra)
	}
	cases := []struct {
		name, path, want string
	}{
		{"spec: NaN energy window (YAML .nan)", file("nan.yaml", strings.Replace(string(yamlSpec), "EnergyWindowSeconds: 1.0", "EnergyWindowSeconds: .nan", 1)),
			"Gtune.Measurement.EnergyWindowSeconds: NaN: must be between 0"},
		{"spec: infinite timeout", file("inf.yaml", strings.Replace(string(yamlSpec), "TimeoutSeconds: 10", "TimeoutSeconds: .inf", 1)),
			"Gtune.Measurement.TimeoutSeconds: +Inf: must be between 0"},
		{"spec: 10^9 iterations", editJSON("iters", `"Iterations": 7`, `"Iterations": 1000000000`), "Gtune.Measurement.Iterations: 1000000000: must be between 1 and 100000"},
		{"spec: 10^9 energy trials", editJSON("trials", `"Iterations": 7`, `"Iterations": 7, "Trials": 1000000000`), "Gtune.Measurement.Trials: 1000000000: must be between 0 (the default) and 1000"},
		{"spec: unknown observer", editJSON("observer", `"Iterations": 7`, `"Iterations": 7, "Observers": ["bogus"]`), `Gtune.Measurement.Observers[0]: unknown observer "bogus"`},
		{"spec: reference block over the GPU's limit", editJSON("refblock", `"Values": "[32*i for i in range(1,33)]"`, `"Values": "[1024, 2048]"`,
			`"block_size_x": 256,
        "work_per_thread": 1`, `"block_size_x": 2048, "work_per_thread": 1`),
			// The GPU is named after "the ": the simulated H100 in tune,
			// its device-database entry in check.
			"Gtune.Reference.Configuration cannot launch: a thread block of 2048 threads (2048x1x1), the "},
		{"spec: every block over the GPU's limit", file("allblocks.json", strings.Replace(string(noRef), `"[32*i for i in range(1,33)]"`, `"[2048, 4096]"`, 1)), "no configuration can launch on the "},
		{"spec: a kernel whose brackets balance under none of its #if branches", func() string {
			file("broken.cu", strings.Replace(string(kernel), "{", "{\n#if X\n  int unused;\n#endif\n  (", 1))
			return editJSON("brackets", `"KernelFile": "kernel.cu"`, `"KernelFile": "broken.cu"`)
		}(), "along both the first and the last branch of each #if (the kernel cannot compile)"},
		{"workload: NaN energy window", workload("wnan", "measurement:\n  energy_window_seconds: .nan\n"), "measurement.energy_window_seconds: NaN: must be between 0"},
		{"workload: infinite energy window", workload("winf", "measurement:\n  energy_window_seconds: .inf\n"), "measurement.energy_window_seconds: +Inf: must be between 0"},
		{"workload: 10^9 s energy window", workload("wbig", "measurement:\n  energy_window_seconds: 1e9\n"), "measurement.energy_window_seconds: 1e+09: must be between 0"},
		{"workload: 10^9 iterations", workload("witers", "measurement:\n  iterations: 1000000000\n"), "measurement.iterations: 1000000000: must be between 1 and 100000"},
		{"workload: 10^9 energy trials", workload("wtrials", "measurement:\n  energy_trials: 1000000000\n"), "measurement.energy_trials: 1000000000: must be between 0 (the default) and 1000"},
		{"workload: unknown observer", workload("wobs", "measurement:\n  observers: [bogus]\n"), `measurement.observers[0]: unknown observer "bogus"`},
		{"workload: a string for an int parameter", workload("wstr", "    config: {block_size_x: abc}\n"), `config block_size_x: 'abc' is a str, not an int`},
		{"workload: a fraction for an int parameter", workload("wfrac", "    config: {work_per_thread: [1, 2.5]}\n"), `config work_per_thread: 2.5 is a float, not an int`},
		{"workload: a block over the GPU's limit", workload("wblock", "    config: {block_size_x: 2048}\n"), `kernel "va": `},
	}
	for _, c := range cases {
		code, _, terrs := gtune(t, "tune", c.path, "--backend", "sim", "--db", filepath.Join(dir, "t.db"), "--no-progress", "--max-evals", "2")
		if code != 2 || !strings.Contains(terrs, c.want) {
			t.Errorf("%s: tune exit %d, want 2 with %q:\n%s", c.name, code, c.want, terrs)
		}
		code, out, errs := gtune(t, "check", c.path)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%s: check exit %d, want 2 with %q:\n%s%s", c.name, code, c.want, out, errs)
		}
	}
}
