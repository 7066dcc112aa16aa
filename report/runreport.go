package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/store"
)

// RunReport prints a stored run for a terminal: its facts (device,
// strategy, objective, evaluations by status), the best configuration by
// time, energy and EDP, the Pareto front of time × energy, the convex hull
// of performance × efficiency (the GEMM energy paper's Figure 5 and Table
// II, autotuning-gemm-energy-beast.md: the configurations on the upper
// right of the hull, fastest first, showing how much speed each step of
// efficiency costs) where the spec's metrics give both, and a text plot of
// the best objective so far against the evaluations, in the order they
// were made. evals are the run's evaluations in that order.
func RunReport(w io.Writer, run *store.Run, evals []*store.Evaluation) {
	runReport(w, run, evals, nil)
}

// runReport is RunReport with the runs of library routines that are
// reference points on the hull (HTMLRun.References).
func runReport(w io.Writer, run *store.Run, evals []*store.Evaluation, refs []HTMLRun) {
	byStatus := map[string]int{}
	var valid []*store.Evaluation
	for _, e := range evals {
		byStatus[e.Status]++
		if e.Status == "valid" {
			valid = append(valid, e)
		}
	}
	fmt.Fprintf(w, "run %d: %s on %s (%s), strategy %s, objective %s, %s\n", run.ID, run.Kernel, run.DeviceName, run.Backend, run.Strategy, run.Objective, run.Status)
	var parts []string
	for _, k := range sortedStatus(byStatus) {
		parts = append(parts, fmt.Sprintf("%d %s", byStatus[k], k))
	}
	fmt.Fprintf(w, "evaluations: %d (%s)\n", len(evals), strings.Join(parts, ", "))
	if own, from := provenance(run, evals); len(from) > 0 {
		fmt.Fprintf(w, "  of which %s\n", strings.TrimPrefix(evaluationsFact(len(evals), own, from), fmt.Sprintf("%d: ", len(evals))))
	}
	if len(valid) == 0 {
		fmt.Fprintln(w, "no valid configuration")
		return
	}

	fmt.Fprintln(w, "\nbest by:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, o := range []struct{ name, unit string }{{"time", "ms"}, {"energy", "J"}, {"edp", "J·s"}} {
		if e, v, ok := bestBy(valid, o.name); ok {
			fmt.Fprintf(tw, "  %s\t%s\t%s %s\n", o.name, e.Key, Format(v), o.unit)
		}
	}
	tw.Flush()

	front := timeEnergyFront(valid)
	if len(front) > 0 {
		fmt.Fprintf(w, "\nPareto front, time × energy (%d of %d valid configurations):\n", len(front), len(valid))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  configuration\ttime (ms)\tenergy (J)\t")
		for _, e := range front {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", e.Key, Format(e.Observations["time"]), Format(e.Observations["energy"]))
		}
		tw.Flush()
	}

	if perf, eff, ok := hullMetrics(valid); ok {
		hull := efficiencyHull(valid, perf, eff)
		fmt.Fprintf(w, "\nconvex hull, %s × %s (fastest first; each step trades speed for efficiency):\n", perf, eff)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  configuration\t%s\t%s\tspeed\tefficiency\t\n", perf, eff)
		p0, e0 := hull[0].Metrics[perf], hull[0].Metrics[eff]
		for _, e := range hull {
			p, q := e.Metrics[perf], e.Metrics[eff]
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%+.1f %%\t%+.1f %%\t\n", e.Key, Format(p), Format(q), 100*(p/p0-1), 100*(q/e0-1))
		}
		tw.Flush()
		h := analyseHull(valid, perf, eff)
		writeSweepHull(w, h, perf, eff)
		for _, ref := range references(HTMLRun{Run: run, Evals: evals, References: refs}, perf, eff) {
			fmt.Fprintln(w, referenceLine(ref, h, perf, eff))
		}
		writeMetricClasses(w, metricClasses(valid, perf, eff), perf, eff, "")
		if free, spills := spillFree(valid); free != nil {
			writeMetricClasses(w, metricClasses(free, perf, eff), perf, eff, spillFreeOf(free, spills))
		}
	}

	maximize := run.Settings["objective_direction"] == "maximize"
	if plot := bestSoFarPlot(evals, maximize, 56, 8); plot != "" {
		fmt.Fprintf(w, "\nbest %s so far, against the evaluations in the order made:\n%s", run.Objective, plot)
	}
}

func sortedStatus(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// bestBy is the valid evaluation with the lowest observation name.
func bestBy(valid []*store.Evaluation, name string) (*store.Evaluation, float64, bool) {
	var best *store.Evaluation
	bv := math.Inf(1)
	for _, e := range valid {
		if v, ok := e.Observations[name]; ok && !math.IsNaN(v) && v < bv {
			best, bv = e, v
		}
	}
	return best, bv, best != nil
}

// timeEnergyFront is the Pareto front of time × energy, fastest first;
// empty when energy was not measured.
func timeEnergyFront(valid []*store.Evaluation) []*store.Evaluation {
	return paretoFront(valid, "time", "energy")
}

// quantity is an evaluation's observation or metric named name.
func quantity(e *store.Evaluation, name string) (float64, bool) {
	if v, ok := e.Observations[name]; ok {
		return v, true
	}
	v, ok := e.Metrics[name]
	return v, ok
}

// maximized reports whether a quantity is better when larger: a rate
// (GFLOP/s, GB/s) or an efficiency (GFLOPS/W, GFLOP/s/W); every other
// one (time, energy, power, EDP) is better when smaller.
func maximized(name string) bool {
	return strings.HasSuffix(name, "/s") || strings.HasSuffix(name, "/W")
}

// paretoFront is the Pareto front of the valid evaluations that have
// both quantities a and b (observations or metrics, each minimized or
// maximized as maximized says), ordered by a, best first.
func paretoFront(valid []*store.Evaluation, a, b string) []*store.Evaluation {
	sign := func(name string) float64 {
		if maximized(name) {
			return -1
		}
		return 1
	}
	var ps []objective.Point
	for i, e := range valid {
		x, okA := quantity(e, a)
		y, okB := quantity(e, b)
		if okA && okB && !math.IsNaN(x) && !math.IsNaN(y) {
			ps = append(ps, objective.Point{ID: i, Scores: []float64{sign(a) * x, sign(b) * y}})
		}
	}
	var out []*store.Evaluation
	for _, id := range objective.ParetoFront(ps) {
		out = append(out, valid[id])
	}
	return out
}

// hullMetrics picks a performance metric (a rate: its name ends in "/s")
// and an efficiency metric (a rate per watt: it ends in "/W") that every
// valid evaluation has.
func hullMetrics(valid []*store.Evaluation) (perf, eff string, ok bool) {
	var names []string
	for n := range valid[0].Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "/W") && eff == "":
			eff = n
		case strings.HasSuffix(n, "/s") && perf == "":
			perf = n
		}
	}
	if perf == "" || eff == "" {
		return "", "", false
	}
	for _, e := range valid {
		p, okP := e.Metrics[perf]
		q, okQ := e.Metrics[eff]
		if !okP || !okQ || math.IsNaN(p) || math.IsNaN(q) {
			return "", "", false
		}
	}
	return perf, eff, true
}

// efficiencyHull is the upper-right convex hull of the points
// (performance, efficiency), from the fastest configuration to the most
// efficient: the configurations no mix of two others beats in both, the
// upper arc up to its most efficient point.
func efficiencyHull(valid []*store.Evaluation, perf, eff string) []*store.Evaluation {
	arc := upperArc(valid, perf, eff)
	top := 0
	for i, e := range arc {
		if e.Metrics[eff] > arc[top].Metrics[eff] {
			top = i
		}
	}
	return arc[:top+1]
}

// bestSoFarPlot draws the best objective value so far (the largest when
// maximize) against the evaluation index, width columns by height rows;
// "" when no evaluation has an objective value.
func bestSoFarPlot(evals []*store.Evaluation, maximize bool, width, height int) string {
	var best []float64
	cur, seen := math.NaN(), false
	for _, e := range evals {
		if e.Status == "valid" && e.Objective != nil && !math.IsNaN(*e.Objective) {
			v := *e.Objective
			if !seen || (v < cur) != maximize && v != cur {
				cur, seen = v, true
			}
		}
		best = append(best, cur)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range best {
		if !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return ""
	}
	cols := min(width, len(best))
	grid := make([][]byte, height)
	for r := range grid {
		grid[r] = []byte(strings.Repeat(" ", cols))
	}
	for c := range cols {
		v := best[min(len(best)-1, (c+1)*len(best)/cols-1)]
		if math.IsNaN(v) {
			continue
		}
		r := 0
		if hi > lo {
			r = int(math.Round((v - lo) / (hi - lo) * float64(height-1)))
		}
		grid[height-1-r][c] = '*'
	}
	var b strings.Builder
	for r, row := range grid {
		label := ""
		switch r {
		case 0:
			label = Format(hi)
		case height - 1:
			label = Format(lo)
		}
		fmt.Fprintf(&b, "%10s |%s\n", label, row)
	}
	fmt.Fprintf(&b, "%10s +%s\n", "", strings.Repeat("-", cols))
	fmt.Fprintf(&b, "%10s  1%*d evaluations\n", "", cols-1, len(best))
	return b.String()
}
