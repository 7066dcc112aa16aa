package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oneLine asserts a bad-input exit: status 2, one line on stderr holding
// want, and no results database created.
func oneLine(t *testing.T, name string, code int, errs, want, db string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 2 || len(lines) != 1 || !strings.Contains(errs, want) {
		t.Errorf("%s: exit %d, stderr %q, want exit 2 with one line holding %q", name, code, errs, want)
	}
	if db != "" {
		if _, err := os.Stat(db); err == nil {
			t.Errorf("%s: the results database was created before the input was checked", name)
		}
	}
}

func TestEnergyOffWithEnergyObjective(t *testing.T) {
	specPath := writeSpec(t, "", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--energy=false", "--objective", "energy"}, "--energy=false, but the objective energy needs energy measurements"},
		{[]string{"--energy=false", "--objective", "edp"}, "--energy=false, but the objective edp needs energy measurements"},
		// GB/s/W reads power.
		{[]string{"--energy=false", "--objective", "GB/s/W"}, "--energy=false, but the objective GB/s/W needs energy measurements"},
	} {
		db := filepath.Join(t.TempDir(), "r.db")
		code, _, errs := gtune(t, append([]string{"tune", specPath, "--backend", "sim", "--db", db}, c.args...)...)
		oneLine(t, strings.Join(c.args, " "), code, errs, c.want, db)
	}
	// The spec's own switch, too.
	off := writeSpec(t, `"Measurement": {`, `"Measurement": {"Energy": false, `)
	db := filepath.Join(t.TempDir(), "r.db")
	code, _, errs := gtune(t, "tune", off, "--backend", "sim", "--db", db, "--objective", "power")
	oneLine(t, "Gtune.Measurement.Energy false", code, errs, "Gtune.Measurement.Energy is false, but the objective power needs energy measurements", db)
	// Time needs none.
	if code, _, errs := gtune(t, "tune", specPath, "--backend", "sim", "--db", db, "--energy=false", "--max-evals", "2"); code != 0 {
		t.Errorf("time with --energy=false: exit %d: %s", code, errs)
	}
}

// An expression that fails for some configuration stops the run before
// any GPU work, naming the field and the configuration.
func TestConfigurationExpressionErrorsBeforeGPUWork(t *testing.T) {
	for _, c := range []struct {
		old, new, want string
	}{
		{`"Flops": "n"`, `"Flops": "n // abs(block_size_x - 64)"`,
			`Gtune.Simulation.Flops: for configuration {block_size_x=64, work_per_thread=1}: "n // abs(block_size_x - 64)": ZeroDivisionError`},
		{`"GridDivX": ["block_size_x", "work_per_thread"]`, `"GridDivX": ["block_size_x", "work_per_thread - 1"]`,
			`KernelSpecification.GridDivX: for configuration {block_size_x=32, work_per_thread=1}: the divisor is 0; it must be positive`},
		{`"LocalSize": {"X": "block_size_x"`, `"LocalSize": {"X": "block_size_x + 0 // (1024 - block_size_x)"`,
			`KernelSpecification.LocalSize.X: for configuration {block_size_x=1024, work_per_thread=1}: "block_size_x + 0 // (1024 - block_size_x)": ZeroDivisionError`},
	} {
		p := writeSpec(t, c.old, c.new)
		db := filepath.Join(t.TempDir(), "r.db")
		code, _, errs := gtune(t, "tune", p, "--backend", "sim", "--db", db)
		oneLine(t, c.new, code, errs, c.want, db)
	}
}

// hugeSpec writes a spec of nine parameters of ten values each (10^9 raw
// configurations) with the given conditions.
func hugeSpec(t *testing.T, conditions string) string {
	t.Helper()
	var params []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		params = append(params, `{"Name": "`+n+`", "Type": "int", "Values": "list(range(1, 11))"}`)
	}
	spec := `{"ConfigurationSpace": {"TuningParameters": [` + strings.Join(params, ", ") + `], "Conditions": [` + conditions + `]},
  "KernelSpecification": {"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu", "LocalSize": {"X": "32"}, "GlobalSize": {"X": "1"},
    "Arguments": [{"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1}]}}`
	dir := t.TempDir()
	p := filepath.Join(dir, "huge.json")
	os.WriteFile(p, []byte(spec), 0o644)
	os.WriteFile(filepath.Join(dir, "k.cu"), []byte("__global__ void k(int n) {}\n"), 0o644)
	return p
}

// A space too large for memory is refused up front, in one line, instead
// of being built until the OOM killer ends gtune.
func TestHugeSpaceRefused(t *testing.T) {
	p := hugeSpec(t, "")
	for _, cmd := range [][]string{{"space", p}, {"tune", p, "--backend", "sim"}} {
		start := time.Now()
		code, _, errs := gtune(t, cmd...)
		oneLine(t, cmd[0], code, errs, "search space too large: 1,000,000,000 raw configurations, of which at least 1,000,000,000 are valid, more than the limit of 16,777,216", "")
		if !strings.Contains(errs, "--max-configurations") {
			t.Errorf("%s: the message does not say how to raise the limit: %s", cmd[0], errs)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: refused after %v", cmd[0], d)
		}
	}
}
