package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/store"
)

// HTMLOptions are the choices of an HTML report.
type HTMLOptions struct {
	// Generated is printed as the report's date (a test passes a fixed
	// one).
	Generated time.Time
	// Pareto names the two quantities of the Pareto front: observations
	// or metrics, a rate (…/s) or efficiency (…/W) maximized, any other
	// minimized. Zero: time and energy.
	Pareto [2]string
}

// HTMLRun is one stored run for the HTML report: the run and its
// evaluations in the order they were made (store.DB.Evaluations).
type HTMLRun struct {
	Run   *store.Run
	Evals []*store.Evaluation
	// Name is the run's name in legends, tables and hover labels; empty:
	// "run N". Runs of several databases need names that tell them apart
	// (gtune report FILE:N names them after their files).
	Name string
	// References are runs of library routines (store.SettingLibrary) of
	// the same database measured on one of this run's GPUs: the report
	// draws them beside its hull (ReadRuns finds them).
	References []HTMLRun
}

// name is r's Name, or "run N".
func (r HTMLRun) name() string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("run %d", r.Run.ID)
}

// Sections are the section names of the HTML report of runs, in page
// order (the id of each <section>); BenchSection follows them when the
// report has bench-strategies results. A test and scripts/report-check
// read them.
var Sections = []string{"facts", "best", "pareto", "hull", "gpu-settings", "progress", "parameters", "correlations", "metric-classes"}

// BenchSection is the section of bench-strategies results.
const BenchSection = "strategies"

//go:embed html.tmpl
var htmlTemplate string

var pageTemplate = template.Must(template.New("report").Parse(htmlTemplate))

type htmlCell struct {
	Text string
	Num  string // the value sorted by, when the column is numeric
}

type htmlTable struct {
	Caption string
	Head    []string
	Rows    [][]htmlCell
}

type htmlSection struct {
	ID, Title string
	Intro     string
	Notes     []string
	Charts    []template.HTML
	Tables    []htmlTable
}

type htmlPage struct {
	Title     string
	Generated string
	Sections  []htmlSection
}

// WriteHTML writes one self-contained HTML document reporting runs (one
// or several; several runs of one kernel, on different GPUs or clocks,
// share each chart's axes, a colour each): the runs' facts; the best
// configurations, in a table sortable by any column; the Pareto front of
// time × energy; the convex hull of performance × efficiency and its
// configurations in hull order (autotuning-gemm-energy-beast.md,
// Figure 5 and Table II); time, energy, power and EDP against each GPU
// setting (nvml_gr_clock, nvml_mem_clock, nvml_pwr_limit) with the
// fitted ridge frequency and the power-capping ratio
// (autotuning-energy-efficiency-power-capping.md, eq. 2.3 and section 3);
// the best objective so far against evaluations and tuning time; the
// objective against each tunable parameter; and the Pearson and Spearman
// coefficients of every observation, metric and numeric parameter with
// the performance and the efficiency objective, ranked, with the
// strongest as scatter plots (autotuning-gemm-energy-beast.md,
// Figures 6–9). Charts are SVG drawn by gonum/plot; hovering a point
// shows its configuration. The page fetches nothing: no script, style,
// font or image comes from elsewhere. bench are bench-strategies
// --json documents, charted after the runs as the fraction of the
// optimum each strategy reaches against its budget. Errors: neither a
// run nor a bench document, or a chart gonum/plot cannot draw.
func WriteHTML(w io.Writer, runs []HTMLRun, bench []BenchDoc, opts HTMLOptions) error {
	if len(runs) == 0 && len(bench) == 0 {
		return fmt.Errorf("report: no run and no bench-strategies result to report")
	}
	if opts.Pareto == [2]string{} {
		opts.Pareto = [2]string{"time", "energy"}
	}
	page := htmlPage{Generated: opts.Generated.UTC().Format("2006-01-02 15:04 UTC")}
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.name()] {
			return fmt.Errorf("report: two runs are named %q (runs of several databases need names of their own)", r.name())
		}
		seen[r.name()] = true
		names = append(names, fmt.Sprintf("%s (%s on %s)", r.name(), r.Run.Kernel, r.Run.DeviceName))
	}
	for _, d := range bench {
		names = append(names, d.Name)
	}
	page.Title = "gtune report: " + strings.Join(names, ", ")
	if len(runs) > 0 {
		pareto := func(runs []HTMLRun) (htmlSection, error) { return paretoSection(runs, opts.Pareto) }
		for _, build := range []func([]HTMLRun) (htmlSection, error){
			factsSection, bestSection, pareto, hullSection, settingsSection, progressSection, parametersSection, correlationSection, classesSection,
		} {
			s, err := build(runs)
			if err != nil {
				return err
			}
			page.Sections = append(page.Sections, s)
		}
	}
	if len(bench) > 0 {
		s, err := benchSection(bench)
		if err != nil {
			return err
		}
		page.Sections = append(page.Sections, s)
	}
	return pageTemplate.Execute(w, page)
}

// add renders c into s, unless c has nothing to draw (a run without
// timestamps, a quantity no configuration has): a chart without points
// says nothing.
func (s *htmlSection) add(c chart) error {
	n := len(c.Bars)
	for _, sr := range c.Series {
		for _, q := range sr.Points {
			if !bad(q.X) && !bad(q.Y) {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	svg, err := c.SVG()
	if err != nil {
		return err
	}
	s.Charts = append(s.Charts, svg)
	return nil
}

func validOf(evals []*store.Evaluation) []*store.Evaluation {
	var v []*store.Evaluation
	for _, e := range evals {
		if e.Status == "valid" {
			v = append(v, e)
		}
	}
	return v
}

func num(v float64) htmlCell {
	if bad(v) {
		return htmlCell{Text: "–", Num: "NaN"}
	}
	return htmlCell{Text: Format(v), Num: strconv.FormatFloat(v, 'g', -1, 64)}
}

func text(s string) htmlCell { return htmlCell{Text: s} }

// repeatFact states a run's repeat policy (tune --repeat, --repeat-until,
// --confirm) from its settings; "" for one measurement per configuration.
func repeatFact(st map[string]any) string {
	var parts []string
	if n, ok := st["repeat"].(float64); ok {
		p := fmt.Sprintf("each configuration measured %g times", n)
		if u, ok := st["repeat_until"].(float64); ok {
			p = fmt.Sprintf("each configuration measured until its median time's 95 %% interval was within ±%g %% (at most %g times)", 100*u, n)
		}
		if a, ok := st["repeat_aggregate"].(string); ok {
			p += "; " + a
		}
		parts = append(parts, p)
	}
	if c, ok := st["confirm"].(string); ok {
		parts = append(parts, "confirm: "+c)
	}
	return strings.Join(parts, ". ")
}

// thermalFact states a run's thermal policy and its leakage model (tune
// --thermal) from its settings; "" where none was stated.
func thermalFact(st map[string]any) string {
	p, ok := st["thermal"].(string)
	if !ok {
		return ""
	}
	out := "thermal policy " + p
	if s, ok := st["leakage_slope_w_per_c"].(float64); ok {
		how := "fitted on the warm-up"
		if prior, _ := st["leakage_prior"].(bool); prior {
			how = "the prior (the warm-up spanned too few °C to fit one)"
		}
		ref, _ := st["temperature_ref_c"].(float64)
		out += fmt.Sprintf("; energy corrected to %g °C with a leakage slope of %.3f W/°C, %s", ref, s, how)
	}
	return out
}

func factsSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "facts", Title: "Runs"}
	head := []string{""}
	for _, r := range runs {
		head = append(head, r.name())
	}
	rows := map[string][]htmlCell{}
	order := []string{"kernel", "spec", "device", "device UUID", "driver", "GPU as found", "backend", "strategy", "objective", "budget",
		"started", "wall time", "status", "evaluations", "by status", "repeated measurement", "energy and temperature", "compile per configuration", "gtune's overhead per configuration", "profiling pass", "gtune version", "settings"}
	for _, r := range runs {
		run := r.Run
		byStatus := map[string]int{}
		var frame, compile float64
		own, from := provenance(run, r.Evals)
		for _, e := range r.Evals {
			byStatus[e.Status]++
			if e.RunID != run.ID {
				continue // reused: its cost was its own run's
			}
			frame += e.FrameworkMs
			compile += e.CompileMs
		}
		var parts []string
		for _, k := range sortedStatus(byStatus) {
			parts = append(parts, fmt.Sprintf("%d %s", byStatus[k], k))
		}
		dir := "minimize"
		if run.Settings["objective_direction"] == "maximize" {
			dir = "maximize"
		}
		var budget []string
		if v, ok := run.Settings["max_evals"]; ok {
			budget = append(budget, fmt.Sprintf("%v evaluations", v))
		}
		if v, ok := run.Settings["time_limit_s"]; ok {
			budget = append(budget, fmt.Sprintf("%v s", v))
		}
		wall := "running or cut"
		if !run.EndedAt.IsZero() {
			wall = fmt.Sprintf("%.1f s", run.EndedAt.Sub(run.StartedAt).Seconds())
		}
		var found []string
		for _, f := range []struct{ key, format string }{
			{"device_sm_clock_mhz", "SM clock %g MHz"}, {"device_max_sm_clock_mhz", "(at most %g MHz)"},
			{"device_mem_clock_mhz", "memory clock %g MHz"}, {"device_power_limit_w", "power limit %g W"},
		} {
			if v, ok := run.Settings[f.key].(float64); ok {
				found = append(found, fmt.Sprintf(f.format, v))
			}
		}
		settings, _ := json.Marshal(run.Settings)
		// The ncu pass after the run (tune --observe ncu) records its
		// metrics and its cost in the run's settings.
		profiled := ""
		if n, ok := run.Settings["ncu_profiled"].(float64); ok {
			metrics, _ := run.Settings["ncu_metrics"].([]any)
			failed, _ := run.Settings["ncu_failed"].(float64)
			secs, _ := run.Settings["ncu_seconds"].(float64)
			procs, _ := run.Settings["ncu_processes"].(float64)
			profiled = fmt.Sprintf("Nsight Compute: %g configurations (%g failed), %d metrics, %.1f s, %.2f s per configuration, %g process(es)",
				n, failed, len(metrics), secs, secs/math.Max(n+failed, 1), procs)
		}
		n := float64(max(own, 1))
		vals := map[string]string{
			"kernel": run.Kernel, "spec": run.SpecPath, "device": deviceFact(run), "device UUID": run.DeviceUUID, "driver": run.Driver,
			"GPU as found": strings.Join(found, " "),
			"backend":      run.Backend, "strategy": run.Strategy, "objective": run.Objective + " (" + dir + ")", "budget": strings.Join(budget, ", "),
			"started": run.StartedAt.UTC().Format(time.RFC3339), "wall time": wall, "status": run.Status,
			"evaluations": evaluationsFact(len(r.Evals), own, from), "by status": strings.Join(parts, ", "),
			"compile per configuration": fmt.Sprintf("%.1f ms", compile/n), "gtune's overhead per configuration": fmt.Sprintf("%.2f ms", frame/n),
			"profiling pass": profiled, "gtune version": run.GtuneVersion, "settings": string(settings),
			"repeated measurement": repeatFact(run.Settings), "energy and temperature": thermalFact(run.Settings),
		}
		for _, k := range order {
			v := vals[k]
			if v == "" {
				v = "–"
			}
			rows[k] = append(rows[k], text(v))
		}
	}
	t := htmlTable{Head: head}
	for _, k := range order {
		t.Rows = append(t.Rows, append([]htmlCell{text(k)}, rows[k]...))
	}
	s.Tables = append(s.Tables, t)
	// Why configurations failed: the first line of each reason, counted.
	for _, r := range runs {
		reasons := map[string]int{}
		for _, e := range r.Evals {
			if e.Status != "valid" {
				line, _, _ := strings.Cut(e.Reason, "\n")
				reasons[e.Status+": "+line]++
			}
		}
		if len(reasons) == 0 {
			continue
		}
		keys := make([]string, 0, len(reasons))
		for k := range reasons {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if reasons[keys[i]] != reasons[keys[j]] {
				return reasons[keys[i]] > reasons[keys[j]]
			}
			return keys[i] < keys[j]
		})
		t := htmlTable{Caption: r.name() + ": why configurations are not valid", Head: []string{"configurations", "status: reason"}}
		for _, k := range keys[:min(len(keys), 20)] {
			t.Rows = append(t.Rows, []htmlCell{num(float64(reasons[k])), text(k)})
		}
		s.Tables = append(s.Tables, t)
	}
	return s, nil
}

// deviceFact names a run's GPU, or its GPUs when it ran over several
// (gtune tune --devices: the run's settings list them).
func deviceFact(run *store.Run) string {
	gpus, _ := run.Settings["gpus"].([]any)
	if len(gpus) < 2 {
		return run.DeviceName
	}
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = fmt.Sprint(g)
	}
	return fmt.Sprintf("%d × %s (%s)", len(gpus), run.DeviceName, strings.Join(names, ", "))
}

// evaluationsFact says how many evaluations a run holds and where they
// came from: measured by the run itself (own) or reused from earlier runs
// (from, counted by run), e.g. "96: 40 measured in this run, 56 reused
// from run 1".
func evaluationsFact(n, own int, from map[int64]int) string {
	if len(from) == 0 {
		return strconv.Itoa(n)
	}
	ids := make([]int64, 0, len(from))
	for id := range from {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d from run %d", from[id], id)
	}
	return fmt.Sprintf("%d: %d measured in this run, reused %s", n, own, strings.Join(parts, ", "))
}

// observationNames are the observations the valid evaluations have, the
// common ones first.
func observationNames(valid []*store.Evaluation) []string {
	seen := map[string]bool{}
	for _, e := range valid {
		for k := range e.Observations {
			seen[k] = true
		}
	}
	var out []string
	for _, k := range []string{"time", "energy", "power", "edp"} {
		if seen[k] {
			out = append(out, k)
			delete(seen, k)
		}
	}
	rest := make([]string, 0, len(seen))
	for k := range seen {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func metricNames(valid []*store.Evaluation) []string {
	seen := map[string]bool{}
	for _, e := range valid {
		for k := range e.Metrics {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func objectiveOf(e *store.Evaluation) float64 {
	if e.Objective == nil {
		return math.NaN()
	}
	return *e.Objective
}

// ranked is valid sorted best first by the run's objective.
func ranked(run *store.Run, valid []*store.Evaluation) []*store.Evaluation {
	out := append([]*store.Evaluation(nil), valid...)
	maximize := run.Settings["objective_direction"] == "maximize"
	sort.SliceStable(out, func(i, j int) bool {
		a, b := objectiveOf(out[i]), objectiveOf(out[j])
		switch {
		case bad(a):
			return false
		case bad(b):
			return true
		case maximize:
			return a > b
		}
		return a < b
	})
	return out
}

func bestSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "best", Title: "Best configurations",
		Intro: "The best configuration by each observation, then the best configurations by the run's objective (at most 200); click a column's heading to sort by it."}
	for _, r := range runs {
		valid := validOf(r.Evals)
		if len(valid) == 0 {
			s.Notes = append(s.Notes, r.name()+": no valid configuration")
			continue
		}
		obs := observationNames(valid)
		t := htmlTable{Caption: r.name() + ": best by", Head: []string{"observation", "configuration", "value"}}
		for _, o := range obs {
			if e, v, ok := bestBy(valid, o); ok {
				t.Rows = append(t.Rows, []htmlCell{text(o), text(e.Key), num(v)})
			}
		}
		s.Tables = append(s.Tables, t)
		mets := metricNames(valid)
		head := []string{"rank", "configuration"}
		var params []string
		for _, p := range valid[0].Params {
			params = append(params, p.Name)
		}
		head = append(head, params...)
		head = append(head, "objective ("+r.Run.Objective+")")
		head = append(head, obs...)
		head = append(head, mets...)
		best := htmlTable{Caption: r.name() + ": configurations by " + r.Run.Objective, Head: head}
		for i, e := range ranked(r.Run, valid)[:min(len(valid), 200)] {
			row := []htmlCell{num(float64(i + 1)), text(e.Key)}
			for _, p := range e.Params {
				row = append(row, paramCell(p.Value))
			}
			row = append(row, num(objectiveOf(e)))
			for _, o := range obs {
				row = append(row, obsCell(e.Observations, o))
			}
			for _, m := range mets {
				row = append(row, obsCell(e.Metrics, m))
			}
			best.Rows = append(best.Rows, row)
		}
		s.Tables = append(s.Tables, best)
	}
	return s, nil
}

func obsCell(m map[string]float64, k string) htmlCell {
	v, ok := m[k]
	if !ok {
		return num(math.NaN())
	}
	return num(v)
}

func paramCell(v any) htmlCell {
	if f, ok := paramNumber(v); ok {
		return num(f)
	}
	return text(fmt.Sprint(v))
}

// paramNumber is a tunable parameter's value as a number, when it is
// one: the database reads integers back as int, other numbers as
// float64, and strings and bools as themselves (store.Param); a value's
// text (as the parameter-effects chart keeps it) is parsed.
func paramNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func paretoSection(runs []HTMLRun, axes [2]string) (htmlSection, error) {
	a, b := axes[0], axes[1]
	s := htmlSection{ID: "pareto", Title: "Pareto front: " + a + " × " + b,
		Intro: "Every valid configuration (rings) and the Pareto front (filled): the configurations no other one beats in both " + a + " and " + b + " (gtune report --pareto A,B picks the two)."}
	c := chart{Title: a + " × " + b, XLabel: a, YLabel: b}
	for i, r := range runs {
		valid := validOf(r.Evals)
		var all, fr []point
		for _, e := range valid {
			x, okA := quantity(e, a)
			y, okB := quantity(e, b)
			if okA && okB {
				all = append(all, point{X: x, Y: y, of: e, runName: r.name()})
			}
		}
		if len(all) == 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: no configuration has both %s and %s (energy needs tune --energy)", r.name(), a, b))
			continue
		}
		front := paretoFront(valid, a, b)
		for _, e := range front {
			x, _ := quantity(e, a)
			y, _ := quantity(e, b)
			fr = append(fr, point{X: x, Y: y, of: e, runName: r.name()})
		}
		col := palette[i%len(palette)]
		c.Series = append(c.Series, series{Name: r.name(), Points: all, Color: col},
			series{Points: fr, Line: true, Color: col}, series{Name: r.name() + " front", Points: fr, Marked: true, Color: col})
		// The front's two quantities, then time, energy and power where
		// they are not those two.
		head := []string{"configuration", a, b}
		var more []string
		for _, o := range []struct{ name, unit string }{{"time", "ms"}, {"energy", "J"}, {"power", "W"}} {
			if o.name != a && o.name != b {
				more = append(more, o.name)
				head = append(head, o.name+" ("+o.unit+")")
			}
		}
		t := htmlTable{Caption: fmt.Sprintf("%s: the front, best %s first (%d of %d valid configurations)", r.name(), a, len(front), len(valid)), Head: head}
		for _, e := range front {
			x, _ := quantity(e, a)
			y, _ := quantity(e, b)
			row := []htmlCell{text(e.Key), num(x), num(y)}
			for _, o := range more {
				row = append(row, obsCell(e.Observations, o))
			}
			t.Rows = append(t.Rows, row)
		}
		s.Tables = append(s.Tables, t)
	}
	return s, s.add(c)
}

// label is what hovering a configuration's point shows.
func label(runName string, e *store.Evaluation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", runName, e.Key)
	for _, k := range []string{"time", "energy", "power"} {
		if v, ok := e.Observations[k]; ok {
			fmt.Fprintf(&b, "\n%s %s", k, Format(v))
		}
	}
	return b.String()
}

func hullSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "hull", Title: "Convex hull: performance × efficiency",
		Intro: "The convex hull of performance (a rate metric of the spec) against efficiency (the same per watt), as Figure 5 and Table II of the GEMM energy paper: its upper-right part, the configurations no mix of two others beats in both, fastest first; the whole hull's two arcs; the spread of each metric at the other's winner and the quadrants their lines cut (sections 3.3 and 3.4)."}
	for i, r := range runs {
		valid := validOf(r.Evals)
		if len(valid) == 0 {
			continue
		}
		perf, eff, ok := hullMetrics(valid)
		if !ok {
			s.Notes = append(s.Notes, r.name()+": no pair of metrics for performance (…/s) and efficiency (…/W); the spec's Gtune.Metrics and --energy give them")
			continue
		}
		hull := efficiencyHull(valid, perf, eff)
		sw := analyseHull(valid, perf, eff)
		pointsOf := func(es []*store.Evaluation) []point {
			var ps []point
			for _, e := range es {
				ps = append(ps, point{X: e.Metrics[perf], Y: e.Metrics[eff], of: e, runName: r.name()})
			}
			return ps
		}
		all, hp := pointsOf(valid), pointsOf(hull)
		// The whole hull's outline: the upper arc, the lower arc, closed.
		outline := pointsOf(append(append(append([]*store.Evaluation(nil), sw.Upper...), sw.Lower...), sw.Upper[0]))
		col := palette[i%len(palette)]
		c := chart{Title: r.name() + ": " + perf + " × " + eff, XLabel: perf, YLabel: eff,
			Series: []series{{Name: "configurations", Points: all, Color: col}, {Name: "whole hull", Points: outline, Line: true, Color: col},
				{Name: "upper-right hull", Points: hp, Marked: true, Color: col}}}
		refs := references(r, perf, eff)
		for k, ref := range refs {
			c.Series = append(c.Series, series{Name: "reference: " + ref.name(), Marked: true, Color: palette[(i+1+k)%len(palette)],
				Points: []point{{X: ref.eval.Metrics[perf], Y: ref.eval.Metrics[eff], of: ref.eval, runName: ref.run.name()}}})
			s.Notes = append(s.Notes, r.name()+": "+referenceLine(ref, sw, perf, eff))
		}
		if err := s.add(c); err != nil {
			return s, err
		}
		t := htmlTable{Caption: r.name() + ": the hull's configurations in hull order", Head: []string{"configuration", perf, eff, "speed", "efficiency"}}
		p0, e0 := hull[0].Metrics[perf], hull[0].Metrics[eff]
		for _, e := range hull {
			p, q := e.Metrics[perf], e.Metrics[eff]
			t.Rows = append(t.Rows, []htmlCell{text(e.Key), num(p), num(q), pct(p/p0 - 1), pct(q/e0 - 1)})
		}
		s.Tables = append(s.Tables, t)
		s.Notes = append(s.Notes, r.name()+": "+sw.spreadLine(perf, eff), r.name()+": "+sw.quadrantLine())
		arcs := htmlTable{Caption: r.name() + ": the whole hull, as Table II (the upper arc from the fastest to the slowest, then the lower arc back)", Head: []string{"arc", "configuration", perf, eff}}
		for _, arc := range []struct {
			name string
			es   []*store.Evaluation
		}{{"upper", sw.Upper}, {"lower", sw.Lower}} {
			for _, e := range arc.es {
				arcs.Rows = append(arcs.Rows, []htmlCell{text(arc.name), text(e.Key), num(e.Metrics[perf]), num(e.Metrics[eff])})
			}
		}
		s.Tables = append(s.Tables, arcs)
	}
	return s, nil
}

func pct(f float64) htmlCell {
	return htmlCell{Text: fmt.Sprintf("%+.1f %%", 100*f), Num: strconv.FormatFloat(100*f, 'g', -1, 64)}
}

// gpuSettings are the tunable parameters that are GPU settings
// (spec/gpusettings.go) and their units.
var gpuSettings = []struct{ name, label string }{
	{"nvml_gr_clock", "SM clock (MHz)"}, {"nvml_mem_clock", "memory clock (MHz)"}, {"nvml_pwr_limit", "power limit (W)"},
}

func paramValue(e *store.Evaluation, name string) (float64, bool) {
	for _, p := range e.Params {
		if p.Name == name {
			return paramNumber(p.Value)
		}
	}
	return 0, false
}

// sameBut reports whether a and b have the same values for every
// parameter but name.
func sameBut(a, b *store.Evaluation, name string) bool {
	if len(a.Params) != len(b.Params) {
		return false
	}
	for i, p := range a.Params {
		if p.Name != name && fmt.Sprint(p.Value) != fmt.Sprint(b.Params[i].Value) {
			return false
		}
	}
	return true
}

func settingsSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "gpu-settings", Title: "GPU settings",
		Intro: "Time, energy, power and EDP against each GPU setting that was a tunable parameter, for the best configuration's other parameters; the SM clock's ridge frequency fitted to the power (P = P_static + P_dyn·f·V(f)², the voltage flat up to the ridge) and the power-capping ratio (configurations drawing the power limit, over it, or less than 10 W under it)."}
	found := false
	for _, g := range gpuSettings {
		type curve struct {
			name string
			pts  []*store.Evaluation
		}
		var curves []curve
		for _, r := range runs {
			valid := ranked(r.Run, validOf(r.Evals))
			if len(valid) == 0 {
				continue
			}
			if _, ok := paramValue(valid[0], g.name); !ok {
				continue
			}
			var pts []*store.Evaluation
			for _, e := range valid {
				if sameBut(e, valid[0], g.name) {
					pts = append(pts, e)
				}
			}
			sort.Slice(pts, func(i, j int) bool {
				a, _ := paramValue(pts[i], g.name)
				b, _ := paramValue(pts[j], g.name)
				return a < b
			})
			curves = append(curves, curve{r.name(), pts})
		}
		if len(curves) == 0 {
			continue
		}
		found = true
		for _, q := range []struct{ obs, label string }{{"time", "time (ms)"}, {"energy", "energy (J)"}, {"power", "power (W)"}, {"edp", "EDP (J·s)"}} {
			c := chart{Title: q.label + " against " + g.label, XLabel: g.label, YLabel: q.label, Width: 5 * vg.Inch, Height: 3.2 * vg.Inch}
			for i, cv := range curves {
				var pts []point
				for _, e := range cv.pts {
					x, _ := paramValue(e, g.name)
					if v, ok := e.Observations[q.obs]; ok {
						pts = append(pts, point{X: x, Y: v, of: e, runName: cv.name})
					}
				}
				col := palette[i%len(palette)]
				c.Series = append(c.Series, series{Points: pts, Line: true, Color: col}, series{Name: cv.name, Points: pts, Marked: true, Color: col})
				if q.obs == "power" && g.name == "nvml_gr_clock" {
					var samples []gpuctl.PowerSample
					for _, p := range pts {
						samples = append(samples, gpuctl.PowerSample{ClockMHz: p.X, PowerW: p.Y})
					}
					if fit, err := gpuctl.FitRidge(samples); err == nil {
						c.Marks = append(c.Marks, point{X: fit.RidgeMHz, Label: fmt.Sprintf("%s ridge %.0f MHz", cv.name, fit.RidgeMHz)})
						s.Notes = append(s.Notes, fmt.Sprintf("%s: ridge frequency %.0f MHz (power fit over %d clocks)", cv.name, fit.RidgeMHz, len(samples)))
					}
				}
			}
			if err := s.add(c); err != nil {
				return s, err
			}
		}
		if g.name == "nvml_pwr_limit" {
			for _, r := range runs {
				var cs []gpuctl.CapSample
				for _, e := range validOf(r.Evals) {
					capW, ok := paramValue(e, g.name)
					if p, okP := e.Observations["power"]; ok && okP {
						cs = append(cs, gpuctl.CapSample{PowerW: p, CapW: capW})
					}
				}
				if ratio, near, total := gpuctl.CappingRatio(cs, gpuctl.CappingTolW); total > 0 {
					s.Notes = append(s.Notes, fmt.Sprintf("%s: power-capping ratio %.3f (%d of %d configurations drawing their power limit, over it, or less than %d W under it)", r.name(), ratio, near, total, gpuctl.CappingTolW))
				}
			}
		}
	}
	if !found {
		s.Notes = append(s.Notes, "no GPU setting was a tunable parameter in these runs (tune with --gpu-settings to sweep clocks or the power limit)")
	}
	return s, nil
}

func progressSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "progress", Title: "Search progress",
		Intro: "The best objective found so far, against the evaluations in the order made and against the time since the run started."}
	byEval := chart{Title: "best so far against evaluations", XLabel: "evaluations", YLabel: "objective", Width: 5 * vg.Inch, Height: 3.2 * vg.Inch}
	byTime := chart{Title: "best so far against tuning time", XLabel: "time since the run started (s)", YLabel: "objective", Width: 5 * vg.Inch, Height: 3.2 * vg.Inch}
	for i, r := range runs {
		maximize := r.Run.Settings["objective_direction"] == "maximize"
		// A step line: points where the best changes (and the last
		// evaluation), each change drawn as a step from the previous best.
		cur, seen := math.NaN(), false
		var pe, pt []point
		add := func(j int, e *store.Evaluation, v float64) {
			l := fmt.Sprintf("%s, evaluation %d: best %s", r.name(), j+1, Format(v))
			pe = append(pe, point{X: float64(j + 1), Y: v, Label: l})
			if !e.FinishedAt.IsZero() && !r.Run.StartedAt.IsZero() {
				pt = append(pt, point{X: e.FinishedAt.Sub(r.Run.StartedAt).Seconds(), Y: v, Label: l})
			}
		}
		for j, e := range r.Evals {
			if v := objectiveOf(e); e.Status == "valid" && !bad(v) && (!seen || (v < cur) != maximize && v != cur) {
				if seen {
					add(j, e, cur)
				}
				cur, seen = v, true
				add(j, e, cur)
			} else if seen && j == len(r.Evals)-1 {
				add(j, e, cur)
			}
		}
		col := palette[i%len(palette)]
		name := r.name() + " (" + r.Run.Objective + ")"
		byEval.Series = append(byEval.Series, series{Name: name, Points: pe, Line: true, Color: col})
		byTime.Series = append(byTime.Series, series{Name: name, Points: pt, Line: true, Color: col})
	}
	for _, c := range []chart{byEval, byTime} {
		if err := s.add(c); err != nil {
			return s, err
		}
	}
	return s, nil
}

// jitter spreads a categorical point sideways by up to ±0.25 of a
// category, the same for the same key at every rendering.
func jitter(key string) float64 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return (float64(h.Sum32()%1000)/999 - 0.5) / 2
}

// maxCategories is the most values of one parameter its strip plot
// sets side by side (a launch order of six kernels has 720).
const maxCategories = 32

func parametersSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "parameters", Title: "Parameter effects",
		Intro: "The run's objective against each tunable parameter that varies: one point per valid configuration, spread sideways within its value."}
	type vals struct {
		order []string
		index map[string]int
	}
	params := map[string]*vals{}
	var names []string
	for _, r := range runs {
		for _, e := range validOf(r.Evals) {
			for _, p := range e.Params {
				v := params[p.Name]
				if v == nil {
					v = &vals{index: map[string]int{}}
					params[p.Name] = v
					names = append(names, p.Name)
				}
				k := fmt.Sprint(p.Value)
				if _, ok := v.index[k]; !ok {
					v.index[k] = len(v.order)
					v.order = append(v.order, k)
				}
			}
		}
	}
	shown := 0
	for _, name := range names {
		v := params[name]
		if len(v.order) < 2 {
			continue
		}
		if len(v.order) > maxCategories {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: %d values, too many to set side by side (the best configurations' table sorts by it)", name, len(v.order)))
			continue
		}
		if shown == 16 {
			s.Notes = append(s.Notes, fmt.Sprintf("%d parameters shown; the others are in the best configurations' table", shown))
			break
		}
		// Values in numeric order where they are numbers.
		sort.SliceStable(v.order, func(i, j int) bool {
			a, okA := paramNumber(v.order[i])
			b, okB := paramNumber(v.order[j])
			if okA && okB {
				return a < b
			}
			return v.order[i] < v.order[j]
		})
		for i, k := range v.order {
			v.index[k] = i
		}
		c := chart{Title: name, XLabel: name + " (values in order)", YLabel: "objective", Width: 5 * vg.Inch, Height: 3.2 * vg.Inch}
		for i, r := range runs {
			var pts []point
			for _, e := range validOf(r.Evals) {
				for _, p := range e.Params {
					if p.Name == name {
						pts = append(pts, point{X: float64(v.index[fmt.Sprint(p.Value)]) + jitter(e.Key), Y: objectiveOf(e), of: e, runName: r.name()})
					}
				}
			}
			c.Series = append(c.Series, series{Name: r.name(), Points: pts, Color: palette[i%len(palette)]})
		}
		c.NominalX = v.order
		if err := s.add(c); err != nil {
			return s, err
		}
		shown++
	}
	if shown == 0 {
		s.Notes = append(s.Notes, "no tunable parameter varies among the valid configurations")
	}
	return s, nil
}

// correlationTargets are the performance and the efficiency objective a
// run's quantities are correlated with: the hull's rate metrics where the
// spec has them (GFLOP/s and GFLOP/s/W), else time and energy.
func correlationTargets(valid []*store.Evaluation) []string {
	if perf, eff, ok := hullMetrics(valid); ok {
		return []string{perf, eff}
	}
	out := []string{"time"}
	for _, e := range valid {
		if _, ok := e.Observations["energy"]; ok {
			return append(out, "energy")
		}
	}
	return out
}

// quantities are every observation, metric and numeric tunable parameter
// of valid, one value per configuration (NaN where it has none).
func quantities(valid []*store.Evaluation) map[string][]float64 {
	q := map[string][]float64{}
	put := func(name string, i int, v float64) {
		if q[name] == nil {
			q[name] = make([]float64, len(valid))
			for j := range q[name] {
				q[name][j] = math.NaN()
			}
		}
		q[name][i] = v
	}
	for i, e := range valid {
		for k, v := range e.Observations {
			put(k, i, v)
		}
		for k, v := range e.Metrics {
			put(k, i, v)
		}
		for _, p := range e.Params {
			if f, ok := paramNumber(p.Value); ok {
				put("param "+p.Name, i, f)
			}
		}
	}
	return q
}

// runRecord are the tuner's own records of a configuration
// (measure.RunQuantities): how long its measurement and compilation
// took says nothing of the kernel (the measurement's time follows the
// kernel's time by construction).
var runRecord = func() map[string]bool {
	m := map[string]bool{}
	for _, q := range measure.RunQuantities {
		m[q.Name] = true
	}
	return m
}()

// statisticOf reports whether quantity name is a statistic of another
// observation in q (time_median, time_ci_high, energy_trial_2 of time and
// energy): it correlates with whatever its observation does and says
// nothing more.
func statisticOf(name string, q map[string][]float64) bool {
	for _, base := range []string{"time", "energy", "power"} {
		if rest, ok := strings.CutPrefix(name, base+"_"); ok && rest != "" && q[base] != nil {
			return true
		}
	}
	return false
}

// outcomes are the quantities the objectives are made of: the timing and
// energy observations and the spec's metrics, computed from them. Their
// coefficient with GFLOP/s or GFLOP/s/W holds by definition (time with
// GFLOP/s is −1), so they are tabled but not ranked among what explains
// the objectives (the GEMM energy paper ranks profiler metrics).
var outcomes = map[string]bool{"time": true, "energy": true, "power": true, "edp": true, "dynamic_energy": true}

// measurementRecords are what the energy protocol records about its own
// measurement (measure.EnergyQuantities): whether the window was stable or
// throttled, the idle power it subtracted, how long it warmed the GPU.
// They qualify a measurement rather than describe the kernel, so they are
// tabled but not ranked either.
var measurementRecords = map[string]bool{"idle_power": true, "unstable": true, "throttled": true, "warmup_time": true,
	"clock_event_reasons": true, "power_throttle_time": true, "thermal_throttle_time": true, "sample_energy": true}

// Roles of a correlated quantity (the table's role column).
const (
	roleOutcome     = "outcome"
	roleMeasurement = "measurement"
	roleExplanatory = "explanatory"
)

// roles gives the role of each quantity of q, over the configurations
// valid: an outcome (one of outcomes or a metric of the spec), a record of
// the measurement (measurementRecords), or explanatory (profiler
// counters, tunable parameters, the compiled kernel's resources, the
// GPU's clocks and temperature).
func roles(q map[string][]float64, valid []*store.Evaluation) map[string]string {
	metrics := map[string]bool{}
	for _, e := range valid {
		for k := range e.Metrics {
			metrics[k] = true
		}
	}
	out := make(map[string]string, len(q))
	for name := range q {
		switch {
		case outcomes[name] || metrics[name]:
			out[name] = roleOutcome
		case measurementRecords[name]:
			out[name] = roleMeasurement
		default:
			out[name] = roleExplanatory
		}
	}
	return out
}

func correlationSection(runs []HTMLRun) (htmlSection, error) {
	s := htmlSection{ID: "correlations", Title: "Correlations",
		Intro: "Pearson's and Spearman's coefficients of every observation, metric and numeric tunable parameter with the performance and the efficiency objective, over the valid configurations (gonum/stat), strongest first (statistics of one observation, such as time_median or energy_trial_1, and the tuner's own records, compile_time and benchmark_time, left out). The bars rank what may explain the objectives: profiler counters, tunable parameters, the compiled kernel's resources, the GPU's clocks and temperature; outcomes (time, energy, power, EDP and the spec's metrics, of which the objectives are made) and the energy protocol's records of its own measurement (idle power, unstable, throttled, warm-up time) are only in the table. Then the three strongest against each objective as scatter plots (the GEMM energy paper's Figures 6–9)."}
	for _, r := range runs {
		valid := validOf(r.Evals)
		if len(valid) < 3 {
			s.Notes = append(s.Notes, r.name()+": fewer than three valid configurations")
			continue
		}
		q := quantities(valid)
		targets := correlationTargets(valid)
		for name := range q {
			if statisticOf(name, q) || runRecord[name] {
				delete(q, name)
			}
		}
		role := roles(q, valid)
		corr := map[string]map[string]Correlation{}
		var lists, explaining [][]Correlation
		for _, t := range targets {
			cs := Correlate(t, q[t], q)
			lists = append(lists, cs)
			corr[t] = map[string]Correlation{}
			var ex []Correlation
			for _, c := range cs {
				corr[t][c.Quantity] = c
				if role[c.Quantity] == roleExplanatory {
					ex = append(ex, c)
				}
			}
			explaining = append(explaining, ex)
			top := ex[:min(len(ex), 15)]
			if len(top) == 0 {
				continue
			}
			c := chart{Title: r.name() + ": Spearman's coefficient with " + t, XLabel: "Spearman's ρ", Width: 6 * vg.Inch, Height: vg.Length(60+16*len(top)) * vg.Length(1)}
			for i := len(top) - 1; i >= 0; i-- { // the strongest at the top
				c.NominalY = append(c.NominalY, top[i].Quantity)
				c.Bars = append(c.Bars, top[i].Spearman)
			}
			if err := s.add(c); err != nil {
				return s, err
			}
		}
		head := []string{"quantity", "role"}
		for _, t := range targets {
			head = append(head, "Pearson with "+t, "Spearman with "+t)
		}
		t := htmlTable{Caption: r.name() + ": every coefficient", Head: head}
		for _, c := range lists[0] {
			row := []htmlCell{text(c.Quantity), text(role[c.Quantity])}
			for _, tg := range targets {
				x, ok := corr[tg][c.Quantity]
				if !ok {
					row = append(row, num(math.NaN()), num(math.NaN()))
					continue
				}
				row = append(row, num(x.Pearson), num(x.Spearman))
			}
			t.Rows = append(t.Rows, row)
		}
		s.Tables = append(s.Tables, t)
		// The strongest three against each target (Figure 9 plots the
		// profiler metrics against both GFLOP/s and GFLOP/s/W).
		for k, tg := range targets {
			for _, c := range explaining[k][:min(len(explaining[k]), 3)] {
				var pts []point
				for i, e := range valid {
					pts = append(pts, point{X: q[c.Quantity][i], Y: q[tg][i], of: e, runName: r.name()})
				}
				ch := chart{Title: fmt.Sprintf("%s against %s (ρ = %.3f)", tg, c.Quantity, c.Spearman), XLabel: c.Quantity, YLabel: tg,
					Width: 5 * vg.Inch, Height: 3.2 * vg.Inch, Series: []series{{Points: pts, Color: palette[k%len(palette)]}}}
				if err := s.add(ch); err != nil {
					return s, err
				}
			}
		}
	}
	return s, nil
}
