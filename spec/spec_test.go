package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"

	"github.com/gtune/gtune/internal/shared"
)

// hubSpec is the T1 spec NAME.T1.json of the benchmark hub in the shared
// datasets beside the repository (../shared: present in CI); the test
// skips, naming the path, where it is absent.
func hubSpec(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join("..", "..", "shared", "datasets", "benchmark_hub", "specs", name+".T1.json")
	shared.Need(tb, p)
	return p
}

// The valid and raw counts of the benchmark hub's specs, as Kernel Tuner
// enumerates them.
func TestBenchmarkHubCounts(t *testing.T) {
	cases := []struct {
		name  string
		valid int
		raw   float64
	}{
		{"convolution_milo", 4362, 16 * 5 * 4 * 4 * 2 * 2 * 2},
		{"dedispersion_milo", 11130, 6 * 29 * 4 * 8 * 2 * 2},
		{"hotspot_milo", 82984, 37 * 6 * 10 * 10 * 10 * 10 * 2},
		{"gemm_milo", 116928, 663552},
	}
	for _, c := range cases {
		s, err := LoadWith(hubSpec(t, c.name), LoadOptions{NoSource: true})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := s.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		if sp.Len() != c.valid || sp.RawCount() != c.raw {
			t.Errorf("%s: %d valid of %v, want %d of %v", c.name, sp.Len(), sp.RawCount(), c.valid, c.raw)
		}
		if s.Source != "" {
			t.Errorf("%s: NoSource read the source", c.name)
		}
		// Every configuration gives a job with the same key.
		for _, i := range []int{0, sp.Len() / 2, sp.Len() - 1} {
			j, err := s.Job(sp.Values(i))
			if err != nil {
				t.Fatalf("%s: Job(%d): %v", c.name, i, err)
			}
			if j.Key != sp.Key(i) {
				t.Errorf("%s: Job key %s, space key %s", c.name, j.Key, sp.Key(i))
			}
		}
	}
	if sp, _ := mustLoad(t, hubSpec(t, "hotspot_milo")).BuildSpace(); sp.RawCount() != 4.44e6 {
		t.Errorf("hotspot raw count %v, want 4.44e6", sp.RawCount())
	}
}

func mustLoad(t *testing.T, path string) *Spec {
	t.Helper()
	s, err := LoadWith(path, LoadOptions{NoSource: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func vals(xs ...any) []expr.Value {
	out := make([]expr.Value, len(xs))
	for i, x := range xs {
		v, err := expr.FromGo(x)
		if err != nil {
			panic(err)
		}
		out[i] = v
	}
	return out
}

// GlobalSizeType CUDA: GlobalSize is the grid in thread blocks.
func TestJobGeometryCUDA(t *testing.T) {
	s := mustLoad(t, hubSpec(t, "convolution_milo"))
	cfg := vals(48, 4, 3, 2, 1, 1, 1, 1, 15, 15)
	j, err := s.Job(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Kernel Tuner's grid from ProblemSize and GridDiv, not the file's
	// GlobalSize ((262144 // 48) // 3 = 1820 blocks, 64 times too many):
	// ceil(4096 / (48*3)) = 29, ceil(4096 / (4*2)) = 512.
	if j.Grid != [3]int{29, 512, 1} || j.Block != [3]int{48, 4, 1} || j.DynamicSharedBytes != 0 {
		t.Errorf("grid %v block %v shared %d", j.Grid, j.Block, j.DynamicSharedBytes)
	}
	if j.Key != "48,4,3,2,1,1,1,1,15,15" || len(j.Defines) != 15 || defineOf(j, "block_size_x") != "48" || defineOf(j, "grid_size_x") != "29" ||
		defineOf(j, "grid_size_y") != "512" || defineOf(j, "block_size_z") != "1" || defineOf(j, "kernel_tuner") != "1" || defineOf(j, "filter_width") != "15" {
		t.Errorf("key %s defines %v", j.Key, j.Defines)
	}
	if r := s.Request(); r.Iterations != 7 || r.EnergyWindow != time.Second || s.Measurement.Timeout != 10*time.Second || r.Energy || r.Verify || r.Trials == nil || r.Trials.MaxTrials != 5 || j.Work != nil {
		t.Errorf("defaults: %+v %+v", r, j)
	}
	p, _ := s.Problem()
	// (4096+15-1)^2 input elements, 15*15 filter in constant memory.
	want := []backend.Arg{
		{Name: "output_image", Type: "float", Kind: backend.ArgVector, Count: 4096 * 4096, Fill: backend.Fill{Type: "Constant"}, Output: true},
		{Name: "input_image", Type: "float", Kind: backend.ArgVector, Count: 4110 * 4110, Fill: backend.Fill{Type: "Random", Value: 1, Seed: DefaultRandomSeed}},
		{Name: "d_filter", Type: "float", Kind: backend.ArgVector, Count: 225, Fill: backend.Fill{Type: "Random", Value: 1, Seed: DefaultRandomSeed}, Constant: true},
	}
	if !reflect.DeepEqual(p.Kernels[0].Args, want) {
		t.Errorf("args\n%+v\nwant\n%+v", p.Kernels[0].Args, want)
	}
	if p.Kernels[0].Verification != nil || p.Kernels[0].KernelName != "convolution_kernel" || !strings.HasSuffix(p.Kernels[0].SourceName, "/specs/convolution_milo.cu") {
		t.Errorf("problem %+v", p)
	}
}

// GlobalSizeType OpenCL: grid = ceil(GlobalSize / product(GridDiv)).
func TestJobGeometryOpenCL(t *testing.T) {
	s := mustLoad(t, hubSpec(t, "hotspot_milo"))
	j, err := s.Job(vals(4096, 4096, 32, 4, 2, 3, 1, 10, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	// ceil(4096 / (32*2)) = 64; ceil(4096 / (4*3)) = 342.
	if j.Grid != [3]int{64, 342, 1} || j.Block != [3]int{32, 4, 1} {
		t.Errorf("grid %v block %v", j.Grid, j.Block)
	}
	p, _ := s.Problem()
	if len(p.Kernels[0].Args) != 7 || p.Kernels[0].Args[3].Kind != backend.ArgScalar || p.Kernels[0].Args[3].Scalar != 0.1 || !p.Kernels[0].Args[2].Output || p.Kernels[0].Args[1].Output {
		t.Errorf("args %+v", p.Kernels[0].Args)
	}
	// gemm's LocalSize reads block_size_x, which is not a parameter: Kernel
	// Tuner's default thread block (256, 1, 1); grid = 4096 / MWG, 4096 /
	// NWG, and ceil(4096 / 1) in z, since the published file gives a third
	// ProblemSize dimension and block_size_z is no parameter.
	g := mustLoad(t, hubSpec(t, "gemm_milo"))
	j, err = g.Job(vals(0, 64, 32, 32, 16, 16, 16, 16, 2, 2, 2, 1, 1, 1, 1, 1, 32))
	if err != nil {
		t.Fatal(err)
	}
	if j.Grid != [3]int{64, 128, 4096} || j.Block != [3]int{256, 1, 1} {
		t.Errorf("gemm grid %v block %v", j.Grid, j.Block)
	}
}

func TestVaddSpec(t *testing.T) {
	s, err := Load("testdata/vadd.json")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile("testdata/vadd.cu")
	if s.Source != string(src) || s.Name != "vadd" || s.Language != "CUDA" || s.GlobalSizeType != "OpenCL" || len(s.Hash) != 64 {
		t.Errorf("spec %s %s %s", s.Name, s.Language, s.Hash)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	// block_size_x*tile <= 512: 8+8+4 pairs; use_ldg needs tile > 1: 20+12;
	// times 3 values of scale.
	if sp.Len() != 96 || sp.RawCount() != 144 {
		t.Errorf("Len %d RawCount %v", sp.Len(), sp.RawCount())
	}
	cfg := vals(96, 4, true, 1e-05)
	j, err := s.Job(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Kernel Tuner's defines: the grid, the thread block's other
	// dimensions, the parameters (bools as 1/0), kernel_tuner.
	wantDefines := []backend.Define{{Name: "grid_size_x", Value: "2605"}, {Name: "grid_size_y", Value: "1"}, {Name: "grid_size_z", Value: "1"},
		{Name: "block_size_y", Value: "1"}, {Name: "block_size_z", Value: "1"},
		{Name: "block_size_x", Value: "96"}, {Name: "tile", Value: "4"}, {Name: "use_ldg", Value: "1"}, {Name: "scale", Value: "1e-05"},
		{Name: "kernel_tuner", Value: "1"}}
	// ceil(1e6 / (96*4)) = 2605 thread blocks; 96*4*4 bytes.
	if j.Key != "96,4,True,1e-05" || !reflect.DeepEqual(j.Defines, wantDefines) || j.Grid != [3]int{2605, 1, 1} || j.Block != [3]int{96, 1, 1} || j.DynamicSharedBytes != 1536 {
		t.Errorf("job %+v", j)
	}
	if r := s.Request(); r.Iterations != 10 || r.EnergyWindow != 500*time.Millisecond || s.Measurement.Timeout != 3*time.Second || !r.Energy || !r.Verify {
		t.Errorf("measurement %+v", r)
	}
	if i, ok := sp.Lookup(j.Key); !ok || !reflect.DeepEqual(sp.Values(i), cfg) {
		t.Errorf("Lookup(%s) = %d %v", j.Key, i, ok)
	}
	wantWork := backend.Work{Flops: 1e6, Bytes: 12e6, Registers: 32, SharedMemory: 0, Efficiency: 0.9, Invalid: true}
	if j.Work == nil || *j.Work != wantWork {
		t.Errorf("work %+v, want %+v", j.Work, wantWork)
	}
	if s.Objective != "GB/s" || !s.ObjectiveMaximize || !s.NeedsEnergy {
		t.Errorf("objective %s max %v energy %v", s.Objective, s.ObjectiveMaximize, s.NeedsEnergy)
	}
	if s.Budget != (Budget{MaxConfigurations: 50, Duration: 90 * time.Second}) || s.Strategy != "random_sample" {
		t.Errorf("budget %+v strategy %s", s.Budget, s.Strategy)
	}
	if !reflect.DeepEqual(s.StrategyOptions, map[string]any{"fraction": 0.1, "restarts": int64(3)}) {
		t.Errorf("strategy options %#v", s.StrategyOptions)
	}
	if s.Simulation.Device != DefaultSimDevice || s.Simulation.Noise != DefaultSimNoise || s.Simulation.SharedMemory != nil {
		t.Errorf("simulation %+v", s.Simulation)
	}
	// Reference: named values, tile and scale from Default.
	ref, ok, err := s.ReferenceConfig()
	if err != nil || !ok || s.Key(ref) != "32,1,False,1.0" {
		t.Errorf("reference %v %v %v", ref, ok, err)
	}
	p, _ := s.Problem()
	wantV := &backend.Verification{Method: "AbsoluteDifference", Threshold: 1e-5, Expected: map[string]backend.Fill{}}
	if !reflect.DeepEqual(p.Kernels[0].Verification, wantV) {
		t.Errorf("verification %+v", p.Kernels[0].Verification)
	}
	wantArgs := []backend.Arg{
		{Name: "c", Type: "float", Kind: backend.ArgVector, Count: 1000000, Fill: backend.Fill{Type: "Constant"}, Output: true},
		{Name: "a", Type: "float", Kind: backend.ArgVector, Count: 1000000, Fill: backend.Fill{Type: "Random", Value: 2, Seed: 7}},
		{Name: "b", Type: "float", Kind: backend.ArgVector, Count: 1000000, Fill: backend.Fill{Type: "Random", Value: 1, Seed: DefaultRandomSeed}},
		{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: 1000000},
	}
	if !reflect.DeepEqual(p.Kernels[0].Args, wantArgs) || p.Kernels[0].Source != string(src) || !reflect.DeepEqual(p.Kernels[0].CompilerOptions, []string{"-O3", "-I" + s.Dir}) {
		t.Errorf("args\n%+v\nwant\n%+v", p.Kernels[0].Args, wantArgs)
	}
	// Metrics in the order written, evaluable with Env plus observations.
	var names []string
	for _, m := range s.Metrics {
		names = append(names, m.Name)
	}
	if !reflect.DeepEqual(names, []string{"throughput", "GB/s", "efficiency"}) {
		t.Errorf("metric order %v", names)
	}
	if s.Metrics[2].Maximize || s.Metrics[2].Unit != "J/element" || !s.Metrics[0].Maximize {
		t.Errorf("metric directions %+v", s.Metrics)
	}
	env := obsEnv{top: expr.MapEnv{"time": expr.Float(0.5)}, base: s.Env(cfg)}
	tp, err := s.Metrics[0].Expr.Eval(env)
	if err != nil || tp.String() != "2000000000.0" {
		t.Errorf("throughput = %v, %v", tp, err)
	}
	env.top["throughput"] = tp
	gbs, err := s.Metrics[1].Expr.Eval(env)
	if err != nil || gbs.String() != "24.0" {
		t.Errorf("GB/s = %v, %v", gbs, err)
	}
	if v, ok := s.Env(cfg).Lookup("tile"); !ok || v.String() != "4" {
		t.Errorf("Env tile = %v", v)
	}
}

// The YAML and the JSON form of one spec load to the same Spec.
func TestYAMLMatchesJSON(t *testing.T) {
	js, err := Load("testdata/vadd.json")
	if err != nil {
		t.Fatal(err)
	}
	ys, err := Load("testdata/vadd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if js.Hash == ys.Hash {
		t.Error("different files, same hash")
	}
	if !reflect.DeepEqual(js.Params, ys.Params) || !reflect.DeepEqual(js.Types, ys.Types) {
		t.Errorf("params differ:\n%v\n%v", js.Params, ys.Params)
	}
	// Lists are compared with ==, not by their storage.
	if len(js.Constants) != 3 || len(js.Constants) != len(ys.Constants) {
		t.Errorf("constants %v vs %v", js.Constants, ys.Constants)
	}
	for k, v := range js.Constants {
		if w, ok := ys.Constants[k]; !ok || !v.Equal(w) || v.Kind() != w.Kind() {
			t.Errorf("constant %s: %v vs %v", k, v, w)
		}
	}
	for i := range js.Restrictions {
		if js.Restrictions[i].Expr.Source() != ys.Restrictions[i].Expr.Source() {
			t.Errorf("restriction %d differs", i)
		}
	}
	if len(js.Metrics) != len(ys.Metrics) {
		t.Fatalf("metrics %d vs %d", len(js.Metrics), len(ys.Metrics))
	}
	for i := range js.Metrics {
		a, b := js.Metrics[i], ys.Metrics[i]
		if a.Name != b.Name || a.Expr.Source() != b.Expr.Source() || a.Maximize != b.Maximize || a.Unit != b.Unit {
			t.Errorf("metric %d: %+v vs %+v", i, a, b)
		}
	}
	if js.Objective != ys.Objective || js.ObjectiveMaximize != ys.ObjectiveMaximize || js.Budget != ys.Budget ||
		js.Strategy != ys.Strategy || !reflect.DeepEqual(js.StrategyOptions, ys.StrategyOptions) ||
		!reflect.DeepEqual(js.Measurement, ys.Measurement) || js.NeedsEnergy != ys.NeedsEnergy {
		t.Error("objective, budget, strategy or measurement differ")
	}
	jp, _ := js.Problem()
	yp, _ := ys.Problem()
	if !reflect.DeepEqual(jp, yp) {
		t.Errorf("problems differ:\n%+v\n%+v", jp, yp)
	}
	jr, _, _ := js.ReferenceConfig()
	yr, _, _ := ys.ReferenceConfig()
	if !reflect.DeepEqual(jr, yr) {
		t.Errorf("reference %v vs %v", jr, yr)
	}
	jsp, _ := js.BuildSpace()
	ysp, _ := ys.BuildSpace()
	if jsp.Len() != ysp.Len() {
		t.Fatalf("space %d vs %d", jsp.Len(), ysp.Len())
	}
	for i := 0; i < jsp.Len(); i++ {
		jj, err1 := js.Job(jsp.Values(i))
		yj, err2 := ys.Job(ysp.Values(i))
		if err1 != nil || err2 != nil || !reflect.DeepEqual(jj, yj) {
			t.Fatalf("job %d differs: %+v %v\n%+v %v", i, jj, err1, yj, err2)
		}
	}
}

// writeSpec writes the vadd spec, changed by edit, with its kernel into a
// temporary directory.
func writeSpec(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile("testdata/vadd.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	// A map loses the written order of the metrics object; keep it as a list.
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	m["Gtune"].(map[string]any)["Metrics"] = f.Gtune.Metrics
	edit(m)
	out, _ := json.MarshalIndent(m, "", "  ")
	dir := t.TempDir()
	src, _ := os.ReadFile("testdata/vadd.cu")
	os.WriteFile(filepath.Join(dir, "vadd.cu"), src, 0o644)
	p := filepath.Join(dir, "spec.json")
	os.WriteFile(p, out, 0o644)
	return p
}

func obj(m map[string]any, path ...any) any {
	var cur any = m
	for _, k := range path {
		switch k := k.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur
}

func param(m map[string]any, i int) map[string]any {
	return obj(m, "ConfigurationSpace", "TuningParameters", i).(map[string]any)
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		field string
		msg   string
	}{
		{"empty values", func(m map[string]any) { param(m, 1)["Values"] = "[]" },
			"ConfigurationSpace.TuningParameters[1] (tile).Values", "the parameter has no values"},
		{"values not a list", func(m map[string]any) { param(m, 1)["Values"] = "4 * 2" },
			"ConfigurationSpace.TuningParameters[1] (tile).Values", `"4 * 2" evaluates to 8, not a list`},
		{"values unknown name", func(m map[string]any) { param(m, 1)["Values"] = "[tile_max]" },
			"ConfigurationSpace.TuningParameters[1] (tile).Values", `reads unknown name "tile_max" (values may read constants and ProblemSize only)`},
		{"value of wrong type", func(m map[string]any) { param(m, 1)["Values"] = "[1, 2.5]" },
			"ConfigurationSpace.TuningParameters[1] (tile).Values", "value 2.5: is a float, not an int"},
		{"duplicate value", func(m map[string]any) { param(m, 1)["Values"] = "[1, 2, 1]" },
			"ConfigurationSpace.TuningParameters[1] (tile).Values", "value 1 is listed twice"},
		{"duplicate parameter", func(m map[string]any) { param(m, 2)["Name"] = "tile" },
			"ConfigurationSpace.TuningParameters[2] (tile).Name", `duplicate tunable parameter "tile" (also TuningParameters[1])`},
		{"syntax error", func(m map[string]any) {
			obj(m, "ConfigurationSpace", "Conditions", 1).(map[string]any)["Expression"] = "not use_ldg or tile >> > 1"
		}, "ConfigurationSpace.Conditions[1].Expression",
			"syntax error at column 24: unexpected \">\"\n    not use_ldg or tile >> > 1\n                           ^"},
		{"condition unknown name", func(m map[string]any) {
			obj(m, "ConfigurationSpace", "Conditions", 0).(map[string]any)["Expression"] = "block_size_x * tile_y <= MAX_WORK"
		}, "ConfigurationSpace.Conditions[0].Expression",
			`"block_size_x * tile_y <= MAX_WORK" reads "tile_y", which is neither a tunable parameter nor a constant`},
		{"negative size", func(m map[string]any) {
			obj(m, "KernelSpecification", "Arguments", 1).(map[string]any)["Size"] = "ProblemSize[0] - 2000000"
		}, "KernelSpecification.Arguments[1] (a).Size", "size of argument a is -1000000 elements; it must be positive"},
		{"missing kernel", func(m map[string]any) {
			obj(m, "KernelSpecification").(map[string]any)["KernelFile"] = "kernels/missing.cu"
		},
			"KernelSpecification.KernelFile", "kernel source DIR/kernels/missing.cu does not exist (relative paths are relative to the spec's directory)"},
		{"unknown observer", func(m map[string]any) {
			obj(m, "Gtune").(map[string]any)["Measurement"] = map[string]any{"Observers": []any{"power-samples", "wattmeter"}}
		}, "Gtune.Measurement.Observers[1]", `unknown observer "wattmeter" (known: clocks, energy, power-samples)`},
		{"unknown objective", func(m map[string]any) { obj(m, "Gtune").(map[string]any)["Objective"] = "speed" },
			"Gtune.Objective", `unknown objective "speed" (valid: time, energy, power, edp, throughput, GB/s, efficiency)`},
		{"metric unknown name", func(m map[string]any) {
			obj(m, "Gtune").(map[string]any)["Metrics"] = map[string]any{"x": "tim * 2"}
			obj(m, "Gtune").(map[string]any)["Objective"] = "x"
		}, "Gtune.Metrics[0] (x).Expression", `"tim * 2" reads "tim", which is not a tunable parameter, constant, earlier metric or observation (observations: time, time_median, time_min, time_max, time_std, time_cv, time_ci_low, time_ci_high, energy, power, edp, dynamic_energy, idle_power, sm_clock, mem_clock, temperature, clock_event_reasons, power_throttle_time, thermal_throttle_time, throttled, energy_window, energy_runs, energy_gpu_time, energy_ci_low, energy_ci_high, energy_cv, energy_trials, unstable, sample_energy, energy_uncorrected, leakage_slope, temperature_ref, leakage_prior, warmup_time, thermal_steady, power_samples_energy, power_samples_power, registers, shared_memory, local_memory, max_threads_per_block, compile_time, benchmark_time)`},
		{"metric reads later metric", func(m map[string]any) {
			obj(m, "Gtune").(map[string]any)["Metrics"] = []any{
				map[string]any{"Name": "a", "Expression": "b + 1"}, map[string]any{"Name": "b", "Expression": "time"}}
			obj(m, "Gtune").(map[string]any)["Objective"] = "time"
		}, "Gtune.Metrics[0] (a).Expression", `"b + 1" reads "b", which is not a tunable parameter, constant, earlier metric or observation (observations: time, time_median, time_min, time_max, time_std, time_cv, time_ci_low, time_ci_high, energy, power, edp, dynamic_energy, idle_power, sm_clock, mem_clock, temperature, clock_event_reasons, power_throttle_time, thermal_throttle_time, throttled, energy_window, energy_runs, energy_gpu_time, energy_ci_low, energy_ci_high, energy_cv, energy_trials, unstable, sample_energy, energy_uncorrected, leakage_slope, temperature_ref, leakage_prior, warmup_time, thermal_steady, power_samples_energy, power_samples_power, registers, shared_memory, local_memory, max_threads_per_block, compile_time, benchmark_time)`},
		{"reference unknown parameter", func(m map[string]any) {
			obj(m, "Gtune", "Reference").(map[string]any)["Configuration"] = map[string]any{"block": 32}
		}, "Gtune.Reference.Configuration.block", `"block" is not a tunable parameter`},
		{"reference value not listed", func(m map[string]any) {
			obj(m, "Gtune", "Reference").(map[string]any)["Configuration"] = map[string]any{"tile": 3}
		}, "Gtune.Reference.Configuration.tile", "3 is not one of the values of tile [1, 2, 4]"},
		{"unknown budget type", func(m map[string]any) { obj(m, "Budget", 0).(map[string]any)["Type"] = "Evaluations" },
			"Budget[0].Type", `unknown "Evaluations" (valid: TuningDuration, ConfigurationCount, ConfigurationFraction)`},
		{"geometry unknown name", func(m map[string]any) { obj(m, "KernelSpecification", "LocalSize").(map[string]any)["X"] = "N" },
			"KernelSpecification.LocalSize.X", `"N" reads "N", which is neither a tunable parameter nor a constant`},
		{"scalar without value", func(m map[string]any) {
			delete(obj(m, "KernelSpecification", "Arguments", 3).(map[string]any), "FillValue")
		},
			"KernelSpecification.Arguments[3] (n).FillValue", "a scalar argument needs a FillValue"},
		{"unknown argument type", func(m map[string]any) { obj(m, "KernelSpecification", "Arguments", 3).(map[string]any)["Type"] = "int" },
			"KernelSpecification.Arguments[3] (n).Type", `unknown type "int" (valid: bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, half, half2, half4, half8, half16, float, float2, float4, float8, float16, double, double2, double4, double8, double16, custom)`},
		{"constant shadows parameter", func(m map[string]any) { obj(m, "Gtune", "Constants").(map[string]any)["tile"] = 4 },
			"ConfigurationSpace.TuningParameters[1] (tile).Name", `"tile" is both a tunable parameter and a constant`},
	}
	for _, c := range cases {
		p := writeSpec(t, c.edit)
		_, err := Load(p)
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want *Error", c.name, err)
			continue
		}
		msg := strings.ReplaceAll(c.msg, "DIR", filepath.Dir(p))
		if se.File != p || se.Field != c.field || se.Msg != msg {
			t.Errorf("%s:\n got %s | %s\nwant %s | %s", c.name, se.Field, se.Msg, c.field, msg)
		}
		if !strings.HasPrefix(err.Error(), p+": "+c.field+": ") {
			t.Errorf("%s: Error() = %s", c.name, err)
		}
	}
}

func TestMissingSpecFile(t *testing.T) {
	_, err := Load("testdata/nope.json")
	var se *Error
	if !errors.As(err, &se) || se.Msg != "spec file does not exist" || err.Error() != "testdata/nope.json: spec file does not exist" {
		t.Errorf("got %v", err)
	}
}

func TestMalformedFiles(t *testing.T) {
	cases := []struct {
		name, text   string
		line, column int
		field, msg   string
	}{
		{"syntax.json", "{\n  \"General\": {\n    \"BenchmarkName\": \"x\",,\n  }\n}\n", 3, 26, "",
			"malformed JSON: invalid character ',' looking for beginning of object key string"},
		{"type.json", "{\n  \"ConfigurationSpace\": {\n    \"TuningParameters\": [\n      {\"Name\": 5, \"Values\": \"[1]\"}\n    ]\n  }\n}\n", 4, 16,
			"ConfigurationSpace.TuningParameters.Name", "malformed JSON: number value where a string is expected"},
		{"truncated.json", "{\"General\": ", 1, 13, "", "malformed JSON: unexpected end of file"},
		{"trailing.json", "{}\n}", 2, 1, "", "malformed JSON: unexpected data after the top-level object"},
		{"syntax.yaml", "General:\n  BenchmarkName: [x\nKernelSpecification: {}\n", 2, 0, "", "malformed YAML: did not find expected ',' or ']'"},
		{"tab.yaml", "General:\n\tBenchmarkName: x\n", 2, 0, "", "malformed YAML: found character that cannot start any token"},
		{"type.yaml", "ConfigurationSpace:\n  TuningParameters:\n    - Name: x\n      Values: [1, 2]\n", 4, 15, "", "malformed YAML: cannot unmarshal !!seq into string"},
		{"metrics.json", `{"Gtune": {"Metrics": 5}}`, 0, 0, "", `malformed JSON: Gtune.Metrics must be an object {"name": "expression"} or a list of {Name, Expression}`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, []byte(c.text), 0o644)
		_, err := Load(p)
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v", c.name, err)
			continue
		}
		if se.Line != c.line || se.Column != c.column || se.Field != c.field || se.Msg != c.msg {
			t.Errorf("%s: got %d:%d %q %q, want %d:%d %q %q", c.name, se.Line, se.Column, se.Field, se.Msg, c.line, c.column, c.field, c.msg)
		}
	}
	_, err := Load(filepath.Join(dir, "syntax.json"))
	if want := filepath.Join(dir, "syntax.json") + ":3:26: malformed JSON: invalid character ',' looking for beginning of object key string"; err.Error() != want {
		t.Errorf("Error() = %s", err)
	}
}

// Metrics written as a list keep their order too; as an object, the
// written order is kept even when it is not sorted.
func TestMetricForms(t *testing.T) {
	p := writeSpec(t, func(m map[string]any) {
		obj(m, "Gtune").(map[string]any)["Metrics"] = []any{
			map[string]any{"Name": "z", "Expression": "1 / time", "Unit": "1/ms"},
			map[string]any{"Name": "a", "Expression": "z * 2", "Direction": "minimize"},
		}
		obj(m, "Gtune").(map[string]any)["Objective"] = "a"
		obj(m, "Gtune").(map[string]any)["ObjectiveDirection"] = "maximize"
	})
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Metrics) != 2 || s.Metrics[0].Name != "z" || s.Metrics[1].Name != "a" || s.Metrics[0].Unit != "1/ms" || s.Metrics[1].Maximize {
		t.Errorf("metrics %+v", s.Metrics)
	}
	if !s.ObjectiveMaximize || s.NeedsEnergy {
		t.Errorf("objective direction %v energy %v", s.ObjectiveMaximize, s.NeedsEnergy)
	}
	var ml MetricList
	if err := json.Unmarshal([]byte(`{"zz": "time", "aa": "zz", "mm": {"Expression": "aa", "Direction": "minimize"}}`), &ml); err != nil {
		t.Fatal(err)
	}
	if len(ml) != 3 || ml[0].Name != "zz" || ml[1].Name != "aa" || ml[2].Name != "mm" || ml[2].Direction != "minimize" {
		t.Errorf("object order %+v", ml)
	}
}

func TestReferenceArguments(t *testing.T) {
	p := writeSpec(t, func(m map[string]any) {
		obj(m, "KernelSpecification").(map[string]any)["ReferenceArguments"] = []any{
			map[string]any{"Name": "c_ref", "TargetName": "c", "FillType": "BinaryRaw", "DataSource": "c_ref.bin",
				"ValidationMethod": "SideBySideRelativeComparison", "ValidationThreshold": 0.01},
		}
	})
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "c_ref.bin does not exist") {
		t.Errorf("missing data file: %v", err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(p), "c_ref.bin"), make([]byte, 8), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := s.Problem()
	want := &backend.Verification{Method: "SideBySideRelativeComparison", Threshold: 0.01,
		Expected: map[string]backend.Fill{"c": {Type: "BinaryRaw", File: filepath.Join(filepath.Dir(p), "c_ref.bin")}}}
	if !reflect.DeepEqual(pr.Kernels[0].Verification, want) {
		t.Errorf("verification %+v", pr.Kernels[0].Verification)
	}
	// Problem gives copies.
	pr.Kernels[0].Verification.Expected["x"] = backend.Fill{}
	pr.Kernels[0].Args[0].Count = 1
	pr2, _ := s.Problem()
	if len(pr2.Kernels[0].Verification.Expected) != 1 || pr2.Kernels[0].Args[0].Count != 1000000 {
		t.Error("Problem shares state between calls")
	}
}

// defineOf is the value of the define name in j, "" when absent.
func defineOf(j *backend.Job, name string) string {
	for _, d := range j.Defines {
		if d.Name == name {
			return d.Value
		}
	}
	return ""
}

func TestJobErrors(t *testing.T) {
	t.Run("convolution", func(t *testing.T) {
		s := mustLoad(t, hubSpec(t, "convolution_milo"))
		if _, err := s.Job(vals(48, 4)); err == nil {
			t.Error("short configuration accepted")
		}
	})
	p := writeSpec(t, func(m map[string]any) {
		obj(m, "KernelSpecification", "LocalSize").(map[string]any)["X"] = "block_size_x - 32"
	})
	v := mustLoad(t, p)
	_, err := v.Job(vals(32, 1, false, 0.5))
	var se *Error
	if !errors.As(err, &se) || se.Field != "KernelSpecification.LocalSize.X" ||
		se.Msg != "for configuration {block_size_x=32, tile=1, use_ldg=False, scale=0.5}: the thread block dimension is 0; it must be positive" {
		t.Errorf("got %v", err)
	}
}

// The declared work's FP64 operations, stores, L2 and shared-memory
// traffic reach the job's work; stores above the bytes moved are
// refused, naming the field and the configuration.
func TestSimulationFP64AndTraffic(t *testing.T) {
	p := writeSpec(t, func(m map[string]any) {
		sim := obj(m, "Gtune", "Simulation").(map[string]any)
		sim["FP64Flops"], sim["WriteBytes"], sim["L2Bytes"] = "2*ProblemSize[0]", "4*ProblemSize[0]", "24*ProblemSize[0]"
		sim["SharedBytes"], sim["FP64TensorFlops"] = "32*ProblemSize[0]", "3*ProblemSize[0]"
	})
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Job(sp.Values(0))
	if err != nil {
		t.Fatal(err)
	}
	if w := j.Work; w.FP64Flops != 2e6 || w.FP64TensorFlops != 3e6 || w.WriteBytes != 4e6 || w.L2Bytes != 24e6 || w.Bytes != 12e6 || w.SharedBytes != 32e6 {
		t.Errorf("work %+v", w)
	}
	p = writeSpec(t, func(m map[string]any) {
		obj(m, "Gtune", "Simulation").(map[string]any)["WriteBytes"] = "13*ProblemSize[0]"
	})
	if s, err = Load(p); err != nil {
		t.Fatal(err)
	}
	_, err = s.Job(sp.Values(0))
	if err == nil || !strings.Contains(err.Error(), "Simulation.WriteBytes") || !strings.Contains(err.Error(), "more than Bytes (1.2e+07)") {
		t.Errorf("stores above the bytes: %v", err)
	}
}
