package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/report"
)

// gtune schedule on the simulated GPU: the four-kernel worked case of
// package schedule's tests is hand-checked there; here the command
// prints the profiles, the order, both kinds of rounds, and, once the
// orders are measured in its database, their ranking.
func TestScheduleWorkload(t *testing.T) {
	w := twoKernelWorkload(t, "")
	db := filepath.Join(t.TempDir(), "w.db")
	code, out, errs := gtune(t, "schedule", w, "--backend", "sim", "--db", db, "--refine", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"instruction mix from model", "symbiotic order: ", "execution rounds (Figure 1):", "rounds of the block scheduler", "--strategy order_search --strategy-param start="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "measured orders") {
		t.Errorf("ranked without measured orders:\n%s", out)
	}
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--orders", "--no-progress"); code != 0 {
		t.Fatalf("tune --orders: %s", errs)
	}
	code, out, errs = gtune(t, "schedule", w, "--backend", "sim", "--db", db, "--refine", "0")
	if code != 0 || !strings.Contains(out, "measured orders (2, time)") || !strings.Contains(out, "percentile") {
		t.Errorf("exit %d, %s\n%s", code, errs, out)
	}
	// By default the order is refined by measurement: order_search from
	// it measures both orders 5 times each into the database (a run of
	// its own), and both orders are ranked by the median of their
	// repeats, the refined one first among the two.
	code, out, errs = gtune(t, "schedule", w, "--backend", "sim", "--db", db)
	for _, want := range []string{"refined by measurement (order_search from the symbiotic order, 5 repeats each", "2 orders measured, run 2)",
		"measured orders (2, time, each order's median of 5 or more repeats)", "the refined order", "percentile 100.0, 0.00 % from the best"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q: %s\n%s", code, want, errs, out)
		}
	}
	code, out, _ = gtune(t, "schedule", w, "--backend", "sim", "--db", db, "--json")
	if code != 0 || !strings.Contains(out, `"u_gpu_b"`) || !strings.Contains(out, `"ranking"`) || !strings.Contains(out, `"refined"`) {
		t.Errorf("--json: exit %d\n%s", code, out)
	}
	if code, _, errs := gtune(t, "schedule", w, "--backend", "sim", "--db", db, "--profile", "nvprof"); code == 0 || !strings.Contains(errs, "--profile") {
		t.Errorf("bad --profile: exit %d, %s", code, errs)
	}
}

// A sample of the 40,320 orders of EpBsEsSw-8 on the simulated GPU: the
// schedule's order (not refined: --refine 0) is ranked once it is
// measured too, with the percentile's 95 % interval over all orders (the
// device script's orders8 and schedule stages).
func TestScheduleSampledOrders(t *testing.T) {
	w := filepath.Join("..", "..", "examples", "concurrent", "workloads", "epbsessw-8.yaml")
	db := filepath.Join(t.TempDir(), "w.db")
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--orders", "--strategy", "random_sample", "--max-evals", "30", "--seed", "1", "--no-progress"); code != 0 {
		t.Fatalf("tune --orders: %s", errs)
	}
	var s report.Schedule
	code, out, errs := gtune(t, "schedule", w, "--refine", "0", "--backend", "sim", "--db", db, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("exit %d, %s\n%s", code, errs, out)
	}
	if s.Ranking != nil {
		t.Skipf("the sample holds the schedule's order %s already", s.OrderName)
	}
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--orders", "--strategy", "order_search", "--strategy-param", "start="+s.OrderName, "--max-evals", "1", "--no-progress"); code != 0 {
		t.Fatalf("measuring the order: %s", errs)
	}
	code, out, errs = gtune(t, "schedule", w, "--refine", "0", "--backend", "sim", "--db", db, "--json")
	s = report.Schedule{}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Ranking == nil || s.Ranking.Sample == nil {
		t.Fatalf("exit %d, %s\n%s", code, errs, out)
	}
	r := s.Ranking
	if r.N != 31 || r.Sample.Orders != 40320 || !(r.Sample.Low <= r.Percentile && r.Percentile <= r.Sample.High) || r.Sample.High-r.Sample.Low < 10 {
		t.Errorf("ranking %+v, sample %+v", r.Ranking, *r.Sample)
	}
	code, out, _ = gtune(t, "schedule", w, "--refine", "0", "--backend", "sim", "--db", db)
	if code != 0 || !strings.Contains(out, "a sample of the 40320: percentile over all of them") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

// Every order measured four times (tune --orders --repeat 4): schedule
// ranks each order by the median (or the fastest) of its repeats and
// gives the percentile's interval from their noise and the split-half
// correlation.
func TestScheduleRepeatedOrders(t *testing.T) {
	w := filepath.Join("..", "..", "examples", "concurrent", "workloads", "epshm-6.yaml")
	db := filepath.Join(t.TempDir(), "w.db")
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--orders", "--repeat", "4", "--no-progress"); code != 0 {
		t.Fatalf("tune --orders --repeat 4: %s", errs)
	}
	for _, stat := range []string{"median", "fastest"} {
		code, out, errs := gtune(t, "schedule", w, "--refine", "0", "--backend", "sim", "--db", db, "--statistic", stat)
		if code != 0 || !strings.Contains(out, "measured orders (720, time, each order's "+stat+" of 4 or more repeats)") ||
			!strings.Contains(out, "percentile from the repeats' noise: ") || !strings.Contains(out, "(the first 2 repeats against the rest): ") {
			t.Errorf("--statistic %s: exit %d, %s\n%s", stat, code, errs, out)
		}
		var s report.Schedule
		code, out, _ = gtune(t, "schedule", w, "--refine", "0", "--backend", "sim", "--db", db, "--statistic", stat, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Ranking == nil || s.Ranking.Repeated == nil {
			t.Fatalf("--json: exit %d\n%s", code, out)
		}
		rp := s.Ranking.Repeated
		if rp.Statistic != stat || rp.Repeats != 4 || rp.SplitHalf == nil || *rp.SplitHalf < -1 || *rp.SplitHalf > 1 ||
			!(rp.Low <= s.Ranking.Percentile && s.Ranking.Percentile <= rp.High) {
			t.Errorf("%s: %+v, percentile %v", stat, *rp, s.Ranking.Percentile)
		}
	}
	if code, _, errs := gtune(t, "schedule", w, "--refine", "0", "--backend", "sim", "--db", db, "--statistic", "mean"); code != 2 || !strings.Contains(errs, `--statistic "mean": median or fastest`) {
		t.Errorf("--statistic mean: exit %d, %s", code, errs)
	}
}

// EpGrid-6 (symbiotic-scheduling-concurrent-kernels.md, Figures 4-5):
// six EP kernels whose thread blocks are identical, each thread 1,024
// floats whatever its grid, so every launch order makes the same rounds
// and order does not matter: on the simulated GPU its 720 orders lie
// within 5 % of each other (the simulator's 1 % noise and the rounding of
// the last wave), where the grid-stride kernel of ep/spec.json spread them
// 1.37×. On an H100 they lie within 0.8 % (BENCHMARKS.md).
func TestEpGridOrderDoesNotMatter(t *testing.T) {
	w := filepath.Join("..", "..", "examples", "concurrent", "workloads", "epgrid-6.yaml")
	db := filepath.Join(t.TempDir(), "w.db")
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--orders", "--strategy", "brute_force", "--no-progress"); code != 0 {
		t.Fatalf("tune --orders: %s", errs)
	}
	code, out, errs := gtune(t, "export", "1", "--db", db)
	if code != 0 {
		t.Fatalf("export: %s", errs)
	}
	var c struct {
		Cache map[string]map[string]any `json:"cache"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	lo, hi, n := math.Inf(1), 0.0, 0
	for _, e := range c.Cache {
		ms, ok := e["time"].(float64)
		if !ok {
			continue
		}
		if n, _ := e["ep12.n"].(float64); n/(12*132*128) != 1024 {
			t.Fatalf("ep12: n = %v, not 1,024 floats a thread", e["ep12.n"])
		}
		lo, hi, n = math.Min(lo, ms), math.Max(hi, ms), n+1
	}
	if n != 720 || hi/lo > 1.05 {
		t.Errorf("%d orders, %.4f to %.4f ms (%.3f×)", n, lo, hi, hi/lo)
	}
}
