package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// TestMetricClasses: a set worked by hand. Performance 1…6, efficiency
// 1, 3, 2, 4, 3, 5: the least-squares line is 0.8 + (11/17.5)·perf, so
// 2, 4 and 6 lie above it and 1, 3 and 5 below. The DRAM throughput 9, 1,
// 8, 2, 7, 3 (mean 5) is above its mean exactly below the diagonal, as
// Figure 9's DRAM row on the K20; the configurations without the metric
// are left out of its row, and a metric no configuration has gives none.
func TestMetricClasses(t *testing.T) {
	const dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
	var valid []*store.Evaluation
	for i, q := range []float64{1, 3, 2, 4, 3, 5} {
		e := ev(string(rune('A'+i)), float64(i+1), q, 1, 1)
		e.Observations[dram] = []float64{9, 1, 8, 2, 7, 3}[i]
		valid = append(valid, e)
	}
	valid = append(valid, ev("G", 7, 6, 1, 1)) // not profiled
	cs := metricClasses(valid, "GFLOP/s", "GFLOP/s/W")
	if len(cs) != 1 {
		t.Fatalf("%d metric rows, want 1 (DRAM): %+v", len(cs), cs)
	}
	c := cs[0]
	if c.Paper != "DRAM_read_throughput" || c.Mean != 5 || c.Above != 3 || c.Of != 6 || c.Upper != 3 || c.UpperBelow != 3 || c.Lower != 3 || c.LowerAbove != 3 {
		t.Fatalf("classes %+v", c)
	}
	if math.Abs(c.a-0.8) > 1e-12 || math.Abs(c.b-11/17.5) > 1e-12 {
		t.Errorf("diagonal %v + %v·perf, want 0.8 + 0.628571·perf", c.a, c.b)
	}
	// Spearman: the metric's ranks against 1…6, and against the
	// efficiency's ranks with its tie (3.5, 3.5).
	if math.Abs(c.RhoPerf+0.2571428571428571) > 1e-12 || math.Abs(c.RhoEff+0.6957252427829381) > 1e-12 {
		t.Errorf("ρ %v with performance, %v with efficiency; want -0.2571, -0.6957", c.RhoPerf, c.RhoEff)
	}
	var buf bytes.Buffer
	writeMetricClasses(&buf, cs, "GFLOP/s", "GFLOP/s/W", "")
	want := "  dram__throughput.avg.pct_of_peak_sustained_elapsed  DRAM_read_throughput  5     3 of 6 (50 %)   3 of 3 (100 %)                      3 of 3 (100 %)                      -0.26           -0.70\n"
	if lines := strings.SplitAfter(buf.String(), "\n"); len(lines) < 3 || lines[2] != want {
		t.Errorf("printed:\n%s\nwant the row:\n%s", buf.String(), want)
	}
	// The HTML section draws three charts for the row.
	s, err := classesSection([]HTMLRun{{Run: &store.Run{ID: 1}, Evals: valid}})
	if err != nil || len(s.Charts) != 3 || len(s.Tables) != 1 || len(s.Tables[0].Rows) != 1 {
		t.Errorf("section: %d charts, %d tables, %v", len(s.Charts), len(s.Tables), err)
	}
	// Configurations that spill registers are set apart in a second
	// table: without A and C (local memory), the DRAM row of B, D, E, F
	// (mean 3.25; perf 2, 4, 5, 6 and efficiency 3, 4, 3, 5).
	valid[0].Observations["local_memory"], valid[2].Observations["local_memory"] = 64, 128
	free, spills := spillFree(valid)
	if spills != 2 || len(free) != 5 {
		t.Fatalf("spill-free: %d configurations, %d spill", len(free), spills)
	}
	fc := metricClasses(free, "GFLOP/s", "GFLOP/s/W")
	if len(fc) != 1 || fc[0].Of != 4 || fc[0].Mean != 3.25 || fc[0].Above != 1 {
		t.Fatalf("spill-free classes %+v", fc)
	}
	s, err = classesSection([]HTMLRun{{Run: &store.Run{ID: 1}, Evals: valid}})
	if err != nil || len(s.Tables) != 2 || !strings.Contains(s.Tables[1].Caption, "of the 5 configurations that do not spill registers (2 do)") {
		t.Errorf("section with spills: %d tables, %v", len(s.Tables), err)
	}
	// Without spills there is no second table.
	delete(valid[0].Observations, "local_memory")
	delete(valid[2].Observations, "local_memory")
	if free, _ := spillFree(valid); free != nil {
		t.Errorf("spill-free subset of a run without spills: %d", len(free))
	}
}
