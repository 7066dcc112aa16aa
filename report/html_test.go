package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/store"
)

// The report of a synthetic run: every section, one strip plot per
// parameter of a few values (block_size_x 6, tile 4, unroll 2) and a
// note for one of 40 values (a launch order's many), the date given.
func TestWriteHTMLSections(t *testing.T) {
	r := syntheticRun(120)
	for i, e := range r.Evals {
		e.Params = append(e.Params, store.Param{Name: "order", Value: fmt.Sprintf("o%d", i%40)})
		// A counter that falls as time grows: ρ = +1 with GFLOP/s.
		e.Observations["dram_pct"] = 100 - 5*e.Observations["time"]
		// A record of the measurement that happens to follow time.
		e.Observations["warmup_time"] = e.Observations["time"]
	}
	// What tune --observe ncu records of its pass (as read back from JSON).
	r.Run.Settings = map[string]any{"ncu_profiled": 115.0, "ncu_failed": 0.0, "ncu_seconds": 80.9, "ncu_processes": 2.0,
		"ncu_metrics": []any{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}
	var b strings.Builder
	if err := WriteHTML(&b, []HTMLRun{r}, nil, HTMLOptions{Generated: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range Sections {
		if !strings.Contains(page, `<section id="`+s+`">`) {
			t.Errorf("section %s missing", s)
		}
	}
	params := page[strings.Index(page, `<section id="parameters">`):strings.Index(page, `<section id="correlations">`)]
	if n := len(regexp.MustCompile(`<div class="chart"`).FindAllString(params, -1)); n != 3 {
		t.Errorf("%d parameter charts, want 3", n)
	}
	if !strings.Contains(params, "order: 40 values, too many to set side by side") {
		t.Error("no note for the parameter of 40 values")
	}
	// Outcomes (time, energy, the metrics) are tabled, not ranked: the
	// strongest quantity explaining GFLOP/s is the counter, not time.
	corr := page[strings.Index(page, `<section id="correlations">`):]
	if !strings.Contains(corr, "GFLOP/s against dram_pct (ρ = 1.000)") {
		t.Error("no scatter plot of GFLOP/s against the counter")
	}
	for _, q := range []string{"time", "energy", "power", "GFLOP/s/W"} {
		if strings.Contains(corr, "GFLOP/s against "+q+" (") || strings.Contains(corr, `<td>`+q+`</td><td>explanatory</td>`) {
			t.Errorf("the outcome %s is ranked among what explains GFLOP/s", q)
		}
		if !strings.Contains(corr, `<td>`+q+`</td><td>outcome</td>`) {
			t.Errorf("the table has no outcome row of %s", q)
		}
	}
	if strings.Contains(corr, "GFLOP/s against warmup_time") || !strings.Contains(corr, `<td>warmup_time</td><td>measurement</td>`) {
		t.Error("the measurement record warmup_time is ranked, or not tabled as a measurement record")
	}
	if !strings.Contains(corr, `<td>dram_pct</td><td>explanatory</td>`) {
		t.Error("the table has no explanatory row of the counter")
	}
	// The front's table: its two quantities, then power (time and energy
	// are those two), not time and energy twice.
	if !strings.Contains(page, "<tr><th>configuration</th><th>time</th><th>energy</th><th>power (W)</th></tr>") {
		t.Error("the Pareto front's table head is not configuration, time, energy, power (W)")
	}
	if !strings.Contains(page, "Nsight Compute: 115 configurations (0 failed), 9 metrics, 80.9 s, 0.70 s per configuration, 2 process(es)") {
		t.Error("the facts do not show the profiling pass")
	}
	if !strings.Contains(page, "2026-11-25 12:00 UTC") {
		t.Error("the date given is not printed")
	}
	if err := WriteHTML(&b, nil, nil, HTMLOptions{}); err == nil {
		t.Error("a report of nothing: no error")
	}
}

// The facts state a run's repeat policy and its thermal policy with the
// leakage model, as the run's settings record them.
func TestRepeatAndThermalFacts(t *testing.T) {
	st := map[string]any{"repeat": 30.0, "repeat_until": 0.01, "repeat_aggregate": "the median repeat by time",
		"confirm": "the best 5 by time re-measured", "thermal": "steady+model", "leakage_slope_w_per_c": 1.25, "temperature_ref_c": 60.0, "leakage_prior": false}
	if got, want := repeatFact(st), "each configuration measured until its median time's 95 % interval was within ±1 % (at most 30 times); the median repeat by time. confirm: the best 5 by time re-measured"; got != want {
		t.Errorf("repeat fact\n got %q\nwant %q", got, want)
	}
	if got, want := thermalFact(st), "thermal policy steady+model; energy corrected to 60 °C with a leakage slope of 1.250 W/°C, fitted on the warm-up"; got != want {
		t.Errorf("thermal fact\n got %q\nwant %q", got, want)
	}
	if repeatFact(map[string]any{}) != "" || thermalFact(map[string]any{"repeat": 3.0}) != "" {
		t.Error("facts from settings that hold none")
	}
	if got := thermalFact(map[string]any{"thermal": "steady"}); got != "thermal policy steady" {
		t.Errorf("steady: %q", got)
	}
}
