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

// judge classifies one run. want 0: a run that must succeed (a re-run),
// clean when it does.
func judge(code int, stderr string, want int) outcome {
	switch {
	case strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "fatal error:") || code > 2 || code < 0:
		return crash
	case want == 0 && code == 0:
		return clean
	case want == 0:
		return wrongExit
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

	// The command-line round (issue 47): each class a battery of its own
	// cases. Where a run must succeed (a re-run with --confirm or a
	// stricter --repeat), want is 0 and only a crash or a failure is
	// not clean.
	rr := db()
	prep := [][]string{
		{"tune", good, "--backend", "sim", "--db", rr, "--max-evals", "4", "--no-progress"},
	}
	for _, a := range prep {
		if out, err := exec.Command(bin, a...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", a, err, out)
		}
	}
	rerun := func(name string, extra ...string) kase {
		return kase{name: name, args: append([]string{"tune", good, "--backend", "sim", "--db", rr, "--max-evals", "4", "--no-progress"}, extra...), want: 0}
	}
	cases = append(cases,
		rerun("--confirm 2 after a plain run", "--confirm", "2"),
		rerun("--confirm 2 again", "--confirm", "2"),
		rerun("--confirm 3 again with more rounds", "--confirm", "3", "--confirm-rounds", "12"),
		rerun("--repeat 3 after a plain run", "--repeat", "3"),
		rerun("--repeat 5 after --repeat 3", "--repeat", "5"),
		rerun("--confirm 2 over two simulated GPUs", "--confirm", "2", "--devices", "0,1"),
		rerun("--confirm 2 with one configuration", "--confirm", "2", "--max-evals", "1"),
	)
	slurmDry := func(name string, slurmFlags []string, tuneFlags ...string) kase {
		a := append([]string{"slurm", "submit", "--dry-run", "--shards", "2"}, slurmFlags...)
		a = append(append(a, "--", good, "--backend", "sim"), tuneFlags...)
		return kase{name: "slurm submit " + name, args: a, want: 2}
	}
	cases = append(cases,
		slurmDry("--partition with a newline", []string{"--partition", "gpu\necho injected"}),
		slurmDry("--account with a space", []string{"--account", "a b"}),
		slurmDry("--gres with a semicolon", []string{"--gres", "gpu:1;id"}),
		slurmDry("--merge-partition with $()", []string{"--merge-partition", "$(id)"}),
		slurmDry("--time bogus", []string{"--time", "bogus"}),
		slurmDry("--time -1", []string{"--time", "-1"}),
		slurmDry("--results with a newline", []string{"--results", filepath.Join(dir, "r\nx")}),
		slurmDry("--results empty", []string{"--results", ""}),
		slurmDry("--cpus-per-task -2", []string{"--cpus-per-task", "-2"}),
		slurmDry("tune --objective nope", nil, "--objective", "nope"),
		slurmDry("tune --repeat-until NaN", nil, "--repeat-until", "NaN"),
		slurmDry("tune --confirm-rounds without --confirm", nil, "--confirm-rounds", "3"),
		slurmDry("tune --compiler-option garbage", nil, "--compiler-option", "garbage"),
		slurmDry("tune --strategy-param nope=1", nil, "--strategy-param", "nope=1"),
		kase{name: "slurm submit (coordinated) tune --strategy genetic_algorithm --strategy-param popsize=-3", args: []string{"slurm", "submit", "--dry-run", "--", good, "--backend", "sim", "--strategy", "genetic_algorithm", "--strategy-param", "popsize=-3"}, want: 2},
		slurmDry("tune --thermal model --energy=false", nil, "--thermal", "model", "--energy=false"),
	)
	// merge: the output named through a link, an empty or missing shard.
	mout := filepath.Join(dir, "merged.db")
	if out, err := exec.Command(bin, "merge", mout, rr).CombinedOutput(); err != nil {
		t.Fatalf("merge for the merge cases: %v\n%s", err, out)
	}
	os.Symlink(mout, filepath.Join(dir, "merged-link.db"))
	os.Link(mout, filepath.Join(dir, "merged-hard.db"))
	os.WriteFile(filepath.Join(dir, "empty-shard.db"), nil, 0o644)
	cases = append(cases,
		kase{name: "merge a symlink to the output", args: []string{"merge", mout, filepath.Join(dir, "merged-link.db")}, want: 2},
		kase{name: "merge a hard link to the output", args: []string{"merge", mout, rr, filepath.Join(dir, "merged-hard.db")}, want: 2},
		kase{name: "merge an empty shard", args: []string{"merge", db(), filepath.Join(dir, "empty-shard.db")}, want: 2},
		kase{name: "merge a folder", args: []string{"merge", db(), dir}, want: 2},
	)
	// Unbounded inputs and physical ranges.
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, kase{name: "project --ptx /dev/zero", args: []string{"project", good, "--config", "256,1", "--ptx", "/dev/zero"}, want: 2})
	}
	for _, m := range []struct{ name, old, new string }{
		{"Noise 10", `"Noise": 0.01`, `"Noise": 10`},
		{"Noise 1e300", `"Noise": 0.01`, `"Noise": 1e300`},
		{"StragglerFactor 1e300", `"Noise": 0.01`, `"Noise": 0.01, "Stragglers": 0.1, "StragglerFactor": 1e300`},
		{"Stragglers NaN", `"Noise": 0.01`, `"Noise": 0.01, "Stragglers": NaN`},
	} {
		if strings.Contains(string(base), m.old) {
			cases = append(cases, tune("spec: "+m.name, spec(m.old, m.new, nil)))
		}
	}
	cases = append(cases,
		tune("tune --sim-run-wall 1000000h", good, "--sim-run-wall", "1000000h"),
		tune("tune --compile-timeout 1000h", good, "--compile-timeout", "1000h"),
		kase{name: "tune --time-limit 1ns", args: []string{"tune", good, "--backend", "sim", "--db", db(), "--time-limit", "1ns"}, want: 1},
	)
	// restore: a folder, an empty path.
	cases = append(cases,
		kase{name: "restore --journal a folder", args: []string{"restore", "--journal", dir}, want: 2},
		kase{name: "restore --journal empty", args: []string{"restore", "--journal", ""}, want: 2},
	)
	// GPUs of the device database that are not CUDA GPUs, and old ones.
	cases = append(cases,
		kase{name: "check --sim-device hd7970", args: []string{"check", good, "--sim-device", "hd7970"}, want: 2},
		tune("tune --sim-device hd7970", good, "--sim-device", "hd7970"),
		kase{name: "measure --sim-device hd7970", args: []string{"measure", good, "--backend", "sim", "--db", db(), "--sim-device", "hd7970"}, want: 2},
		kase{name: "measure --sim-device c1060", args: []string{"measure", good, "--backend", "sim", "--db", db(), "--sim-device", "c1060"}, want: 2},
		kase{name: "probe --sim-device hd7970", args: []string{"probe", "--backend", "sim", "--db", db(), "--sim-device", "hd7970"}, want: 2},
		kase{name: "tune --backend model --sim-device hd7970", args: []string{"tune", good, "--backend", "model", "--db", db(), "--sim-device", "hd7970"}, want: 2},
	)
	// An explicitly empty value, a GPU given twice.
	for _, a := range [][]string{{"--devices", ""}, {"--shard", ""}, {"--thermal", ""}, {"--strategy", ""}, {"--sim-device", ""}, {"--compile-cache", ""}} {
		cases = append(cases, tune("tune "+a[0]+" empty", good, a...))
	}
	cases = append(cases,
		kase{name: "project --config empty", args: []string{"project", good, "--config", ""}, want: 2},
		kase{name: "project --write-cache empty", args: []string{"project", good, "--write-cache", ""}, want: 2},
		kase{name: "project --devices a GPU twice", args: []string{"project", good, "--devices", "h100_sxm,h100_sxm"}, want: 2},
		tune("tune --device 0 with --devices", good, "--device", "0", "--devices", "0,1"),
		kase{name: "measure --device 0 with --devices", args: []string{"measure", good, "--backend", "sim", "--db", db(), "--device", "0", "--devices", "0,1"}, want: 2},
	)
	// Policies that would be ignored, messages.
	cases = append(cases,
		tune("tune --confirm-rounds without --confirm", good, "--confirm-rounds", "5"),
		tune("tune --thermal model --energy=false", good, "--thermal", "model", "--energy=false"),
		tune("tune --compiler-option garbage", good, "--compiler-option", "garbage"),
		tune("tune --compiler-option empty", good, "--compiler-option", ""),
		kase{name: "project WORKLOAD", args: []string{"project", wl}, want: 2},
		kase{name: "report the same run twice", args: []string{"report", "1", "1", "--db", rdb}, want: 2},
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
