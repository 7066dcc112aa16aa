package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// gtune runs one command line in-process and returns exit status, stdout
// and stderr.
func gtune(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeSpec writes a copy of the test spec with one substitution applied
// and returns its path; kernel.cu is copied beside it.
func writeSpec(t *testing.T, old, new string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile("../../tuner/testdata/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if old != "" {
		if !strings.Contains(s, old) {
			t.Fatalf("test spec has no %q", old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile("../../tuner/testdata/kernel.cu")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel.cu"), k, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "spec.json")
}

func TestTuneOnSimulatorJSON(t *testing.T) {
	specPath := writeSpec(t, "", "")
	db := filepath.Join(t.TempDir(), "r.db")
	code, out, errs := gtune(t, "tune", specPath, "--backend", "sim", "--db", db, "--json", "--max-evals", "30", "--strategy", "random_sample", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Device    map[string]any                              `json:"device"`
		Best      struct{ Params, Objectives map[string]any } `json:"best"`
		Evaluated int                                         `json:"evaluated"`
		Reused    int                                         `json:"reused"`
		DB        string                                      `json:"db"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if doc.Evaluated != 30 || doc.Reused != 0 || doc.DB != db {
		t.Fatalf("doc %+v", doc)
	}
	if doc.Device["backend"] != "sim" || doc.Best.Params["block_size_x"] == nil || doc.Best.Objectives["time"] == nil {
		t.Fatalf("doc %+v", doc)
	}
	// Second run: everything reused.
	code, out, _ = gtune(t, "tune", specPath, "--backend", "sim", "--db", db, "--json", "--max-evals", "30", "--strategy", "random_sample", "--seed", "5")
	if code != 0 || !strings.Contains(out, `"reused": 30`) {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestTuneTable(t *testing.T) {
	specPath := writeSpec(t, "", "")
	code, out, errs := gtune(t, "tune", specPath, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"), "--objective", "GB/s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"Simulated", "evaluated 112", "invalid 4", "best 5 by GB/s (maximize)", "block_size_x", "GB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEnergyFlag(t *testing.T) {
	specPath := writeSpec(t, "", "")
	db := filepath.Join(t.TempDir(), "r.db")
	// The spec's GB/s/W metric reads power, so energy is measured by default;
	// --energy=false turns the window off and leaves that metric out.
	for _, c := range []struct {
		flag      string
		wantPower bool
	}{{"--energy=false", false}, {"--energy", true}} {
		code, out, errs := gtune(t, "tune", specPath, "--backend", "sim", "--db", db, "--json", "--max-evals", "3", "--fresh", c.flag)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.flag, code, errs)
		}
		if got := strings.Contains(out, `"power"`); got != c.wantPower {
			t.Fatalf("%s: power in output = %v:\n%s", c.flag, got, out)
		}
		if got := strings.Contains(out, `"GB/s/W"`); got != c.wantPower {
			t.Fatalf("%s: GB/s/W in output = %v", c.flag, got)
		}
	}
}

func TestMalformedYAML(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "spec.yaml")
	os.WriteFile(p, []byte("General:\n  BenchmarkName: x\nConfigurationSpace:\n  TuningParameters: [\n"), 0o644)
	code, _, errs := gtune(t, "space", p)
	if code != 2 || !strings.Contains(errs, "spec.yaml:") || !strings.Contains(errs, "YAML") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestSpaceCommand(t *testing.T) {
	specPath := writeSpec(t, "", "")
	code, out, _ := gtune(t, "space", specPath)
	if code != 0 || !strings.Contains(out, "raw configurations:   128") || !strings.Contains(out, "valid configurations: 112") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = gtune(t, "space", specPath, "--list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 113 || lines[0] != "block_size_x,work_per_thread" || lines[1] != "32,1" {
		t.Fatalf("exit %d, %d lines, head %q", code, len(lines), lines[:2])
	}
	code, out, _ = gtune(t, "space", specPath, "--json")
	var doc struct {
		Raw   float64 `json:"raw"`
		Valid int     `json:"valid"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Raw != 128 || doc.Valid != 112 {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestSpaceOfSharedSpecs(t *testing.T) {
	for _, c := range []struct {
		file  string
		valid string
	}{
		{"convolution_milo.T1.json", "4362"},
		{"dedispersion_milo.T1.json", "11130"},
	} {
		code, out, errs := gtune(t, "space", hubSpec(t, c.file))
		if code != 0 || !strings.Contains(out, "valid configurations: "+c.valid) {
			t.Fatalf("%s: exit %d: %s %s", c.file, code, out, errs)
		}
	}
}

// Each bad input gets one clear message and exit status 2 (1 for a
// missing CUDA driver).
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, []byte("x"), 0o644)
	cases := []struct {
		name string
		args func() []string
		code int
		want []string
	}{
		{"missing spec", func() []string { return []string{"tune", filepath.Join(dir, "nope.json")} }, 2, []string{"nope.json"}},
		{"malformed json", func() []string {
			return []string{"tune", writeSpec(t, `"General": {`, `"General": {,`)}
		}, 2, []string{"spec.json:2:15", "malformed JSON"}},
		{"no values", func() []string {
			return []string{"tune", writeSpec(t, `"Values": "[1, 2, 4, 8]"`, `"Values": "[]"`)}
		}, 2, []string{"work_per_thread", "no values"}},
		{"syntax error", func() []string {
			return []string{"tune", writeSpec(t, `block_size_x*work_per_thread <= 4096`, `block_size_x*work_per_thread <== 4096`)}
		}, 2, []string{"block_size_x*work_per_thread <== 4096", "column"}},
		{"unknown parameter", func() []string {
			return []string{"tune", writeSpec(t, `block_size_x*work_per_thread <= 4096`, `block_size_x*tile <= 4096`)}
		}, 2, []string{"tile"}},
		{"negative size", func() []string {
			return []string{"tune", writeSpec(t, `"Size": "n", "Output": 1`, `"Size": "-n", "Output": 1`)}
		}, 2, []string{"argument c", "-268435456"}},
		{"missing kernel", func() []string {
			return []string{"tune", writeSpec(t, `"KernelFile": "kernel.cu"`, `"KernelFile": "gone.cu"`)}
		}, 2, []string{"gone.cu"}},
		{"unwritable db", func() []string {
			return []string{"tune", writeSpec(t, "", ""), "--backend", "sim", "--db", filepath.Join(notDir, "r.db")}
		}, 2, []string{filepath.Join(notDir, "r.db")}},
		{"unknown strategy", func() []string {
			return []string{"tune", writeSpec(t, "", ""), "--strategy", "annealing", "--db", filepath.Join(dir, "s.db")}
		}, 2, []string{"annealing", "brute_force"}},
		{"unknown hyperparameter", func() []string {
			return []string{"tune", writeSpec(t, "", ""), "--backend", "sim", "--strategy-param", "popsize=4", "--db", filepath.Join(dir, "h.db")}
		}, 2, []string{"popsize"}},
		{"bench-strategies' form of a hyperparameter", func() []string {
			return []string{"tune", writeSpec(t, "", ""), "--backend", "sim", "--strategy", "bayes_opt", "--strategy-param", "bayes_opt.kappa=2", "--db", filepath.Join(dir, "k.db")}
		}, 2, []string{`--strategy-param "bayes_opt.kappa=2": tune takes NAME=VALUE for the run's strategy (--strategy bayes_opt --strategy-param kappa=2)`}},
		{"unknown objective", func() []string {
			return []string{"tune", writeSpec(t, "", ""), "--objective", "speed", "--db", filepath.Join(dir, "o.db")}
		}, 2, []string{"speed", "GB/s"}},
		{"unknown backend", func() []string {
			return []string{"tune", writeSpec(t, "", ""), "--backend", "opencl", "--db", filepath.Join(dir, "b.db")}
		}, 2, []string{"opencl"}},
		{"bad flag", func() []string { return []string{"tune", "--no-such-flag"} }, 2, []string{"no-such-flag"}},
		{"no cuda driver", func() []string {
			t.Setenv("GTUNE_LIBCUDA", filepath.Join(dir, "libcuda.so.1"))
			return []string{"tune", writeSpec(t, "", ""), "--backend", "cuda", "--db", filepath.Join(dir, "c.db")}
		}, 1, []string{"libcuda"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := gtune(t, c.args()...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr: %s; stdout: %s", code, c.code, errs, out)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q: %s", w, errs)
				}
			}
			if n := strings.Count(strings.TrimSpace(errs), "\ngtune:"); n > 0 {
				t.Errorf("more than one error line: %s", errs)
			}
		})
	}
}

// The BEAST DGEMM space from the command line, counted for two GPUs of
// the device database (beast.TestDGEMM checks the counts by brute force).
func TestSpaceBeast(t *testing.T) {
	code, out, errs := gtune(t, "space", "--beast", "dgemm", "--sim-device", "k20c", "--json")
	var doc struct {
		Valid  int `json:"valid"`
		Device struct{ ID string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Valid != 1693 || doc.Device.ID != "k20c" {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	code, _, errs = gtune(t, "space", "--beast", "sgemm", "--sim-device", "k20c")
	if code != 2 || !strings.Contains(errs, `--beast "sgemm": unknown declared space (known: dgemm)`) {
		t.Fatalf("unknown space: exit %d: %s", code, errs)
	}
	code, _, errs = gtune(t, "space", "--beast", "dgemm")
	if code != 2 || !strings.Contains(errs, "needs --sim-device") {
		t.Fatalf("no device: exit %d: %s", code, errs)
	}
}

// A plan of two kernels measured on the simulated GPU, then listed and
// shown from the database.
func TestMeasureRunsShow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	va, mm := filepath.Join("..", "..", "examples", "vector_add", "spec.json"), filepath.Join("..", "..", "examples", "matmul", "spec.json")
	code, out, errs := gtune(t, "measure", va, mm, "--backend", "sim", "--db", db, "--json")
	var doc struct {
		Status       string
		Launches     []string
		Observations []struct {
			Name, Unit, Method string
			Launch             int
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Status != "valid" || len(doc.Launches) != 2 {
		t.Fatalf("measure: exit %d: %s %s", code, out, errs)
	}
	perLaunch := 0
	for _, o := range doc.Observations {
		if o.Name == "time" && o.Launch >= 0 && o.Unit == "ms" && o.Method == "sim-events" {
			perLaunch++
		}
	}
	if perLaunch != 2 {
		t.Fatalf("%d launches timed: %+v", perLaunch, doc.Observations)
	}
	code, out, errs = gtune(t, "runs", "--db", db)
	if code != 0 || !strings.Contains(out, "vector_add+matmul_kernel") || !strings.Contains(out, "measure") {
		t.Fatalf("runs: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = gtune(t, "show", "1", "--db", db, "--observations")
	if code != 0 || !strings.Contains(out, "launch 1 (matmul_kernel") || !strings.Contains(out, "sim-events") {
		t.Fatalf("show: exit %d: %s %s", code, out, errs)
	}
	if code, _, errs = gtune(t, "show", "9", "--db", db); code != 2 || !strings.Contains(errs, "holds no run 9") {
		t.Fatalf("show of a missing run: exit %d: %s", code, errs)
	}
	if code, _, errs = gtune(t, "measure", va, "--backend", "sim", "--device", "7", "--db", db); code != 2 || !strings.Contains(errs, "the simulated GPU is device 0") {
		t.Fatalf("--device 7 on the simulator: exit %d: %s", code, errs)
	}
}

// measure --devices measures the plan on each GPU, at once, a run each:
// a row per GPU with the headline observations and their spread (the
// simulated GPUs of one model answer alike: 0.00 %), a JSON array of
// one document per GPU, and each GPU's run stored with its own device.
func TestMeasureDevices(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	code, out, errs := gtune(t, "measure", va, "--backend", "sim", "--db", db, "--devices", "0,1,2", "--energy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	row := regexp.MustCompile(`^SIM-h100_sxm(-1|-2)?\s+valid\s+[123]\s+0\.96351\s+0\.39113\s+405\.38\s`)
	rows := 0
	for _, l := range lines {
		if row.MatchString(l) {
			rows++
		}
	}
	if !strings.HasPrefix(lines[0], "3 × Simulated NVIDIA H100 80GB HBM3: plan 256,1, 1 launch(es) on 1 stream(s)") || rows != 3 ||
		!regexp.MustCompile(`(?m)^spread\s+0\.00 %\s+0\.00 %\s+0\.00 %`).MatchString(out) {
		t.Fatalf("table:\n%s", out)
	}
	code, out, errs = gtune(t, "measure", va, "--backend", "sim", "--db", db, "--devices", "0,1", "--json")
	var docs []struct {
		Device struct{ UUID string }
		Run    int64
		Status string
	}
	if code != 0 || json.Unmarshal([]byte(out), &docs) != nil || len(docs) != 2 || docs[0].Device.UUID != "SIM-h100_sxm" || docs[1].Device.UUID != "SIM-h100_sxm-1" {
		t.Fatalf("--json: exit %d: %s %s", code, out, errs)
	}
	d, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runs, err := d.Runs()
	if err != nil {
		t.Fatal(err)
	}
	devices := map[string]int{}
	for _, r := range runs {
		if r.Strategy == "measure" && r.Status == "done" {
			devices[r.DeviceUUID]++
		}
	}
	if len(runs) != 5 || devices["SIM-h100_sxm"] != 2 || devices["SIM-h100_sxm-1"] != 2 || devices["SIM-h100_sxm-2"] != 1 {
		t.Errorf("stored runs by GPU %v of %d", devices, len(runs))
	}
	if code, _, errs = gtune(t, "measure", va, "--backend", "sim", "--db", db, "--devices", "0,1", "--device", "1"); code != 2 || !strings.Contains(errs, "give --device or --devices, not both") {
		t.Errorf("--device with --devices: exit %d: %s", code, errs)
	}
}

// TestTuneDefaultStrategy: with no strategy named, a space over
// strategy.BruteForceMax configurations is searched with
// strategy.DefaultSearch, or strategy.DefaultTransfer where the database
// holds the kernel's results on another GPU, and stderr says so; a
// smaller one is brute forced without a word.
func TestTuneDefaultStrategy(t *testing.T) {
	big := writeSpec(t, `{"Name": "work_per_thread", "Type": "int", "Values": "[1, 2, 4, 8]"}`,
		`{"Name": "work_per_thread", "Type": "int", "Values": "[1, 2, 4, 8]"}, {"Name": "pad", "Type": "int", "Values": "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "Default": 0}`)
	db := filepath.Join(t.TempDir(), "r.db")
	code, out, errs := gtune(t, "tune", big, "--backend", "sim", "--db", db, "--json", "--max-evals", "12", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "gtune: strategy bayes_opt: the search space has 1120 configurations, over 1000 (--strategy brute_force to try them all)\n"; !strings.Contains(errs, want) {
		t.Fatalf("stderr %q lacks %q", errs, want)
	}
	var doc struct {
		Strategy    string `json:"strategy"`
		Evaluations int    `json:"evaluated"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Strategy != "bayes_opt" || doc.Evaluations != 12 {
		t.Fatalf("strategy %q, %d evaluations; want bayes_opt, 12", doc.Strategy, doc.Evaluations)
	}
	// The kernel's results on other GPUs make transfer the default, from
	// strategy.MinPriorValid valid configurations on: the 12 on the H100
	// are too few for the A100 run, whose 30 are enough for the
	// H200's.
	code, out, errs = gtune(t, "tune", big, "--backend", "sim", "--sim-device", "a100_80gb", "--db", db, "--json", "--max-evals", "30", "--seed", "3")
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Strategy != "bayes_opt" || doc.Evaluations != 30 {
		t.Fatalf("A100 run: exit %d, strategy %q, %d evaluations (%v), stderr %q; want bayes_opt, 30: the H100's 12 are no prior", code, doc.Strategy, doc.Evaluations, err, errs)
	}
	code, out, errs = gtune(t, "tune", big, "--backend", "sim", "--sim-device", "h200", "--db", db, "--json", "--max-evals", "12", "--seed", "3")
	if code != 0 {
		t.Fatalf("H200 run: exit %d: %s", code, errs)
	}
	if want := "gtune: strategy transfer, learning from this kernel's results on 1 other GPU in the results database: the search space has 1120 configurations, over 1000 (--strategy brute_force to try them all)\n" +
		"transfer: prior database: Simulated NVIDIA A100-SXM4-80GB (SIM-a100_80gb), 28 configurations\n"; !strings.Contains(errs, want) {
		t.Fatalf("stderr %q lacks %q", errs, want)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Strategy != "transfer" || doc.Evaluations != 12 {
		t.Fatalf("H200 run: strategy %q, %d evaluations (%v); want transfer, 12", doc.Strategy, doc.Evaluations, err)
	}
	code, out, errs = gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--db", db, "--json", "--max-evals", "5")
	if code != 0 || strings.Contains(errs, "strategy") {
		t.Fatalf("exit %d, stderr %q: want brute force without a word", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Strategy != "brute_force" {
		t.Fatalf("strategy %q (%v), want brute_force", doc.Strategy, err)
	}
}

// A spec that declares BEAST's DGEMM space (testdata/dgemm-declared.json:
// examples/dgemm's kernel, its device limits the H100's Constants) is
// tuned in the space of the GPU tuned: 889 configurations on the
// simulated H100, 693 on the simulated K20c (beast's 1,693 less the tiles
// that do not divide 4096), not the Constants' 889 everywhere.
func TestTuneDeclaredSpaceOfTheGPU(t *testing.T) {
	for _, c := range []struct {
		dev  string
		want int
	}{{"h100_sxm", 889}, {"k20c", 693}} {
		code, out, errs := gtune(t, "tune", filepath.Join("testdata", "dgemm-declared.json"), "--backend", "sim", "--sim-device", c.dev,
			"--strategy", "random_sample", "--max-evals", "2", "--db", filepath.Join(t.TempDir(), "d.db"), "--json", "--no-progress")
		var sum struct {
			Space, Evaluated int
		}
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Space != c.want || sum.Evaluated != 2 {
			t.Errorf("%s: exit %d, %+v, want a space of %d: %s", c.dev, code, sum, c.want, errs)
		}
	}
}

// TestTuneLibraryRoutine: cuBLAS's DGEMM tuned as a kernel (its math
// mode the tunable parameter, the pedantic mode its reference), on the
// simulated GPU through the same seam; the run records the routine, and
// the report of a BEAST run on the same GPU places it beside the hull.
func TestTuneLibraryRoutine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	code, out, errs := gtune(t, "tune", filepath.Join("..", "..", "examples", "dgemm", "cublas.json"), "--backend", "sim", "--db", db, "--json", "--no-progress")
	var sum struct {
		Space, Evaluated, Invalid int
		Best                      struct {
			Key        string
			Objectives map[string]float64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Space != 2 || sum.Evaluated != 2 || sum.Invalid != 0 {
		t.Fatalf("exit %d, %+v: %s", code, sum, errs)
	}
	// The routine runs on the simulated H100's FP64 tensor cores, above
	// the 33.5 TFLOP/s of its FP64 CUDA cores, the default mode fastest,
	// held at the 700 W limit as the H100 holds it (measured: 53.3
	// TFLOP/s at 1632-1673 MHz, 75.8-78.8 GFLOP/s/W; the spec's
	// efficiencies, HopperPowerModel's Tensor term).
	g, w := sum.Best.Objectives["GFLOP/s"], sum.Best.Objectives["power"]
	if sum.Best.Key != "default" || g < 45000 || g > 58000 || w < 650 || w > 700 {
		t.Errorf("best %s at %.0f GFLOP/s, %.0f W; want the default mode near the H100's 53,260 at its 700 W limit", sum.Best.Key, g, w)
	}
	code, _, errs = gtune(t, "tune", filepath.Join("..", "..", "examples", "dgemm", "spec.json"), "--backend", "sim", "--strategy", "random_sample",
		"--max-evals", "5", "--energy", "--db", db, "--no-progress")
	if code != 0 {
		t.Fatalf("dgemm: exit %d: %s", code, errs)
	}
	code, out, errs = gtune(t, "report", "--db", db, "--text", "2")
	if code != 0 || strings.Count(out, "\nreference cublasDgemm (run 1) ") != 2 {
		t.Fatalf("report: exit %d: %s%s", code, out, errs)
	}
}

// TestCheckLibraryRoutine: gtune check says what it checked of a spec
// of a library routine (its arguments against the routine), and claims
// nothing of a kernel source it does not have.
func TestCheckLibraryRoutine(t *testing.T) {
	t.Setenv("GTUNE_LIBCUBLAS", "/nonexistent/libcublas.so")
	code, out, errs := gtune(t, "check", filepath.Join("..", "..", "examples", "dgemm", "cublas.json"))
	if code != 0 || !strings.Contains(out, "  checked: the arguments against cublasDgemm's parameters (int32 transa, ") ||
		strings.Contains(out, "kernel source") || !strings.Contains(out, "  not checked: the library: kernel cublasDgemm is a cuBLAS routine: cuda: libcublas not found") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}
