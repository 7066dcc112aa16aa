package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/compilecache"
)

// twoKernelWorkload writes a workload of streamcluster and particle
// filter (three block sizes each) and returns its path.
func twoKernelWorkload(t *testing.T, extra string) string {
	t.Helper()
	abs, err := filepath.Abs("../../examples/rodinia")
	if err != nil {
		t.Fatal(err)
	}
	body := "name: two\nkernels:\n" +
		"  - {name: sc, spec: " + abs + "/streamcluster/spec.json, config: {block_size_x: [128, 256, 512]}}\n" +
		"  - {name: pf, spec: " + abs + "/particlefilter/spec.json, config: {block_size_x: [128, 256, 512]}}\n" + extra
	p := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gtune space WORKLOAD: each kernel's space and its occupancy-reduced
// part on the H100 (streamcluster's 44 registers cap it at 62.5 %: 128
// and 256 threads; particle filter reaches 100 % with all three), the
// product of both, and with --orders two orders each.
func TestSpaceWorkload(t *testing.T) {
	w := twoKernelWorkload(t, "")
	code, out, errs := gtune(t, "space", w, "--orders")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"workload " + w + ": 2 kernels; occupancy on h100_sxm, kept at ≥ 80 %",
		"launch orders: 2\n", "combined configurations: 18\n", "after occupancy reduction: 12\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "62.5 %") {
		t.Errorf("streamcluster's best occupancy missing:\n%s", out)
	}
	code, out, _ = gtune(t, "space", w, "--list")
	if code != 0 || !strings.HasPrefix(out, "sc.block_size_x,pf.block_size_x\n128,128\n") || strings.Count(out, "\n") != 10 {
		t.Errorf("--list: exit %d\n%s", code, out)
	}
}

// gtune tune WORKLOAD on the simulated GPU: Algorithm 3 and brute force
// over the launch orders, stored and reported per kernel.
func TestTuneWorkload(t *testing.T) {
	w := twoKernelWorkload(t, "measurement: {iterations: 3}\n")
	db := filepath.Join(t.TempDir(), "w.db")
	code, out, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--strategy", "multi_occupancy_greedy", "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"strategy multi_occupancy_greedy", "sc.block_size_x", "best configuration, time per kernel", "  sc ", "  pf "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = gtune(t, "tune", w, "--backend", "sim", "--db", db, "--strategy", "brute_force", "--orders", "--no-progress")
	if code != 0 {
		t.Fatalf("--orders: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "space: 18 valid configurations") || !strings.Contains(out, "order") {
		t.Errorf("--orders output:\n%s", out)
	}
	// A spec strategy that needs one kernel's resources refuses a workload,
	// and a multi-kernel one refuses a spec.
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--strategy", "occupancy_greedy"); code == 0 || !strings.Contains(errs, "tunes one kernel") {
		t.Errorf("occupancy_greedy on a workload: exit %d, %s", code, errs)
	}
	specPath := writeSpec(t, "", "")
	if code, _, errs := gtune(t, "tune", specPath, "--backend", "sim", "--db", db, "--strategy", "multi_occupancy_greedy"); code == 0 || !strings.Contains(errs, "workload file") {
		t.Errorf("multi_occupancy_greedy on a spec: exit %d, %s", code, errs)
	}
	if code, _, errs := gtune(t, "tune", specPath, "--backend", "sim", "--db", db, "--orders"); code == 0 || !strings.Contains(errs, "--orders takes a workload") {
		t.Errorf("--orders on a spec: exit %d, %s", code, errs)
	}
}

// gtune measure WORKLOAD --order, and a bad order named.
func TestMeasureWorkloadOrder(t *testing.T) {
	w := twoKernelWorkload(t, "")
	db := filepath.Join(t.TempDir(), "w.db")
	code, out, errs := gtune(t, "measure", w, "--backend", "sim", "--db", db, "--order", "pf>sc", "--config", "256,512")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "plan 512@s1|256@s0") || !strings.Contains(out, "launch 0 (particlefilter_likelihood 512, stream 1)") {
		t.Errorf("output:\n%s", out)
	}
	if code, _, errs := gtune(t, "measure", w, "--backend", "sim", "--db", db, "--order", "pf>pf"); code == 0 || !strings.Contains(errs, "listed twice") {
		t.Errorf("bad order: exit %d, %s", code, errs)
	}
}

// A workload's brute force, exported as a Kernel Tuner cache, replayed by
// bench-strategies and by replay over the workload's combined space
// (--spec WORKLOAD): 9 plans, none lacking; the optimum the replay
// reports is the brute force's.
func TestBenchStrategiesWorkload(t *testing.T) {
	w := twoKernelWorkload(t, "measurement: {iterations: 3}\n")
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	code, out, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--no-progress", "--json")
	var doc struct {
		Best struct {
			Objectives map[string]float64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("tune: exit %d: %s", code, errs)
	}
	cachePath := filepath.Join(dir, "two_sim.json")
	if code, _, errs := gtune(t, "export", "--db", db, "--run", "1", "-o", cachePath); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	code, out, errs = gtune(t, "bench-strategies", "--cache", cachePath, "--spec", w, "--strategy", "random_sample", "--budgets", "4,9", "--seeds", "3")
	if code != 0 {
		t.Fatalf("bench-strategies: exit %d: %s", code, errs)
	}
	want := fmt.Sprintf("two_sim: 9 configurations, 0 lacking, 9 valid, optimum %.4g ms", doc.Best.Objectives["time"])
	if !strings.Contains(out, want) || !strings.Contains(out, "random_sample") {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	// gtune replay of the same cache over the workload: all 9 plans, the
	// recorded optimum found.
	code, out, errs = gtune(t, "replay", cachePath, "--spec", w, "--strategy", "random_sample", "--max-evals", "9")
	opt := fmt.Sprintf("%.4g", doc.Best.Objectives["time"])
	if code != 0 || !strings.Contains(out, "9 valid configurations, 9 recorded") || strings.Count(out, opt) < 2 {
		t.Errorf("replay: exit %d: %s\n%s", code, errs, out)
	}
	// Without --spec the cache's spec is looked up by name, and a workload
	// run's cache has none.
	if code, _, errs := gtune(t, "bench-strategies", "--cache", cachePath, "--spec-dir", dir, "--strategy", "random_sample", "--budgets", "4"); code != 2 || !strings.Contains(errs, "no T1 spec for cache") {
		t.Errorf("no --spec: exit %d: %s", code, errs)
	}
}

// gtune tune with the compile cache: a spec's 96 configurations are
// compiled once; the same run again (--fresh: measured anew) compiles
// none; --no-compile-cache compiles them all.
func TestTuneCompileCache(t *testing.T) {
	spec := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "c.db")
	for _, c := range []struct {
		flags            []string
		compiled, reused int
	}{
		// The reference configuration is compiled once, for the
		// reference run, and reused when the run measures it.
		{[]string{"--compile-cache", dir}, 96, 1},
		{[]string{"--compile-cache", dir}, 0, 97},
		{[]string{"--no-compile-cache"}, 96, 1},
	} {
		args := append([]string{"tune", spec, "--backend", "sim", "--db", db, "--fresh", "--no-progress", "--json"}, c.flags...)
		code, out, errs := gtune(t, args...)
		var doc struct {
			Evaluated     int
			Compiled      int
			CompileReused int `json:"compile_reused"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("%v: exit %d: %s", c.flags, code, errs)
		}
		if doc.Evaluated != 96 || doc.Compiled != c.compiled || doc.CompileReused != c.reused {
			t.Errorf("%v: evaluated %d, compiled %d, reused %d; want 96, %d, %d", c.flags, doc.Evaluated, doc.Compiled, doc.CompileReused, c.compiled, c.reused)
		}
	}
}

// A compile cache that cannot lie: an entry altered on disk (another
// configuration's image under this one's checksum), a file holding
// another key's entry, and an entry that passes its check but holds an
// image the GPU cannot use are each removed with a warning naming the
// file, and compiled again; the run's times are those of a clean cache.
func TestTuneCompileCacheIntegrity(t *testing.T) {
	spec := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	tune := func(db string) (map[string]float64, int, int, string) {
		t.Helper()
		code, out, errs := gtune(t, "tune", spec, "--backend", "sim", "--db", db, "--no-progress", "--json", "--compile-cache", dir)
		var doc struct {
			Compiled      int
			CompileReused int `json:"compile_reused"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var shown struct {
			Evaluations []struct {
				Key          string             `json:"key"`
				Observations map[string]float64 `json:"observations"`
			}
		}
		if code, out, e := gtune(t, "show", "1", "--db", db, "--json"); code != 0 || json.Unmarshal([]byte(out), &shown) != nil {
			t.Fatalf("show: exit %d: %s", code, e)
		}
		times := map[string]float64{}
		for _, e := range shown.Evaluations {
			times[e.Key] = e.Observations["time"]
		}
		return times, doc.Compiled, doc.CompileReused, errs
	}
	clean, _, _, _ := tune(filepath.Join(t.TempDir(), "a.db"))
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if len(files) != 96 {
		t.Fatalf("%d cache files, want 96", len(files))
	}
	read := func(p string) map[string]any {
		b, err := os.ReadFile(p)
		var m map[string]any
		if err != nil || json.Unmarshal(b, &m) != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return m
	}
	write := func(p string, m map[string]any) {
		b, _ := json.Marshal(m)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Altered: file 0 gets file 1's image, its own key and checksum.
	a, b := read(files[0]), read(files[1])
	a["binary"].(map[string]any)["image"] = b["binary"].(map[string]any)["image"]
	write(files[0], a)
	// Another key's entry: file 2 holds file 3's contents.
	write(files[2], read(files[3]))
	// A well-formed entry, checksum and all, of an image no GPU can use.
	c, err := compilecache.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	badKey := strings.TrimSuffix(filepath.Base(files[4]), ".json")
	if err := c.Put(badKey, &backend.Binary{Image: []byte("not a kernel image")}); err != nil {
		t.Fatal(err)
	}
	times, compiled, reused, errs := tune(filepath.Join(t.TempDir(), "b.db"))
	// 93 plans' launches and the reference plan's from the cache.
	if compiled != 3 || reused != 94 {
		t.Errorf("compiled %d, reused %d; want 3, 94", compiled, reused)
	}
	for i, why := range map[int]string{0: "its checksum does not match its contents", 2: "it holds the entry of another key", 4: "the GPU could not use its binary (sim: binary is not a gtune-sim/1 image)"} {
		if want := "gtune: warning: compile cache: " + files[i] + ": " + why; !strings.Contains(errs, want) {
			t.Errorf("no warning %q in\n%s", want, errs)
		}
	}
	if len(times) != 96 {
		t.Fatalf("%d evaluations", len(times))
	}
	for k, v := range clean {
		if times[k] != v {
			t.Errorf("configuration %s: %g ms, %g ms with a clean cache", k, times[k], v)
		}
	}
	// Repaired: the next run compiles nothing and warns of nothing.
	if _, compiled, _, errs := tune(filepath.Join(t.TempDir(), "c.db")); compiled != 0 || strings.Contains(errs, "warning") {
		t.Errorf("after the repair: compiled %d, %s", compiled, errs)
	}
	// Over several GPUs the GPU freed by the stale binary's failure takes
	// the next configuration: the stale one is compiled again and waits
	// its turn, measured once.
	badKey = strings.TrimSuffix(filepath.Base(files[5]), ".json")
	if err := c.Put(badKey, &backend.Binary{Image: []byte("not a kernel image")}); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "d.db")
	code, out, errs := gtune(t, "tune", spec, "--backend", "sim", "--db", db, "--no-progress", "--json", "--compile-cache", dir, "--devices", "0,1,2")
	var doc struct {
		Evaluated int
		Compiled  int
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Evaluated != 96 || doc.Compiled != 1 || !strings.Contains(errs, files[5]+": the GPU could not use its binary") {
		t.Errorf("three GPUs with a stale binary: exit %d, %+v: %s", code, doc, errs)
	}
}

// A workload's run is listed under the workload's name, then its
// kernels', as runs and show print it.
func TestWorkloadRunNamed(t *testing.T) {
	w := twoKernelWorkload(t, "")
	db := filepath.Join(t.TempDir(), "w.db")
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--max-evals", "2", "--strategy", "random_sample", "--no-progress"); code != 0 {
		t.Fatalf("tune: %s", errs)
	}
	code, out, errs := gtune(t, "runs", "--db", db, "--json")
	if code != 0 || !strings.Contains(out, `"kernel": "two (streamcluster_cost+particlefilter_likelihood)"`) {
		t.Errorf("runs: exit %d %s\n%s", code, errs, out)
	}
}
