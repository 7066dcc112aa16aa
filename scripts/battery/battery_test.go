// Package battery is gtune's bad-input battery: gtune built once, then run
// as a new user would run it, on the simulated GPU, with bad or odd input
// to every command: unknown and out-of-range flags, broken specs (a key
// removed, misspelled or of the wrong type, bad expressions), broken kernel
// files, databases and caches. Every case must end cleanly: the expected
// exit status (2 bad input, 1 run failure) and a message, never a crash
// (a panic, a Go runtime error, another status) or an exit 0 (a silent
// acceptance). `go test ./scripts/battery/ -v` prints the totals;
// GTUNE_BATTERY_BIN=path runs it against another build and only reports.
package battery_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type outcome string

const (
	clean     outcome = "clean"
	crash     outcome = "crash"
	wrongExit outcome = "wrong exit"
	silent    outcome = "silent"
)

type kase struct {
	name  string
	args  []string
	stdin string
	want  int // exit status expected: 2 or 1
}

// build compiles gtune into dir. It first reads every Go file of the
// module: go test caches a test's result by the files the test itself
// opens, and the go build below reads them in another process, so that
// without this a change to gtune's sources left the battery's old result
// in the cache.
func build(t *testing.T, dir string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".cu") || strings.HasSuffix(p, ".json")) {
			os.ReadFile(p)
		}
		return nil
	})
	bin := filepath.Join(dir, "gtune")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/gtune/gtune/cmd/gtune")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// judge classifies one run.
func judge(code int, stderr string, want int) outcome {
	switch {
	case strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "fatal error:") || code > 2 || code < 0:
		return crash
	case code == 0:
		return silent
	case code != want || !strings.HasPrefix(stderr, "gtune: "):
		return wrongExit
	}
	return clean
}

func TestBattery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	// GTUNE_BATTERY_BIN runs the battery against another build (a
	// before/after comparison); its failures are then only reported.
	bin := os.Getenv("GTUNE_BATTERY_BIN")
	report := t.Errorf
	if bin == "" {
		bin = build(t, dir)
	} else {
		report = t.Logf
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile(filepath.Join(root, "tuner", "testdata", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := os.ReadFile(filepath.Join(root, "tuner", "testdata", "kernel.cu"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	// spec writes a copy of the test spec with old replaced by new (and
	// the kernel file given, or the good one) and returns its path.
	spec := func(old, new string, kern []byte) string {
		n++
		d := filepath.Join(dir, fmt.Sprintf("s%d", n))
		os.MkdirAll(d, 0o755)
		s := string(base)
		if old != "" {
			if !strings.Contains(s, old) {
				t.Fatalf("the test spec has no %q", old)
			}
			s = strings.Replace(s, old, new, 1)
		}
		os.WriteFile(filepath.Join(d, "spec.json"), []byte(s), 0o644)
		if kern == nil {
			kern = kernel
		}
		os.WriteFile(filepath.Join(d, "kernel.cu"), kern, 0o644)
		return filepath.Join(d, "spec.json")
	}
	good := spec("", "", nil)
	db := func() string { n++; return filepath.Join(dir, fmt.Sprintf("r%d.db", n)) }
	tune := func(name string, path string, extra ...string) kase {
		return kase{name: name, args: append([]string{"tune", path, "--backend", "sim", "--db", db(), "--max-evals", "3"}, extra...), want: 2}
	}

	var cases []kase
	// Every command: an unknown flag, and a wrong number of arguments.
	commands := map[string][]string{
		"tune": {good}, "measure": {good}, "space": {good}, "check": {good}, "runs": nil, "show": {"1"},
		"export": nil, "import": {"x.json"}, "replay": {"x.json"}, "bench-strategies": nil, "occupancy": nil,
		"sensor-check": nil, "schedule": {"w.yaml"}, "devices": nil, "restore": nil, "report": {"1"},
	}
	for c, args := range commands {
		cases = append(cases, kase{name: c + " --no-such-flag", args: append(append([]string{c}, args...), "--no-such-flag"), want: 2})
	}
	for _, c := range []string{"tune", "measure", "check", "show", "import", "replay", "schedule", "report"} {
		cases = append(cases, kase{name: c + " without arguments", args: []string{c}, want: 2})
	}
	for _, c := range []string{"tune", "show", "runs", "devices", "replay", "occupancy"} {
		cases = append(cases, kase{name: c + " with extra arguments", args: []string{c, "a", "b", "c"}, want: 2})
	}
	cases = append(cases, kase{name: "unknown command", args: []string{"tuen"}, want: 2})

	// Numeric and list flags out of range or not numbers.
	for _, f := range []struct{ cmd, flag string }{
		{"tune", "--max-evals"}, {"tune", "--device"}, {"tune", "--max-configurations"}, {"tune", "--max-examined"},
		{"tune", "--compile-processes"}, {"tune", "--seed"}, {"measure", "--iterations"}, {"measure", "--device"},
		{"replay", "--repeats"}, {"replay", "--max-evals"}, {"replay", "--lookahead"}, {"bench-strategies", "--seeds"},
		{"bench-strategies", "--workers"}, {"space", "--max-configurations"}, {"check", "--compile-sample"}, {"sensor-check", "--device"},
	} {
		args := []string{f.cmd}
		if a := commands[f.cmd]; a != nil {
			args = append(args, a...)
		}
		for _, v := range []string{"-1", "abc", "1e99", ""} {
			if v == "-1" && f.flag == "--seed" {
				continue // a seed is any unsigned number; -1 is not one
			}
			cases = append(cases, kase{name: f.cmd + " " + f.flag + " " + v, args: append(append([]string{}, args...), f.flag, v), want: 2})
		}
	}
	for _, v := range []string{"0s", "-5m", "forever"} {
		cases = append(cases, kase{name: "tune --compile-timeout " + v, args: []string{"tune", good, "--backend", "sim", "--compile-timeout", v}, want: 2})
		if v != "0s" { // --time-limit 0s: no limit
			cases = append(cases, kase{name: "tune --time-limit " + v, args: []string{"tune", good, "--backend", "sim", "--time-limit", v}, want: 2})
		}
	}
	for _, v := range []string{"", "time,", ",energy", "speed", "time,time", "GB/s/W/x"} {
		cases = append(cases, tune("--objective "+v, good, "--objective", v))
	}
	for _, a := range [][]string{
		{"--strategy", "nope"}, {"--strategy-param", "x"}, {"--backend", "opencl"}, {"--device", "3"},
		{"--sim-device", "nope"}, {"--gpu-settings", "g9"}, {"--gpu-settings", "g3", "--power-step", "0"},
		{"--clock-step", "100"}, {"--power-step", "5"}, {"--energy=false", "--objective", "energy"},
		{"--orders"}, {"--on-no-permission", "ask", "--gpu-settings", "g3"}, {"--clock-range", "mid"},
	} {
		cases = append(cases, tune("tune "+strings.Join(a, " "), good, a...))
	}

	// Broken specs.
	for _, m := range []struct{ name, old, new string }{
		{"no ConfigurationSpace", `"ConfigurationSpace"`, `"ConfigurationSpac"`},
		{"misspelled KernelSpecification", `"KernelSpecification"`, `"KernelSpecificaton"`},
		{"misspelled TuningParameters", `"TuningParameters"`, `"TunningParameters"`},
		{"misspelled KernelName", `"KernelName"`, `"KernelNmae"`},
		{"misspelled Arguments", `"Arguments"`, `"Argument"`},
		{"misspelled Gtune", `"Gtune"`, `"GTune"`},
		{"KernelName not in the file", `"KernelName": "vector_add"`, `"KernelName": "vector_sub"`},
		{"KernelFile missing", `"KernelFile": "kernel.cu"`, `"KernelFile": "nope.cu"`},
		{"KernelFile a folder", `"KernelFile": "kernel.cu"`, `"KernelFile": "."`},
		{"Values not a list", `"Values": "[1, 2, 4, 8]"`, `"Values": "4"`},
		{"Values empty", `"Values": "[1, 2, 4, 8]"`, `"Values": "[]"`},
		{"Values a syntax error", `"Values": "[1, 2, 4, 8]"`, `"Values": "[1, 2,"`},
		{"Values of a number type", `"Values": "[1, 2, 4, 8]"`, `"Values": 4`},
		{"duplicate parameter", `{"Name": "work_per_thread"`, `{"Name": "block_size_x"`},
		{"Type unknown", `"Type": "int", "Values": "[1, 2, 4, 8]"`, `"Type": "complex", "Values": "[1, 2, 4, 8]"`},
		{"Language OpenCL", `"Language": "CUDA"`, `"Language": "OpenCL"`},
		{"argument size negative", `"Size": "n", "Output": 1`, `"Size": "-n", "Output": 1`},
		{"argument size zero", `"Size": "n", "Output": 1`, `"Size": "0", "Output": 1`},
		{"argument type unknown", `{"Name": "c", "Type": "float"`, `{"Name": "c", "Type": "quad"`},
		{"MemoryType unknown", `{"Name": "c", "Type": "float", "MemoryType": "Vector"`, `{"Name": "c", "Type": "float", "MemoryType": "Texture3D"`},
		{"FillType unknown", `"FillType": "Constant", "FillValue": 0.0, "Size": "n", "Output": 1`, `"FillType": "Sine", "FillValue": 0.0, "Size": "n", "Output": 1`},
		{"an argument too many", `{"Name": "n", "Type": "int32"`, `{"Name": "m", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1}, {"Name": "n", "Type": "int32"`},
		{"a vector as scalar", `{"Name": "a", "Type": "float", "MemoryType": "Vector"`, `{"Name": "a", "Type": "float", "MemoryType": "Scalar"`},
		{"Iterations 0", `"Iterations": 7`, `"Iterations": 0`},
		{"Iterations negative", `"Iterations": 7`, `"Iterations": -3`},
		{"Iterations a string", `"Iterations": 7`, `"Iterations": "seven"`},
		{"EnergyWindowSeconds huge", `"EnergyWindowSeconds": 1.0`, `"EnergyWindowSeconds": 1e9`},
		{"EnergyWindowSeconds negative", `"EnergyWindowSeconds": 1.0`, `"EnergyWindowSeconds": -1`},
		{"TimeoutSeconds negative", `"TimeoutSeconds": 10`, `"TimeoutSeconds": -10`},
		{"Simulation Flops missing", `"Flops": "n",`, ``},
		{"Simulation device unknown", `"Device": "h100_sxm"`, `"Device": "h900"`},
		{"Simulation Flops a syntax error", `"Flops": "n"`, `"Flops": "n +"`},
		{"Simulation Registers negative", `"Registers": "16 + 4*work_per_thread"`, `"Registers": "-1"`},
		{"LocalSize a syntax error", `"X": "block_size_x"`, `"X": "block_size_x *"`},
		{"LocalSize an unknown name", `"X": "block_size_x"`, `"X": "block_size_w"`},
		{"LocalSize zero", `"X": "block_size_x"`, `"X": "0"`},
		{"trailing garbage", `}`, `}}`},
		{"not JSON", `{`, `<`},
		{"Objective unknown", `"Objective": "time"`, `"Objective": "speed"`},
		{"Noise negative", `"Noise": 0.01`, `"Noise": -1`},
	} {
		if !strings.Contains(string(base), m.old) {
			continue // a mutation of a key this spec lacks
		}
		cases = append(cases, tune("spec: "+m.name, spec(m.old, m.new, nil)))
	}
	// Broken kernel files.
	random := bytes.Repeat([]byte{0x00, 0xff, 0x13, 0x37}, 1024)
	for _, k := range []struct {
		name string
		src  []byte
	}{
		{"empty kernel", []byte{}},
		{"kernel of comments", []byte("// nothing here\n")},
		{"binary kernel", random},
		{"Latin-1 kernel", []byte("__global__ void vector_add() { /* caf\xe9 */ }")},
		{"unclosed brace", []byte(strings.Replace(string(kernel), "}", "", 1))},
		{"stray parenthesis", []byte(strings.Replace(string(kernel), "(", "((", 1))},
		{"kernel renamed", []byte(strings.ReplaceAll(string(kernel), "vector_add", "vadd"))},
		{"a parameter fewer", []byte(strings.Replace(string(kernel), "int n", "", 1))},
	} {
		cases = append(cases, tune("kernel: "+k.name, spec("", "", k.src)))
	}
	// Databases.
	os.WriteFile(filepath.Join(dir, "not.db"), []byte("this is not a database"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o644)
	for _, p := range []struct{ name, path string }{
		{"a folder", dir}, {"a text file", filepath.Join(dir, "not.db")}, {"in a missing folder", filepath.Join(dir, "no", "r.db")},
	} {
		cases = append(cases, kase{name: "tune --db " + p.name, args: []string{"tune", good, "--backend", "sim", "--db", p.path}, want: 2})
	}
	for _, p := range []struct{ name, path string }{
		{"missing", filepath.Join(dir, "missing.db")}, {"empty", filepath.Join(dir, "empty.db")}, {"a text file", filepath.Join(dir, "not.db")}, {"a folder", dir},
	} {
		cases = append(cases,
			kase{name: "runs --db " + p.name, args: []string{"runs", "--db", p.path}, want: 2},
			kase{name: "show --db " + p.name, args: []string{"show", "1", "--db", p.path}, want: 2},
			kase{name: "report --db " + p.name, args: []string{"report", "1", "--db", p.path}, want: 2},
			kase{name: "export --db " + p.name, args: []string{"export", "--db", p.path, "--run", "1", "--format", "kerneltuner"}, want: 2})
	}
	cases = append(cases, kase{name: "show a run id that is not a number", args: []string{"show", "one"}, want: 2})
	// Caches.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"device_name": "x", "kernel_name": "k", "tune_params_keys": ["a"], "tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1.0}, "2": {"a": 2, "time": 2.0}}}`))
	zw.Close()
	caches := map[string][]byte{
		"cut.json.gz": gz.Bytes()[:gz.Len()-12], "empty.json": nil, "text.json": []byte("hello"),
		"array.json": []byte("[1, 2, 3]"), "nocache.json": []byte(`{"device_name": "x"}`),
	}
	for name, b := range caches {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		cases = append(cases,
			kase{name: "replay " + name, args: []string{"replay", p}, want: 2},
			kase{name: "import " + name, args: []string{"import", p, "--spec", good, "--db", db()}, want: 2},
			kase{name: "bench-strategies --cache " + name, args: []string{"bench-strategies", "--cache", p}, want: 2})
	}
	// occupancy and space.
	for _, in := range []string{"\"a\n", "block_size,registers,shared_memory\n-1,2,3\n", "x,y,z\n", "block_size,registers,shared_memory\n1e99,1,1\n"} {
		cases = append(cases, kase{name: fmt.Sprintf("occupancy --batch %q", in), args: []string{"occupancy", "--batch"}, stdin: in, want: 2})
	}
	for _, a := range [][]string{
		{"--block-size", "0"}, {"--block-size", "4096"}, {"--registers", "-1"}, {"--shared-memory", "-5"}, {"--sim-device", "nope"}, {"--carveout", "999"},
	} {
		cases = append(cases, kase{name: "occupancy " + strings.Join(a, " "), args: append([]string{"occupancy", "--block-size", "256"}, a...), want: 2})
	}
	cases = append(cases,
		kase{name: "space --beast nope", args: []string{"space", "--beast", "nope", "--sim-device", "h100_sxm"}, want: 2},
		kase{name: "space --beast without --sim-device", args: []string{"space", "--beast", "dgemm"}, want: 2},
		kase{name: "check a missing file", args: []string{"check", filepath.Join(dir, "nope.json")}, want: 2},
		kase{name: "measure --config of another space", args: []string{"measure", good, "--backend", "sim", "--db", db(), "--config", "65,2"}, want: 2},
		kase{name: "sensor-check --device 5 on the simulator", args: []string{"sensor-check", "--backend", "sim", "--device", "5"}, want: 2},
		kase{name: "restore a missing journal", args: []string{"restore", "--journal", filepath.Join(dir, "none.journal")}, want: 2},
	)

	// One validation path: a measurement section's numbers out of range
	// or not finite, in a spec (YAML's .nan too) and in a workload alike;
	// a workload's values of the wrong type and misspelt keys; thread
	// blocks no GPU can launch.
	for _, m := range []struct{ name, old, new string }{
		{"EnergyWindowSeconds NaN", `"EnergyWindowSeconds": 1.0`, `"EnergyWindowSeconds": NaN`},
		{"TimeoutSeconds huge", `"TimeoutSeconds": 10`, `"TimeoutSeconds": 1e12`},
		{"Trials huge", `"Iterations": 7`, `"Iterations": 7, "Trials": 1000000000`},
		{"WarmupMaxSeconds huge", `"Iterations": 7`, `"Iterations": 7, "WarmupMaxSeconds": 1e9`},
		{"Observers unknown", `"Iterations": 7`, `"Iterations": 7, "Observers": ["nope"]`},
		{"Thermal unknown", `"Iterations": 7`, `"Iterations": 7, "Thermal": "warm"`},
		{"ReferenceTemperature huge", `"Iterations": 7`, `"Iterations": 7, "ReferenceTemperature": 1000`},
		{"every thread block too large", `"Values": "[32*i for i in range(1,33)]"`, `"Values": "[2048, 4096]"`},
	} {
		if strings.Contains(string(base), m.old) {
			cases = append(cases, tune("spec: "+m.name, spec(m.old, m.new, nil)))
		}
	}
	workload := func(body string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("w%d.yaml", n))
		os.WriteFile(p, []byte("name: w\nkernels:\n  - name: k\n    spec: "+good+"\n"+body), 0o644)
		return p
	}
	for _, w := range []struct{ name, body string }{
		{"energy_window_seconds .nan", "measurement:\n  energy_window_seconds: .nan\n"},
		{"energy_window_seconds .inf", "measurement:\n  energy_window_seconds: .inf\n"},
		{"energy_window_seconds 1e9", "measurement:\n  energy_window_seconds: 1e9\n"},
		{"iterations 1e9", "measurement:\n  iterations: 1000000000\n"},
		{"energy_trials 1e9", "measurement:\n  energy_trials: 1000000000\n"},
		{"an unknown observer", "measurement:\n  observers: [nope]\n"},
		{"a string for an int", "    config: {work_per_thread: four}\n"},
		{"a fraction for an int", "    config: {work_per_thread: [1, 2.5]}\n"},
		{"a thread block too large", "    config: {block_size_x: 4096}\n"},
		{"a misspelt key", "    sepc: x\n"},
		{"a list for a stream", "    stream: [1]\n"},
	} {
		p := workload(w.body)
		cases = append(cases, tune("workload: "+w.name, p), kase{name: "check workload: " + w.name, args: []string{"check", p}, want: 2})
	}
	// Options that mean nothing where they are given.
	negCache := filepath.Join(dir, "negative.json")
	os.WriteFile(negCache, []byte(`{"device_name": "x", "kernel_name": "k", "tune_params_keys": ["a"], "tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1.0}, "2": {"a": 2, "time": -1}}}`), 0o644)
	wlCache := filepath.Join(dir, "workload-cache.json")
	os.WriteFile(wlCache, []byte(`{"device_name": "x", "kernel_name": "k", "tune_params_keys": ["k.a"], "tune_params": {"k.a": [1, 2]}, "cache": {"1": {"k.a": 1, "time": 1.0}, "2": {"k.a": 2, "time": 2.0}}}`), 0o644)
	wl := workload("")
	cases = append(cases,
		kase{name: "space SPEC --orders", args: []string{"space", good, "--orders"}, want: 2},
		kase{name: "space SPEC --min-occupancy", args: []string{"space", good, "--min-occupancy", "0.5"}, want: 2},
		kase{name: "space --min-occupancy 2", args: []string{"space", wl, "--min-occupancy", "2"}, want: 2},
		kase{name: "schedule --balance -1", args: []string{"schedule", wl, "--backend", "sim", "--balance", "-1"}, want: 2},
		kase{name: "schedule --balance NaN", args: []string{"schedule", wl, "--backend", "sim", "--balance", "NaN"}, want: 2},
		kase{name: "schedule --deviation-limit 0", args: []string{"schedule", wl, "--backend", "sim", "--deviation-limit", "0"}, want: 2},
		kase{name: "schedule --profile ncu on the simulator", args: []string{"schedule", wl, "--backend", "sim", "--profile", "ncu"}, want: 2},
		kase{name: "replay a cache with a negative time", args: []string{"replay", negCache}, want: 2},
		kase{name: "replay a workload's cache without --spec", args: []string{"replay", wlCache}, want: 2},
		kase{name: "bench-strategies with an argument", args: []string{"bench-strategies", wl}, want: 2},
		kase{name: "bench-strategies --spec WORKLOAD without --cache", args: []string{"bench-strategies", "--spec", wl}, want: 2},
		kase{name: "export RUN not a number", args: []string{"export", "one"}, want: 2},
		kase{name: "report FILE:RUN malformed", args: []string{"report", "x.db:one"}, want: 2},
		tune("tune --devices all on the simulator", good, "--devices", "all"),
		tune("tune --devices not a list", good, "--devices", "0;1"),
		tune("tune --devices a GPU twice", good, "--devices", "2,2"),
		tune("tune --devices with --device", good, "--devices", "0,1", "--device", "1"),
		kase{name: "measure --devices with --device", args: []string{"measure", good, "--backend", "sim", "--devices", "0,1", "--device", "1"}, want: 2},
		kase{name: "probe --iterations 0", args: []string{"probe", "--backend", "sim", "--iterations", "0"}, want: 2},
		kase{name: "probe --sim-device unknown", args: []string{"probe", "--backend", "sim", "--sim-device", "nope"}, want: 2},
		kase{name: "project an unknown device", args: []string{"project", good, "--devices", "nope"}, want: 2},
		kase{name: "project --ptx with --config all", args: []string{"project", good, "--config", "all", "--ptx", "x.ptx"}, want: 2},
		kase{name: "project --ptx missing", args: []string{"project", good, "--ptx", filepath.Join(dir, "none.ptx")}, want: 2},
		kase{name: "project --from malformed", args: []string{"project", good, "--from", "a:b:c"}, want: 2},
		kase{name: "tune --backend model --device 1", args: []string{"tune", good, "--backend", "model", "--device", "1"}, want: 2},
	)
	// The report's output and quantities, against a real run.
	rdb := db()
	if out, err := exec.Command(bin, "tune", good, "--backend", "sim", "--db", rdb, "--max-evals", "3", "--no-progress").CombinedOutput(); err != nil {
		t.Fatalf("tune for the report cases: %v\n%s", err, out)
	}
	cases = append(cases,
		kase{name: "report --pareto of quantities no configuration has", args: []string{"report", "--db", rdb, "--pareto", "time,nope"}, want: 2},
		kase{name: "report -o empty", args: []string{"report", "--db", rdb, "-o", ""}, want: 2},
		kase{name: "report -o a folder", args: []string{"report", "--db", rdb, "-o", dir}, want: 2},
	)

	counts := map[outcome]int{}
	start := time.Now()
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, c.args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(c.stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdout = &bytes.Buffer{}
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		o := judge(code, stderr.String(), c.want)
		counts[o]++
		if o != clean {
			first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			report("%s (gtune %s): %s: exit %d, %q", c.name, strings.Join(c.args, " "), o, code, first)
		}
	}
	t.Logf("%d cases in %v: %d clean, %d crash, %d wrong exit, %d silent", len(cases), time.Since(start).Round(time.Millisecond),
		counts[clean], counts[crash], counts[wrongExit], counts[silent])
	if len(cases) < 150 {
		t.Errorf("%d cases; the battery holds at least 150", len(cases))
	}
}
