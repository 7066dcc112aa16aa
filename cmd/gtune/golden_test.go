package main

import (
	"bytes"
	"flag"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gtune/gtune/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// Values that differ from run to run: times of day, durations, and the
// test's temporary folder.
var (
	stampRE    = regexp.MustCompile(`"(started|ended|timestamp)": "[^"]*"`)
	durationRE = regexp.MustCompile(`"([a-z_]*_s)": [0-9.e+-]+`)
	ageRE      = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	elapsedRE  = regexp.MustCompile(`(?m)\b\d+(\.\d+)?(ms|µs|s)\b|\b\d+\.\d+ s$`)
	// The look-ahead follows the machine's CPU count; why NVRTC cannot
	// be used (check, on CI) depends on what the process tried first.
	lookaheadRE = regexp.MustCompile(`"lookahead": \d+`)
	nvrtcRE     = regexp.MustCompile(`compilation: cuda: libnvrtc[^"\n]*`)
	// The tuner's own time per configuration is measured, not modelled;
	// which plan a kernel shared by several plans is compiled for (and
	// charged to) depends on the compile pool's scheduling.
	frameworkRE = regexp.MustCompile(`"(framework_time|framework_ms|compile_time)": [0-9.e+-]+`)
)

// normalized replaces what varies between runs with placeholders.
func normalized(out, tmp string) []byte {
	s := bytes.ReplaceAll([]byte(out), []byte(tmp), []byte("$TMP"))
	s = stampRE.ReplaceAll(s, []byte(`"$1": "TIME"`))
	s = durationRE.ReplaceAll(s, []byte(`"$1": 0`))
	s = ageRE.ReplaceAll(s, []byte("TIME"))
	s = lookaheadRE.ReplaceAll(s, []byte(`"lookahead": 0`))
	s = nvrtcRE.ReplaceAll(s, []byte(`compilation: no NVRTC here`))
	s = frameworkRE.ReplaceAll(s, []byte(`"$1": 0`))
	return elapsedRE.ReplaceAll(s, []byte("DURATION"))
}

// goldenFile compares got with testdata/name, or rewrites it with -update.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got, *update, "go test ./cmd/gtune -run Golden -update")
}

// The vocabulary of the commands' output, pinned: the same device object,
// run ids under "run", durations in seconds named _s, in every document
// (README, "Flags mean the same in every command").
func TestCommandOutputGolden(t *testing.T) {
	tmp := t.TempDir()
	spec := writeSpec(t, "", "")
	// The spec's folder is a temporary one of its own.
	specDir := filepath.Dir(spec)
	db := filepath.Join(tmp, "r.db")
	if code, _, errs := gtune(t, "tune", spec, "--backend", "sim", "--db", db, "--max-evals", "3", "--strategy", "random_sample", "--seed", "2", "--no-compile-cache"); code != 0 {
		t.Fatalf("tune: %s", errs)
	}
	work := twoKernelWorkload(t, "")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"runs.json", []string{"runs", "--db", db, "--json"}},
		{"runs.txt", []string{"runs", "--db", db}},
		{"report.txt", []string{"report", "1", "--db", db, "--text"}},
		{"show.json", []string{"show", "1", "--db", db, "--json"}},
		{"check.json", []string{"check", spec, "--json"}},
		{"occupancy.json", []string{"occupancy", "--sim-device", "h100_sxm", "--block-size", "256", "--registers", "40", "--shared-memory", "16384", "--json"}},
		{"space.json", []string{"space", spec, "--json"}},
		{"space-beast.json", []string{"space", "--beast", "dgemm", "--sim-device", "k20c", "--json"}},
		{"measure.json", []string{"measure", spec, "--backend", "sim", "--db", db, "--config", "64,2", "--json"}},
		{"export.json", []string{"export", "--db", db, "--run", "1", "--format", "kerneltuner"}},
		{"schedule.json", []string{"schedule", work, "--backend", "sim", "--db", filepath.Join(tmp, "w.db"), "--json"}},
		{"devices.json", []string{"devices", "--json"}},
		{"sensor-check.json", []string{"sensor-check", "--backend", "sim", "--json"}},
		{"show.txt", []string{"show", "1", "--db", db}},
		{"check.txt", []string{"check", spec}},
		{"occupancy.txt", []string{"occupancy", "--sim-device", "h100_sxm", "--block-size", "256", "--registers", "40", "--shared-memory", "16384"}},
		{"space.txt", []string{"space", spec}},
		{"measure.txt", []string{"measure", spec, "--backend", "sim", "--db", db, "--config", "64,2", "--no-compile-cache"}},
		{"schedule.txt", []string{"schedule", work, "--backend", "sim", "--db", filepath.Join(tmp, "w.db")}},
		{"devices.txt", []string{"devices"}},
		{"sensor-check.txt", []string{"sensor-check", "--backend", "sim"}},
		{"space-workload.txt", []string{"space", work}},
		{"space-workload.json", []string{"space", work, "--json"}},
		{"tune-workload.json", []string{"tune", work, "--backend", "sim", "--db", filepath.Join(tmp, "tw.db"), "--max-evals", "3", "--strategy", "random_sample", "--json", "--no-compile-cache"}},
	} {
		code, out, errs := gtune(t, c.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errs)
		}
		out = string(normalized(string(normalized(out, specDir)), tmp))
		out = string(normalized(out, filepath.Dir(work)))
		// The repository's own folder, where the workload's specs are.
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		goldenFile(t, c.name, bytes.ReplaceAll([]byte(out), []byte(root), []byte("$REPO")))
	}
}

// The replay and strategy-comparison documents over a recorded cache of
// the shared datasets (skipped without them).
func TestReplayOutputGolden(t *testing.T) {
	c := hubFile(t, "convolution_milo_A100.json.gz")
	spec := hubFile(t, filepath.Join("specs", "convolution_milo.T1.json"))
	shared := filepath.Dir(c)
	tmp := t.TempDir()
	for _, k := range []struct {
		name string
		args []string
	}{
		{"replay.json", []string{"replay", c, "--spec", spec, "--strategy", "random_sample", "--max-evals", "20", "--repeats", "2", "--json"}},
		{"replay.txt", []string{"replay", c, "--spec", spec, "--strategy", "random_sample", "--max-evals", "20", "--repeats", "2"}},
		{"bench-strategies.txt", []string{"bench-strategies", "--cache", c, "--strategy", "random_sample", "--strategy", "greedy_ils", "--budgets", "10,40", "--seeds", "3", "--workers", "1"}},
		{"import.json", []string{"import", c, "--spec", spec, "--db", filepath.Join(tmp, "i.db"), "--json"}},
		{"bench-strategies.json", []string{"bench-strategies", "--cache", c, "--strategy", "random_sample", "--strategy", "greedy_ils", "--budgets", "10,40", "--seeds", "3", "--workers", "1", "--json"}},
	} {
		code, out, errs := gtune(t, k.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", k.name, code, errs)
		}
		goldenFile(t, k.name, normalized(string(normalized(out, shared)), tmp))
	}
}
