package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtune/gtune/report"

	"github.com/gtune/gtune/internal/shared"
)

// gtune report -o on two simulated runs of examples/matmul (with energy,
// the second with the SM clock as a GPU setting): one HTML file with
// every section, each chart with its points, no URL anywhere (nothing
// is fetched), and the text report with --text.
func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	spec := filepath.Join("..", "..", "examples", "matmul", "spec.json")
	if code, _, errs := gtune(t, "tune", spec, "--backend", "sim", "--energy", "--db", db, "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("tune: %s", errs)
	}
	if code, _, errs := gtune(t, "tune", spec, "--backend", "sim", "--energy", "--gpu-settings", "g2", "--clock-step", "300", "--allow-gpu-settings",
		"--db", db, "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("tune --gpu-settings: %s", errs)
	}
	out := filepath.Join(dir, "r.html")
	code, _, errs := gtune(t, "report", "1", "2", "--db", db, "-o", out)
	if code != 0 || !strings.Contains(errs, "wrote "+out+" (2 run(s), 0 bench-strategies result(s))") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, s := range report.Sections {
		if !strings.Contains(page, `<section id="`+s+`">`) {
			t.Errorf("section %s missing", s)
		}
	}
	for _, bad := range []string{"http:", "https:", "<script src", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page names %q: it must fetch nothing", bad)
		}
	}
	charts := regexp.MustCompile(`<div class="chart" data-points="(\d+)">`).FindAllStringSubmatch(page, -1)
	if len(charts) < 15 {
		t.Errorf("%d charts, want at least 15 (front, 2 hulls, 8 GPU-setting curves, progress, parameters, correlations)", len(charts))
	}
	for i, c := range charts {
		if n, _ := strconv.Atoi(c[1]); n < 1 {
			t.Errorf("chart %d has no points", i+1)
		}
	}
	for _, want := range []string{"run 2: ridge frequency", "GFLOP/s", "SM clock 1980 MHz (at most 1980 MHz) memory clock 2619 MHz power limit 700 W", "Spearman with GFLOPS/W", "the front, best time first", "the hull&#39;s configurations in hull order"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Any two quantities: the front of GFLOP/s (maximized) × power.
	code, _, errs = gtune(t, "report", "2", "--db", db, "-o", out, "--pareto", "GFLOP/s,power")
	b, _ = os.ReadFile(out)
	if code != 0 || !strings.Contains(string(b), "Pareto front: GFLOP/s × power") || !strings.Contains(string(b), "the front, best GFLOP/s first") {
		t.Errorf("--pareto GFLOP/s,power: exit %d, %s", code, errs)
	}
	if code, _, errs := gtune(t, "report", "2", "--db", db, "-o", out, "--pareto", "time"); code != 2 || !strings.Contains(errs, "--pareto") {
		t.Errorf("--pareto time: exit %d, %s", code, errs)
	}
	code, text, _ := gtune(t, "report", "2", "--db", db, "--text")
	if code != 0 || !strings.Contains(text, "Pareto front, time × energy") {
		t.Errorf("--text: exit %d\n%s", code, text)
	}
	if code, _, errs := gtune(t, "report", "3", "--db", db, "-o", filepath.Join(dir, "x.html")); code != 2 || !strings.Contains(errs, "holds no run 3") {
		t.Errorf("missing run: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); err == nil {
		t.Error("a failed report left a file")
	}
	// Runs of two databases in one report, in the order given: FILE:N
	// names a run of another file (as two GPUs' results would be).
	other := filepath.Join(dir, "other.db")
	if code, _, errs := gtune(t, "tune", spec, "--backend", "sim", "--energy", "--seed", "2", "--db", other, "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("tune into another database: %s", errs)
	}
	code, _, errs = gtune(t, "report", other+":1", "1", "--db", db, "-o", out)
	b, _ = os.ReadFile(out)
	page = string(b)
	if code != 0 || !strings.Contains(errs, "(2 run(s),") {
		t.Fatalf("FILE:N: exit %d, %s", code, errs)
	}
	title := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(page)
	if title == nil || title[1] != "gtune report: other.db run 1 (matmul_kernel on Simulated NVIDIA H100 80GB HBM3), run 1 (matmul_kernel on Simulated NVIDIA H100 80GB HBM3)" {
		t.Errorf("title %q", title)
	}
	if !strings.Contains(page, "other.db run 1: ") {
		t.Error("no hover label names the other database's run")
	}
	if code, _, errs := gtune(t, "report", other+":1", other+":1", "-o", out); code == 0 || !strings.Contains(errs, `two runs are named "other.db run 1"`) {
		t.Errorf("the same run twice: exit %d, %s", code, errs)
	}
	if code, _, errs := gtune(t, "report", filepath.Join(dir, "none.db")+":1", "-o", out); code != 2 || !strings.Contains(errs, "none.db") {
		t.Errorf("a missing database: exit %d, %s", code, errs)
	}
}

// gtune report --bench charts a bench-strategies --json document (the
// golden one of TestGoldenOutputs) without a database: one chart per
// problem and the mean, the scores table.
func TestReportBench(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.html")
	doc := filepath.Join("testdata", "bench-strategies.json")
	code, _, errs := gtune(t, "report", "--bench", doc, "-o", out, "--db", filepath.Join(dir, "absent.db"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(out)
	page := string(b)
	if !strings.Contains(page, `<section id="`+report.BenchSection+`">`) || strings.Contains(page, `<section id="facts">`) {
		t.Errorf("sections wrong:\n%.400s", page)
	}
	if n := strings.Count(page, `<div class="chart" data-points="4">`); n != 2 { // mean and the one problem: 2 strategies × 2 budgets
		t.Errorf("%d charts of 4 points, want 2", n)
	}
	for _, want := range []string{"greedy_ils", "random_sample", "convolution_milo_A100", "0.8075"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	notJSON := filepath.Join(dir, "x.json")
	os.WriteFile(notJSON, []byte(`{"runs": 1}`), 0o644)
	if code, _, errs := gtune(t, "report", "--bench", notJSON, "-o", out); code != 2 || !strings.Contains(errs, "no results") {
		t.Errorf("a document without results: exit %d, %s", code, errs)
	}
}

// The report of Kernel Tuner's measured energy caches (its synthetic
// FP32 kernel on an A100 and an RTX A4000, shared/datasets), replayed
// into one database: the ridge frequency fitted to each GPU's power is
// 1005 MHz on the A100, its energy-optimal clock, and 960 MHz on the
// A4000; both runs share the GPU-settings charts.
func TestReportKernelTunerEnergyCaches(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "k.db")
	for _, f := range []string{"synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json", "synthetic_fp32_cache_NVIDIA_RTX_A4000.json"} {
		p := filepath.Join("..", "..", "..", "shared", "datasets", "kernel_tuner_energy", f)
		shared.Need(t, p)
		if code, _, errs := gtune(t, "replay", p, "--objective", "energy", "--strategy", "brute_force", "--db", db); code != 0 {
			t.Fatalf("replay %s: %s", f, errs)
		}
	}
	out := filepath.Join(dir, "k.html")
	if code, _, errs := gtune(t, "report", "1", "2", "--db", db, "-o", out); code != 0 {
		t.Fatalf("report: %s", errs)
	}
	b, _ := os.ReadFile(out)
	page := string(b)
	for _, want := range []string{"run 1: ridge frequency 1005 MHz (power fit over 10 clocks)", "run 2: ridge frequency 960 MHz (power fit over 10 clocks)", "energy (J) against SM clock (MHz)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// The report of a tuning, not of a process: a run stopped part-way (a
// budget of 30, as an interrupted run leaves it), its resume (the same
// strategy and seed: the 30 reused, the rest measured) and a re-run (all
// reused). For each, tune's best, show's and report's agree, and show
// and report say which evaluations came from which run.
func TestReportOfResumedRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	spec := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	runs := []struct {
		args          []string
		own, reused   int
		showsProvence string
	}{
		{[]string{"--strategy", "random_sample", "--seed", "3", "--max-evals", "30"}, 30, 0, ""},
		{[]string{"--strategy", "random_sample", "--seed", "3"}, 66, 30, "96: 66 measured in this run, reused 30 from run 1"},
		{[]string{"--strategy", "brute_force"}, 0, 96, "96: 0 measured in this run, reused 30 from run 1, 66 from run 2"},
	}
	for i, r := range runs {
		run := strconv.Itoa(i + 1)
		code, out, errs := gtune(t, append([]string{"tune", spec, "--backend", "sim", "--db", db, "--no-progress", "--json"}, r.args...)...)
		if code != 0 {
			t.Fatalf("run %s: exit %d: %s", run, code, errs)
		}
		var tuned struct {
			Best struct {
				Key string `json:"key"`
			} `json:"best"`
			Evaluated int `json:"evaluated"`
			Reused    int `json:"reused"`
		}
		if err := json.Unmarshal([]byte(out), &tuned); err != nil {
			t.Fatal(err)
		}
		if tuned.Evaluated != r.own || tuned.Reused != r.reused {
			t.Fatalf("run %s: tune evaluated %d, reused %d; want %d, %d", run, tuned.Evaluated, tuned.Reused, r.own, r.reused)
		}
		code, out, errs = gtune(t, "show", run, "--db", db, "--json")
		if code != 0 {
			t.Fatalf("show %s: %s", run, errs)
		}
		var shown struct {
			Evaluations []struct {
				Key        string   `json:"key"`
				Objective  *float64 `json:"objective"`
				MeasuredIn int64    `json:"measured_in_run"`
			} `json:"evaluations"`
		}
		if err := json.Unmarshal([]byte(out), &shown); err != nil {
			t.Fatal(err)
		}
		best, bestV, fromOthers := "", 0.0, 0
		for _, e := range shown.Evaluations {
			if e.Objective != nil && (best == "" || *e.Objective < bestV) {
				best, bestV = e.Key, *e.Objective
			}
			if e.MeasuredIn != 0 {
				fromOthers++
			}
		}
		if len(shown.Evaluations) != r.own+r.reused || fromOthers != r.reused || best != tuned.Best.Key {
			t.Errorf("run %s: show has %d evaluations (%d from other runs), best %s; tune: %d + %d, best %s",
				run, len(shown.Evaluations), fromOthers, best, r.own, r.reused, tuned.Best.Key)
		}
		code, text, errs := gtune(t, "report", run, "--db", db, "--text")
		if code != 0 {
			t.Fatalf("report %s: %s", run, errs)
		}
		if m := regexp.MustCompile(`(?m)^  time +(\S+) `).FindStringSubmatch(text); m == nil || m[1] != tuned.Best.Key {
			t.Errorf("run %s: report's best by time %v, tune's %s\n%s", run, m, tuned.Best.Key, text)
		}
		if r.showsProvence != "" {
			if !strings.Contains(text, "of which "+strings.SplitN(r.showsProvence, ": ", 2)[1]) {
				t.Errorf("run %s: the text report does not say %q\n%s", run, r.showsProvence, text)
			}
			html := filepath.Join(dir, run+".html")
			if code, _, errs := gtune(t, "report", run, "--db", db, "-o", html); code != 0 {
				t.Fatalf("report -o: %s", errs)
			}
			b, _ := os.ReadFile(html)
			if !strings.Contains(string(b), r.showsProvence) {
				t.Errorf("run %s: the HTML facts do not say %q", run, r.showsProvence)
			}
		}
	}
}
