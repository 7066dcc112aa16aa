package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"github.com/gtune/gtune/store"
)

// Figure 9 of autotuning-gemm-energy-beast.md classifies every kernel of
// the sweep as above or below the sweep's mean of one profiler metric at
// a time, and reads the classes against performance, efficiency and the
// efficiency/performance diagonal: on the K20, every kernel below the
// diagonal had a DRAM throughput above the mean, and almost every kernel
// above it an L2 throughput below the mean (section 3.6).

// figure9 are Figure 9's metrics, in its rows' order, by the names Nsight
// Compute gives them (ncupass.DefaultMetrics: gtune tune --observe ncu)
// with the paper's (nvprof's) names. ncu's DRAM, L2 and L1/texture
// throughputs count loads and stores, the paper's reads only.
var figure9 = []struct{ ncu, paper string }{
	{"sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy"},
	{"sm__inst_executed.avg.per_cycle_active", "executed_instructions_per_cycle"},
	{"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM_read_throughput"},
	{"lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2_read_throughput"},
	{"l1tex__throughput.avg.pct_of_peak_sustained_active", "texture_memory_read_throughput"},
}

// metricClass is one row of Figure 9 over a run's valid configurations
// that hold the metric and both hull metrics.
type metricClass struct {
	Metric, Paper string
	Mean          float64 // the metric's mean, in its unit
	Above, Of     int     // configurations above the mean, of Of
	// Upper are the configurations above the diagonal (more efficient
	// than the least-squares line of efficiency on performance says at
	// their performance), UpperBelow those of them below the mean; Lower
	// and LowerAbove the same below the diagonal and above the mean.
	Upper, UpperBelow, Lower, LowerAbove int
	// RhoPerf and RhoEff are Spearman's coefficients of the metric with
	// performance and with efficiency (NaN where either is constant).
	RhoPerf, RhoEff float64
	// points are the configurations, for the charts; above[i] says
	// whether points[i] is above the mean. a and b are the diagonal:
	// efficiency = a + b·performance.
	points []*store.Evaluation
	above  []bool
	a, b   float64
}

// metricClasses is Figure 9 of valid's metrics perf (performance) and eff
// (efficiency): one metricClass for each of figure9's metrics held by at
// least three configurations, in figure9's order; none when no metric is.
func metricClasses(valid []*store.Evaluation, perf, eff string) []metricClass {
	var out []metricClass
	for _, m := range figure9 {
		var es []*store.Evaluation
		var ms, ps, qs []float64
		for _, e := range valid {
			v, ok := e.Observations[m.ncu]
			p, okP := e.Metrics[perf]
			q, okQ := e.Metrics[eff]
			if !ok || !okP || !okQ || bad(v) || bad(p) || bad(q) {
				continue
			}
			es, ms, ps, qs = append(es, e), append(ms, v), append(ps, p), append(qs, q)
		}
		if len(es) < 3 {
			continue
		}
		c := metricClass{Metric: m.ncu, Paper: m.paper, Mean: stat.Mean(ms, nil), Of: len(es), points: es}
		c.a, c.b = stat.LinearRegression(ps, qs, nil, false)
		for i := range es {
			up := qs[i] > c.a+c.b*ps[i]
			hi := ms[i] > c.Mean
			c.above = append(c.above, hi)
			if hi {
				c.Above++
			}
			switch {
			case up:
				c.Upper++
				if !hi {
					c.UpperBelow++
				}
			default:
				c.Lower++
				if hi {
					c.LowerAbove++
				}
			}
		}
		c.RhoPerf, c.RhoEff = spearman(ms, ps), spearman(ms, qs)
		out = append(out, c)
	}
	return out
}

// spearman is Spearman's coefficient of x and y (NaN where either is
// constant).
func spearman(x, y []float64) float64 {
	if constant(x) || constant(y) {
		return math.NaN()
	}
	return stat.Correlation(ranks(x), ranks(y), nil)
}

// share says n of of as a count and a percentage.
func share(n, of int) string {
	return fmt.Sprintf("%d of %d (%.0f %%)", n, of, 100*float64(n)/float64(max(of, 1)))
}

// spillFree are valid's configurations that do not spill registers
// (observation local_memory 0 or absent) and how many do; nil where none
// does or fewer than three do not. Local memory is DRAM, L2 and L1
// traffic a spilling configuration makes beside its tiles': on the H100's
// DGEMM sweep the spills (slow, and heavy on every memory metric) turned
// the memory rows of Figure 9 around, which set apart read as the paper's
// (BENCHMARKS.md, "The whole DGEMM space").
func spillFree(valid []*store.Evaluation) ([]*store.Evaluation, int) {
	var free []*store.Evaluation
	for _, e := range valid {
		if !(e.Observations["local_memory"] > 0) {
			free = append(free, e)
		}
	}
	if spills := len(valid) - len(free); spills > 0 && len(free) >= 3 {
		return free, spills
	}
	return nil, 0
}

// spillFreeOf names the subset spillFree gives.
func spillFreeOf(free []*store.Evaluation, spills int) string {
	return fmt.Sprintf(" of the %d configurations that do not spill registers (%d do)", len(free), spills)
}

// writeMetricClasses prints Figure 9's classes for a terminal; of names
// the configurations they are of ("": all valid).
func writeMetricClasses(w io.Writer, cs []metricClass, perf, eff, of string) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "metric classes%s, as Figure 9 of autotuning-gemm-energy-beast.md (each configuration above or below the metric's mean; the diagonal: the least-squares line of %s on %s):\n", of, eff, perf)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  metric\tthe paper's\tmean\tabove the mean\tabove the diagonal, below the mean\tbelow the diagonal, above the mean\tρ with %s\tρ with %s\n", perf, eff)
	for _, c := range cs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%+.2f\t%+.2f\n", c.Metric, c.Paper, Format(c.Mean), share(c.Above, c.Of),
			share(c.UpperBelow, c.Upper), share(c.LowerAbove, c.Lower), c.RhoPerf, c.RhoEff)
	}
	tw.Flush()
}

// Figure 9's colours: above the mean red, below green, as in the paper.
var (
	aboveMean = color.RGBA{213, 94, 0, 255}
	belowMean = color.RGBA{0, 158, 115, 255}
)

// classesSection is the HTML report's Figure 9: for each run with the
// hull's two metrics and a profiled metric of figure9, a row of three
// charts per metric (performance against it, efficiency against it,
// efficiency against performance with the diagonal), configurations
// above the mean red and below green, and the table writeMetricClasses
// prints.
func classesSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "metric-classes", Title: "Metric classes (Figure 9)",
		Intro: "Each configuration above (red) or below (green) the run's mean of a profiler metric (Nsight Compute: gtune tune --observe ncu), against performance, efficiency and the diagonal, the least-squares line of efficiency on performance, as Figure 9 of the GEMM energy paper: on the K20 every kernel below the diagonal had a DRAM throughput above the mean, and almost every kernel above it an L2 throughput below the mean."}
	for _, r := range runs {
		valid := validOf(r.Evals)
		if len(valid) < 3 {
			continue
		}
		perf, eff, ok := hullMetrics(valid)
		if !ok {
			continue
		}
		cs := metricClasses(valid, perf, eff)
		if len(cs) == 0 {
			s.Notes = append(s.Notes, r.name()+": no profiler metric of Figure 9 (gtune tune --observe ncu measures them)")
			continue
		}
		s.Tables = append(s.Tables, classesTable(r.name()+": the classes", cs, perf, eff))
		for _, c := range cs {
			for _, ax := range []struct{ x, y string }{{c.Metric, perf}, {c.Metric, eff}, {perf, eff}} {
				if err := s.add(classChart(r, c, ax.x, ax.y, perf)); err != nil {
					return s, err
				}
			}
		}
		if free, spills := spillFree(valid); free != nil {
			s.Tables = append(s.Tables, classesTable(r.name()+": the classes"+spillFreeOf(free, spills), metricClasses(free, perf, eff), perf, eff))
		}
	}
	return s, nil
}

// classesTable is Figure 9's table of cs for the HTML report.
func classesTable(caption string, cs []metricClass, perf, eff string) htmlTable {
	t := htmlTable{Caption: caption, Head: []string{"metric", "the paper's", "mean", "above the mean", "above the diagonal, below the mean", "below the diagonal, above the mean", "ρ with " + perf, "ρ with " + eff}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []htmlCell{text(c.Metric), text(c.Paper), num(c.Mean), text(share(c.Above, c.Of)),
			text(share(c.UpperBelow, c.Upper)), text(share(c.LowerAbove, c.Lower)), num(c.RhoPerf), num(c.RhoEff)})
	}
	return t
}

// classChart is one of Figure 9's charts of c: y against x (a hull metric
// or c's metric), above the mean and below as two series, with the
// diagonal where x is performance.
func classChart(r HTMLRun, c metricClass, x, y, perf string) chart {
	val := func(e *store.Evaluation, name string) float64 {
		if name == c.Metric {
			return e.Observations[name]
		}
		return e.Metrics[name]
	}
	var hi, lo []point
	lowX, highX := 0.0, 0.0
	for i, e := range c.points {
		q := point{X: val(e, x), Y: val(e, y), of: e, runName: r.name()}
		if i == 0 || q.X < lowX {
			lowX = q.X
		}
		if i == 0 || q.X > highX {
			highX = q.X
		}
		if c.above[i] {
			hi = append(hi, q)
		} else {
			lo = append(lo, q)
		}
	}
	ch := chart{Title: fmt.Sprintf("%s: %s against %s (%s)", r.name(), y, x, c.Paper), XLabel: x, YLabel: y,
		Series: []series{{Name: "above the mean", Points: hi, Color: aboveMean}, {Name: "below the mean", Points: lo, Color: belowMean}}}
	if x == perf {
		ch.Series = append(ch.Series, series{Name: "diagonal", Line: true, Color: color.RGBA{0, 0, 0, 255},
			Points: []point{{X: lowX, Y: c.a + c.b*lowX}, {X: highX, Y: c.a + c.b*highX}}})
	}
	return ch
}
