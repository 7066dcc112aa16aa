package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/store"

	"github.com/gtune/gtune/internal/shared"
)

// hubFile is a benchmark_hub file of the shared datasets beside the
// repository (../shared: present in CI); the test skips without it.
func hubFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "datasets", "benchmark_hub", name)
	shared.Need(t, p)
	return p
}

// hubSpec is a T1 spec of the benchmark_hub datasets (specs/NAME.T1.json);
// the test skips, naming the path, where it is absent.
func hubSpec(t *testing.T, file string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "datasets", "benchmark_hub", "specs", file)
	shared.Need(t, p)
	return p
}

type replayDoc struct {
	Space    int `json:"space"`
	Recorded int `json:"recorded"`
	Repeats  []struct {
		Seed      uint64   `json:"seed"`
		Evaluated int      `json:"evaluated"`
		Invalid   int      `json:"invalid"`
		ChargedS  float64  `json:"charged_s"`
		BestKey   string   `json:"best_key"`
		Best      *float64 `json:"best"`
	} `json:"repeats"`
	Mean struct {
		Best      float64 `json:"best"`
		Evaluated float64 `json:"evaluated"`
		ChargedS  float64 `json:"charged_s"`
	} `json:"mean"`
	Optimum struct {
		Key   string  `json:"key"`
		Value float64 `json:"value"`
	} `json:"optimum"`
	Device map[string]any `json:"device"`
}

func replayJSON(t *testing.T, args ...string) replayDoc {
	t.Helper()
	code, out, errs := gtune(t, append([]string{"replay", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("replay %v: exit %d: %s", args, code, errs)
	}
	var doc replayDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return doc
}

// Brute force over the A100 convolution cache with the benchmark_hub spec
// finds the recorded optimum and charges every recorded compile,
// verification and benchmark time (12,190,447.93 ms, summed in Python).
func TestReplayBruteForce(t *testing.T) {
	c := hubFile(t, "convolution_milo_A100.json.gz")
	doc := replayJSON(t, c, "--spec", hubSpec(t, "convolution_milo.T1.json"), "--strategy", "brute_force")
	if doc.Space != 4362 || doc.Recorded != 4362 || len(doc.Repeats) != 1 || doc.Device["backend"] != "replay" {
		t.Fatalf("doc %+v", doc)
	}
	r := doc.Repeats[0]
	if r.Evaluated != 4362 || r.Invalid != 161 || r.BestKey != "32,4,1,3,1,0,1,1,15,15" || math.Abs(*r.Best-0.5536000076681376) > 1e-15 {
		t.Errorf("repeat %+v", r)
	}
	if math.Abs(r.ChargedS-12190.447934668744) > 1e-6 {
		t.Errorf("charged %.9f s, want 12190.447934669", r.ChargedS)
	}
	if doc.Optimum.Key != "32,4,1,3,1,0,1,1,15,15" || doc.Optimum.Value != 0.5536000076681376 {
		t.Errorf("optimum %+v", doc.Optimum)
	}
}

// Repeats use seeds seed..seed+R-1, respect --max-evals, and repeat
// exactly; without --spec the space is the recorded configurations.
func TestReplayRepeats(t *testing.T) {
	c := hubFile(t, "convolution_milo_A100.json.gz")
	args := []string{c, "--strategy", "random_sample", "--max-evals", "40", "--repeats", "3", "--seed", "7"}
	doc := replayJSON(t, args...)
	if doc.Space != 4362 || doc.Recorded != 4362 || len(doc.Repeats) != 3 {
		t.Fatalf("doc %+v", doc)
	}
	sum := 0.0
	for i, r := range doc.Repeats {
		if r.Seed != uint64(7+i) || r.Evaluated != 40 || r.Best == nil || *r.Best < 0.5536000076681376 {
			t.Errorf("repeat %d: %+v", i, r)
		}
		sum += *r.Best
	}
	if math.Abs(doc.Mean.Best-sum/3) > 1e-12 || doc.Mean.Evaluated != 40 {
		t.Errorf("mean %+v, want best %v", doc.Mean, sum/3)
	}
	again := replayJSON(t, args...)
	for i := range doc.Repeats {
		if again.Repeats[i].BestKey != doc.Repeats[i].BestKey || again.Repeats[i].ChargedS != doc.Repeats[i].ChargedS {
			t.Errorf("repeat %d differs on a second run: %+v vs %+v", i, again.Repeats[i], doc.Repeats[i])
		}
	}
	if doc.Repeats[0].BestKey == doc.Repeats[1].BestKey && doc.Repeats[1].BestKey == doc.Repeats[2].BestKey {
		t.Errorf("three seeds found the same best %s", doc.Repeats[0].BestKey)
	}
}

// --time-limit is charged with recorded times: brute force stops after the
// configuration whose recorded time reaches the limit.
func TestReplayTimeLimit(t *testing.T) {
	path := hubFile(t, "convolution_milo_A100.json.gz")
	doc := replayJSON(t, path, "--spec", hubSpec(t, "convolution_milo.T1.json"), "--strategy", "brute_force", "--time-limit", "1h")
	c, err := cache.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Brute force evaluates in Kernel Tuner's enumeration order, which is
	// the cache's Keys order for this spec's space.
	charged, n := 0.0, 0
	for _, k := range c.Keys() {
		if charged >= 3600e3 {
			break
		}
		e := c.Entries[k]
		charged += e.CompileMs + e.VerificationMs + e.BenchmarkMs
		n++
	}
	r := doc.Repeats[0]
	if r.Evaluated != n || math.Abs(r.ChargedS-charged/1000) > 1e-9 || r.ChargedS < 3600 {
		t.Errorf("evaluated %d, charged %.6f s; want %d, %.6f s", r.Evaluated, r.ChargedS, n, charged/1000)
	}
}

func TestReplayExitCodes(t *testing.T) {
	conv := hubFile(t, "convolution_milo_A100.json.gz")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", filepath.Join(dir, "absent.json.gz")}, 2, "absent.json.gz"},
		{[]string{"replay", conv, "--strategy", "telepathy"}, 2, `unknown strategy "telepathy"`},
		{[]string{"replay", conv, "--repeats", "0"}, 2, "--repeats"},
		{[]string{"replay", conv, "--spec", hubSpec(t, "dedispersion_milo.T1.json")}, 2, `no tunable parameter "block_size_z"`},
		{[]string{"replay", conv, "--spec", filepath.Join(dir, "absent.T1.json")}, 2, "absent.T1.json"},
		{[]string{"replay"}, 2, "accepts 1 arg"},
	} {
		code, _, errs := gtune(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}

	// A cache still being written lacks configurations the spec allows:
	// replaying it is a runtime failure naming the configuration.
	f, err := os.Open(conv)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(b, []byte("\n\"64,1,1,1,0,0,0,1,15,15\""))
	if cut < 0 {
		t.Fatal("entry 64,1,1,1,0,0,0,1,15,15 not found")
	}
	partial := filepath.Join(dir, "partial.json")
	if err := os.WriteFile(partial, b[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := gtune(t, "replay", partial, "--spec", hubSpec(t, "convolution_milo.T1.json"), "--strategy", "brute_force")
	if code != 1 || !strings.Contains(errs, "64,1,1,1,0,0,0,1,15,15") || !strings.Contains(errs, "not in the cache") {
		t.Errorf("replay of a partial cache: exit %d, %s", code, errs)
	}
	// Without --spec the same partial cache replays what it has.
	doc := replayJSON(t, partial, "--strategy", "brute_force")
	if doc.Space != doc.Recorded || doc.Space >= 4362 || doc.Repeats[0].Evaluated != doc.Space {
		t.Errorf("partial cache without spec: %+v", doc)
	}
}

// Import then export gives back the file: same keys, times and error
// markers, for the Kernel Tuner cache and for the T4 file.
func TestImportExportRoundTrip(t *testing.T) {
	for _, c := range []struct{ file, format string }{
		{"convolution_milo_A100.json.gz", "kerneltuner"},
		{"convolution_milo_A100_T4.json.gz", "t4"},
	} {
		path := hubFile(t, c.file)
		orig, err := cache.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(t.TempDir(), "r.db")
		code, out, errs := gtune(t, "import", path, "--spec", hubSpec(t, "convolution_milo.T1.json"), "--db", db, "--json")
		if code != 0 {
			t.Fatalf("import: exit %d: %s", code, errs)
		}
		var imp struct {
			Run      int64          `json:"run"`
			Imported int            `json:"imported"`
			Statuses map[string]int `json:"statuses"`
		}
		if err := json.Unmarshal([]byte(out), &imp); err != nil {
			t.Fatal(err)
		}
		if imp.Imported != 4362 || imp.Statuses["valid"] != 4201 || imp.Statuses["runtime_failed"] != 155 || imp.Statuses["compile_failed"] != 6 {
			t.Fatalf("import: %s", out)
		}
		exported := filepath.Join(t.TempDir(), "out.json")
		code, _, errs = gtune(t, "export", "--db", db, "--run", "1", "--format", c.format, "-o", exported)
		if code != 0 {
			t.Fatalf("export: exit %d: %s", code, errs)
		}
		back, err := cache.Load(exported)
		if err != nil {
			t.Fatal(err)
		}
		if back.Format != c.format || len(back.Entries) != len(orig.Entries) || back.DeviceName != orig.DeviceName ||
			strings.Join(back.ParamNames, ",") != strings.Join(orig.ParamNames, ",") {
			t.Fatalf("%s: exported %s with %d entries, device %q", c.file, back.Format, len(back.Entries), back.DeviceName)
		}
		for k, a := range orig.Entries {
			b := back.Entries[k]
			if b == nil {
				t.Fatalf("%s: %s not exported", c.file, k)
			}
			if a.Error != b.Error || a.Status != b.Status || !(a.Time == b.Time || math.IsNaN(a.Time) && math.IsNaN(b.Time)) ||
				len(a.Times) != len(b.Times) || a.CompileMs != b.CompileMs || a.FrameworkMs != b.FrameworkMs ||
				a.VerificationMs != b.VerificationMs || a.StrategyMs != b.StrategyMs || a.Timestamp != b.Timestamp ||
				!(a.BenchmarkMs == b.BenchmarkMs || math.IsNaN(a.BenchmarkMs) && math.IsNaN(b.BenchmarkMs)) ||
				len(a.Extra) != len(b.Extra) || a.Extra["GFLOP/s"] != b.Extra["GFLOP/s"] {
				t.Fatalf("%s: entry %s differs:\n%+v\n%+v", c.file, k, a, b)
			}
			for i := range a.Times {
				if a.Times[i] != b.Times[i] {
					t.Fatalf("%s: entry %s time %d: %v vs %v", c.file, k, i, a.Times[i], b.Times[i])
				}
			}
		}
	}
}

func TestImportExportErrors(t *testing.T) {
	conv := hubFile(t, "convolution_milo_A100.json.gz")
	db := filepath.Join(t.TempDir(), "r.db")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", conv, "--db", db}, 2, "--spec is required"},
		{[]string{"import", conv, "--db", db, "--spec", hubSpec(t, "dedispersion_milo.T1.json")}, 2, `"block_size_z"`},
		{[]string{"export", "--db", filepath.Join(t.TempDir(), "absent.db"), "--run", "1"}, 2, "absent.db"},
		{[]string{"export", "--db", db, "--run", "1", "--format", "csv"}, 2, `unknown format "csv"`},
	} {
		code, _, errs := gtune(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
	if code, _, errs := gtune(t, "import", conv, "--db", db, "--spec", hubSpec(t, "convolution_milo.T1.json")); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	if code, _, errs := gtune(t, "export", "--db", db, "--run", "2"); code != 2 || !strings.Contains(errs, "no run 2") {
		t.Errorf("export of an unknown run: exit %d, %s", code, errs)
	}
}

// A replay kept with --db stores every evaluation of every repeat (in
// batches: 600 is two full batches of 256 and a partial one), each with a
// non-negative framework_ms (the tuner's own wall time, not recorded
// benchmark time subtracted from it), and its Kernel Tuner export writes
// non-negative framework_time.
func TestReplayDBFrameworkTime(t *testing.T) {
	c := hubFile(t, "convolution_milo_A100.json.gz")
	path := filepath.Join(t.TempDir(), "replay.db")
	doc := replayJSON(t, c, "--spec", hubSpec(t, "convolution_milo.T1.json"), "--strategy", "random_sample",
		"--max-evals", "600", "--repeats", "2", "--db", path)
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	for i, r := range runs {
		es, err := db.Evaluations(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 600 || doc.Repeats[i].Evaluated != 600 || r.Status != store.RunDone || r.Backend != "replay" {
			t.Fatalf("run %d: %d evaluations stored, %d reported, status %s", r.ID, len(es), doc.Repeats[i].Evaluated, r.Status)
		}
		for _, e := range es {
			if !(e.FrameworkMs >= 0) {
				t.Fatalf("run %d: %s has framework_ms %v", r.ID, e.Key, e.FrameworkMs)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "export.json")
	code, _, errs := gtune(t, "export", "--db", path, "--run", "2", "--format", "kerneltuner", "-o", out)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	back, err := cache.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Entries) != 600 {
		t.Fatalf("exported %d entries, want 600", len(back.Entries))
	}
	for k, e := range back.Entries {
		if !(e.FrameworkMs >= 0) {
			t.Fatalf("exported %s has framework_time %v", k, e.FrameworkMs)
		}
	}
}
