package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/store"
)

// A report of a small synthetic run passes the browser check, and a page
// with a console error and a chart without points fails it. Needs
// Chromium (Debian: apt-get install chromium); skipped without it.
func TestCheckInChromium(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil && os.Getenv("CHROMIUM") == "" {
		t.Skip("no chromium on PATH (apt-get install chromium, or set CHROMIUM): the browser check is not run")
	}
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	run := &store.Run{ID: 1, Kernel: "k", Objective: "time", Strategy: "brute_force", DeviceName: "Simulated GPU", Backend: "sim",
		StartedAt: start, EndedAt: start.Add(9 * time.Second), Status: "done"}
	var evals []*store.Evaluation
	for i := range 9 {
		bs, tile := 32<<(i%3), 1+i/3
		t, e := 1+float64((i*7)%9)/3, 3-float64((i*5)%9)/4
		obj := t
		evals = append(evals, &store.Evaluation{Key: "k" + string(rune('a'+i)), Status: "valid", Objective: &obj,
			Params:       []store.Param{{Name: "block_size_x", Value: float64(bs)}, {Name: "tile", Value: float64(tile)}},
			Observations: map[string]float64{"time": t, "energy": e, "power": e / t * 1000},
			Metrics:      map[string]float64{"GFLOP/s": 100 / t, "GFLOP/s/W": 100 / e},
			FinishedAt:   start.Add(time.Duration(i+1) * time.Second)})
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(f, []report.HTMLRun{{Run: run, Evals: evals}}, nil, report.HTMLOptions{Generated: start}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	problems, err := check(page, filepath.Join(dir, "shots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("a good report fails: %v", problems)
	}
	shots, _ := filepath.Glob(filepath.Join(dir, "shots", "*.png"))
	if len(shots) != len(report.Sections) {
		t.Errorf("%d screenshots, want one per section (%d)", len(shots), len(report.Sections))
	}
	bad := filepath.Join(dir, "bad.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><section id="facts"><div class="chart" data-points="3"><svg class="plot"></svg><svg class="hover"></svg></div></section><script>console.error("broken")</script></body></html>`), 0o644)
	problems, err = check(bad, filepath.Join(dir, "badshots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) < 3 { // missing sections, the empty chart, the console error
		t.Errorf("a broken page passes: %v", problems)
	}
}
