package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

// keyObservations are shown in the table, in this order, when present.
var keyObservations = []struct{ name, head string }{
	{"time", "time (ms)"},
	{"energy", "energy (J)"},
	{"energy_cv", "±E (%)"}, // the spread of the configuration's energy trials (coefficient of variation)
	{"power", "power (W)"},
	{"registers", "regs"},
}

// TuneTable prints a tuning run's summary: the device, the counts (and
// the kernels compiled and reused when any binary was reused), the
// best configurations by the objective with their key observations and
// the spec's metrics (metrics), the Pareto front when the run has several
// objectives, implausible measurements left out, the power-capping ratio
// and where the results are.
func TuneTable(w io.Writer, metrics []spec.Metric, sum *tuner.Summary, dbPath string) {
	d := sum.Device
	fmt.Fprintf(w, "device: %s (%s), %s backend\n", d.Name, d.UUID, d.Backend)
	fmt.Fprintf(w, "space: %d valid configurations; strategy %s; evaluated %d, reused %d, invalid %d in %s\n",
		sum.SpaceSize, sum.Strategy, sum.Evaluated, sum.Reused, sum.Invalid, sum.Elapsed.Round(time.Millisecond))
	if t := sum.Time; t.Backend > 0 || t.Compile > 0 {
		inFlight := 0.0
		if sum.Elapsed > 0 {
			inFlight = t.Compile.Seconds() / sum.Elapsed.Seconds()
		}
		fmt.Fprintf(w, "time: %s in the backend, %s waiting for compilations (%.1f in flight on average), %s framework\n",
			t.Backend.Round(time.Millisecond), t.CompileWait.Round(time.Millisecond), inFlight, t.Framework.Round(time.Microsecond))
		if t.Prepare > 0 {
			fmt.Fprintf(w, "preparation: %s putting the arguments on the GPUs (at once), %s the reference run, before the first measurement\n",
				t.Prepare.Round(time.Millisecond), t.Reference.Round(time.Millisecond))
		}
		if t.Warmup > 0 {
			// The thermal policy's cost, as the GPUs' own clocks count
			// it: the simulated GPU's is simulated time.
			fmt.Fprintf(w, "warm-up: %s%s before the first energy measurement, summed over the GPUs (--thermal)\n", t.Warmup.Round(time.Millisecond), modelled(t))
		}
	}
	if p := sum.CompilePool; p != nil {
		fmt.Fprintf(w, "compile processes: %d (peak %d MiB each), %d compilations, %d died, %d timed out\n",
			p.Processes, p.PeakRSSKiB>>10, p.Compiled, p.Crashes, p.Timeouts)
	}
	gpuShares(w, sum)
	if sum.CompileReused > 0 {
		fmt.Fprintf(w, "kernels: %d compiled, %d binaries reused (compile cache, or a kernel in several plans)\n", sum.Compiled, sum.CompileReused)
	}
	if len(sum.Best) == 0 {
		if len(sum.Implausible) > 0 {
			fmt.Fprintf(w, "no plausible configuration: %d valid ones are implausible; see the reasons in %s\n", len(sum.Implausible), dbPath)
			implausible(w, sum)
			return
		}
		if len(sum.Evaluations) == 0 {
			fmt.Fprintln(w, "no configuration was measured")
			return
		}
		fmt.Fprintf(w, "no valid configuration; see the reasons in %s\n", dbPath)
		return
	}
	fmt.Fprintf(w, "best %d by %s (%s):\n", len(sum.Best), sum.Objective.Name, sum.Objective.Direction())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, p := range sum.Best[0].Params {
		head = append(head, p.Name)
	}
	var obsCols []string
	for _, k := range keyObservations {
		if _, ok := sum.Best[0].Observations[k.name]; ok {
			obsCols = append(obsCols, k.name)
			head = append(head, k.head)
		}
	}
	var metricCols []string
	for _, m := range metrics {
		if _, ok := sum.Best[0].Metrics[m.Name]; ok {
			metricCols = append(metricCols, m.Name)
			head = append(head, m.Name)
		}
	}
	objInCols := slices.Contains(obsCols, sum.Objective.Name) || slices.Contains(metricCols, sum.Objective.Name)
	if !objInCols {
		head = append(head, sum.Objective.Name)
	}
	// Over several GPUs, which one measured each: GPUs of one model
	// differ by a few percent in energy, and the ranking mixes that in.
	gpuIndex := map[string]int{}
	for i, g := range sum.GPUs {
		gpuIndex[g.UUID] = i
	}
	if len(sum.GPUs) > 1 {
		head = append(head, "GPU")
	}
	fmt.Fprintln(tw, "#\t"+strings.Join(head, "\t")+"\t")
	for i, o := range sum.Best {
		row := []string{fmt.Sprint(i + 1)}
		for _, p := range o.Params {
			row = append(row, fmt.Sprint(p.Value))
		}
		for _, k := range obsCols {
			if k == "energy_cv" {
				row = append(row, fmt.Sprintf("%.2f", 100*o.Observations[k]))
				continue
			}
			row = append(row, Format(o.Observations[k]))
		}
		for _, k := range metricCols {
			row = append(row, Format(o.Metrics[k]))
		}
		if !objInCols {
			row = append(row, Format(o.Value))
		}
		if len(sum.GPUs) > 1 {
			g := "-"
			if i, ok := gpuIndex[o.GPU]; ok {
				g = fmt.Sprint(i)
			}
			row = append(row, g)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	confirmed(w, sum)
	front(w, sum)
	implausible(w, sum)
	capping(w, sum)
	fmt.Fprintf(w, "results: %s (run %d)\n", dbPath, sum.RunID)
}

// confirmed prints the best configurations re-measured at the end of the
// run (tuner.Config.Confirm): each median of the objective, its
// interval, how many times it was measured, and whether it differs from
// the next.
func confirmed(w io.Writer, sum *tuner.Summary) {
	if sum.ThermalNote != "" {
		fmt.Fprintln(w, sum.ThermalNote)
	}
	if sum.ConfirmNote != "" {
		fmt.Fprintln(w, sum.ConfirmNote)
	}
	if len(sum.Confirmed) == 0 {
		return
	}
	name, unit := sum.Objective.Name, ""
	if u := sum.Objective.Unit; u != "" && u != "1" {
		unit = " (" + u + ")"
	}
	fmt.Fprintf(w, "confirmed: the best %d by %s re-measured interleaved; the order of their medians (95 %% interval of the median; Mann-Whitney U against the next, significant below %g):\n", len(sum.Confirmed), name, tuner.ConfirmAlpha)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  #\tconfiguration\tmeasured\tmedian %s%s\tinterval%s\tagainst the next\n", name, unit, unit)
	for i, c := range sum.Confirmed {
		next := "-"
		if !math.IsNaN(c.PNext) {
			verdict := "not significant"
			if c.Significant {
				verdict = "significant"
			}
			next = fmt.Sprintf("p = %.3g, %s", c.PNext, verdict)
		}
		iv := fmt.Sprintf("[%s, %s] %.1f %%", Format(c.Lo), Format(c.Hi), 100*c.Level)
		fmt.Fprintf(tw, "  %d\t%s\t%d×\t%s\t%s\t%s\n", i+1, c.Key, len(c.Values), Format(c.Median), iv, next)
	}
	tw.Flush()
}

// front prints the Pareto front of a run with several objectives.
func front(w io.Writer, sum *tuner.Summary) {
	if len(sum.Front) == 0 {
		return
	}
	names := make([]string, len(sum.Objectives))
	for i, o := range sum.Objectives {
		names[i] = o.Name
	}
	fmt.Fprintf(w, "Pareto front over %s (%d configurations, by %s):\n", strings.Join(names, " × "), len(sum.Front), names[0])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, p := range sum.Front[0].Params {
		head = append(head, p.Name)
	}
	for _, o := range sum.Objectives {
		head = append(head, fmt.Sprintf("%s (%s)", o.Name, o.Unit))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, e := range sum.Front {
		var row []string
		for _, p := range e.Params {
			row = append(row, fmt.Sprint(p.Value))
		}
		for _, o := range sum.Objectives {
			v, _ := o.Value(e.Observations, e.Metrics)
			row = append(row, Format(v))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

// frontJSON is the Pareto front as JSON entries {key, params, objectives}.
func frontJSON(sum *tuner.Summary) []map[string]any {
	var out []map[string]any
	for _, e := range sum.Front {
		objs := map[string]float64{}
		for _, o := range sum.Objectives {
			v, _ := o.Value(e.Observations, e.Metrics)
			objs[o.Name] = v
		}
		out = append(out, map[string]any{"key": e.Key, "params": paramMap(e.Params), "objectives": objs})
	}
	return out
}

// Format prints a value with a precision that suits its size: whole
// numbers and values of 1000 and more without decimals, two decimals
// from 10, else four significant digits.
func Format(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4g", v)
	}
}

// modelled marks a warm-up the simulated GPU modelled: its time is not
// wall time.
func modelled(t tuner.Time) string {
	if t.WarmupModelled {
		return " simulated"
	}
	return ""
}

// gpuShares prints each GPU's part of a run over several: the
// configurations it measured, its busy time and its throughput
// (configurations per second of the run's wall time).
func gpuShares(w io.Writer, sum *tuner.Summary) {
	if len(sum.GPUs) == 0 {
		return
	}
	fmt.Fprintf(w, "GPUs: %d × %s\n", len(sum.GPUs), sum.GPUs[0].Name)
	for i, g := range sum.GPUs {
		rate := 0.0
		if s := sum.Elapsed.Seconds(); s > 0 {
			rate = float64(g.Evaluated) / s
		}
		left := ""
		if g.Dropped != "" {
			left = "; left the run: " + g.Dropped
		}
		warm := ""
		if g.Warmup > 0 {
			warm = fmt.Sprintf(" (warm-up %s%s)", g.Warmup.Round(time.Millisecond), modelled(sum.Time))
		}
		fmt.Fprintf(w, "  GPU %d, %s: %d configurations, busy %s%s, %.2f per second%s\n", i, g.UUID, g.Evaluated, g.Busy.Round(time.Millisecond), warm, rate, left)
	}
}

// TuneGPU is one GPU's part of a run over several (tuner.GPUShare).
type TuneGPU struct {
	BusyS     float64 `json:"busy_s"`
	Dropped   string  `json:"dropped,omitempty"` // why it left the run
	Evaluated int     `json:"evaluated"`
	Name      string  `json:"name"`
	UUID      string  `json:"uuid"`
	WarmupS   float64 `json:"warmup_s,omitempty"`
}

// TuneDoc is gtune tune --json's document. Its fields are in the order of
// their names, as the map it replaced printed them.
type TuneDoc struct {
	Best             *TuneBest         `json:"best,omitempty"`
	Confirmed        []TuneConfirmed   `json:"confirmed,omitempty"`
	ConfirmNote      string            `json:"confirm_note,omitempty"`
	ThermalNote      string            `json:"thermal_note,omitempty"`
	CompileProcesses *CompileProcesses `json:"compile_processes,omitempty"`
	CompileReused    int               `json:"compile_reused"`
	Compiled         int               `json:"compiled"`
	DB               string            `json:"db"`
	Device           DeviceRef         `json:"device"`
	ElapsedS         float64           `json:"elapsed_s"`
	Evaluated        int               `json:"evaluated"`
	GPUs             []TuneGPU         `json:"gpus,omitempty"`
	Implausible      []TuneImplausible `json:"implausible,omitempty"`
	Invalid          int               `json:"invalid"`
	InvalidByStatus  map[string]int    `json:"invalid_by_status"`
	Objective        ObjectiveRef      `json:"objective"`
	Objectives       []ObjectiveRef    `json:"objectives,omitempty"`
	ParetoFront      any               `json:"pareto_front,omitempty"`
	PowerCapping     any               `json:"power_capping,omitempty"`
	Reused           int               `json:"reused"`
	Run              int64             `json:"run"`
	Space            int               `json:"space"`
	Strategy         string            `json:"strategy"`
	Time             TuneTime          `json:"time"`
	Top              []KeyValue        `json:"top,omitempty"`
}

// ObjectiveRef names an objective: its name, direction (minimize or
// maximize) and unit.
type ObjectiveRef struct {
	Direction string `json:"direction"`
	Name      string `json:"name"`
	Unit      string `json:"unit"`
}

// TuneTime is where a run's time went, s (tuner.Time).
type TuneTime struct {
	BackendS     float64 `json:"backend_s"`
	CompileS     float64 `json:"compile_s"`
	CompileWaitS float64 `json:"compile_wait_s"`
	FrameworkS   float64 `json:"framework_s"`
	WarmupS      float64 `json:"warmup_s,omitempty"` // the GPUs' warm-up, summed
}

// CompileProcesses is what a run's compile processes did (compileproc).
type CompileProcesses struct {
	Compilations int64 `json:"compilations"`
	Died         int64 `json:"died"`
	PeakRSSMiB   int64 `json:"peak_rss_mib"`
	Processes    int   `json:"processes"`
	TimedOut     int64 `json:"timed_out"`
}

// TuneBest is the best configuration: its key, objectives (the
// objective's value, time/energy/power/EDP where observed, the metrics),
// observations and parameters.
type TuneBest struct {
	GPU          string             `json:"gpu,omitempty"` // the GPU that measured it, in a run over several
	Key          string             `json:"key"`
	Objectives   map[string]float64 `json:"objectives"`
	Observations map[string]float64 `json:"observations"`
	Params       map[string]any     `json:"params"`
}

// KeyValue is a configuration and its objective value.
type KeyValue struct {
	Key   string  `json:"key"`
	Value float64 `json:"value"`
}

// TuneImplausible is a measurement left out of the ranking, and why.
type TuneImplausible struct {
	Key   string  `json:"key"`
	Value float64 `json:"value"`
	Why   string  `json:"why"`
}

func objectiveRef(o objective.Objective) ObjectiveRef {
	return ObjectiveRef{Direction: o.Direction(), Name: o.Name, Unit: o.Unit}
}

// TuneConfirmed is one configuration re-measured by confirm: its values
// of the run's objective (in its unit, as objective.unit says), their
// median and its interval at Level, and the U test's p-value against the
// next (null for the last) and whether it is significant.
type TuneConfirmed struct {
	Key         string    `json:"key"`
	Values      []float64 `json:"values"`
	Median      float64   `json:"median"`
	Low         float64   `json:"low"`
	High        float64   `json:"high"`
	Level       float64   `json:"level"`
	PNext       *float64  `json:"p_next"`
	Significant bool      `json:"significant"`
}

// TuneJSON prints a tuning run's summary as one TuneDoc: device,
// objective (or objectives), best{key, params, objectives, observations},
// pareto_front when there are several objectives, counts, invalid by
// status, implausible measurements, the power-capping ratio and db.
func TuneJSON(w io.Writer, sum *tuner.Summary, dbPath string) error {
	doc := TuneDoc{
		Device: LocalRef(sum.Device.Local), Objective: objectiveRef(sum.Objective), Strategy: sum.Strategy,
		Space: sum.SpaceSize, Evaluated: sum.Evaluated, Reused: sum.Reused, Compiled: sum.Compiled,
		Time: TuneTime{BackendS: sum.Time.Backend.Seconds(), CompileWaitS: sum.Time.CompileWait.Seconds(),
			FrameworkS: sum.Time.Framework.Seconds(), CompileS: sum.Time.Compile.Seconds(), WarmupS: sum.Time.Warmup.Seconds()},
		CompileReused: sum.CompileReused, Invalid: sum.Invalid, Run: sum.RunID, ElapsedS: sum.Elapsed.Seconds(), DB: dbPath,
		InvalidByStatus: map[string]int{},
	}
	for _, g := range sum.GPUs {
		doc.GPUs = append(doc.GPUs, TuneGPU{BusyS: g.Busy.Seconds(), Dropped: g.Dropped, Evaluated: g.Evaluated, Name: g.Name, UUID: g.UUID, WarmupS: g.Warmup.Seconds()})
	}
	if p := sum.CompilePool; p != nil {
		doc.CompileProcesses = &CompileProcesses{Processes: p.Processes, Compilations: p.Compiled, Died: p.Crashes, TimedOut: p.Timeouts, PeakRSSMiB: p.PeakRSSKiB >> 10}
	}
	if len(sum.Objectives) > 1 {
		for _, o := range sum.Objectives {
			doc.Objectives = append(doc.Objectives, objectiveRef(o))
		}
		doc.ParetoFront = frontJSON(sum)
	}
	if len(sum.Best) > 0 {
		b := sum.Best[0]
		objs := map[string]float64{sum.Objective.Name: b.Value}
		for _, k := range []string{"time", "energy", "power", "edp"} {
			if v, ok := b.Observations[k]; ok {
				objs[k] = v
			}
		}
		for k, v := range b.Metrics {
			objs[k] = v
		}
		doc.Best = &TuneBest{Key: b.Key, Params: paramMap(b.Params), Objectives: objs, Observations: b.Observations, GPU: b.GPU}
		for _, o := range sum.Best {
			doc.Top = append(doc.Top, KeyValue{o.Key, o.Value})
		}
	}
	for _, o := range sum.Evaluations {
		if !o.Valid() {
			doc.InvalidByStatus[string(o.Status)]++
		}
	}
	for _, o := range sum.Implausible {
		doc.Implausible = append(doc.Implausible, TuneImplausible{o.Key, o.Value, o.Implausible})
	}
	if r := cappingReport(sum); r != nil {
		doc.PowerCapping = r
	}
	doc.ConfirmNote = sum.ConfirmNote
	doc.ThermalNote = sum.ThermalNote
	for _, c := range sum.Confirmed {
		cj := TuneConfirmed{Key: c.Key, Values: c.Values, Median: c.Median, Low: c.Lo, High: c.Hi, Level: c.Level, Significant: c.Significant}
		if !math.IsNaN(c.PNext) {
			p := c.PNext
			cj.PNext = &p
		}
		doc.Confirmed = append(doc.Confirmed, cj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeImplausible warns of measurements that ranked before the best
// but cannot be right (package plausibility); they are not in the table.
func implausible(w io.Writer, sum *tuner.Summary) {
	for _, o := range sum.Implausible {
		fmt.Fprintf(w, "warning: %s (%s %s) would rank first but is implausible and left out: %s\n",
			o.Key, Format(o.Value), sum.Objective.Unit, o.Implausible)
	}
}

// cappingReport is the thesis's power-capping ratio over the run's valid
// configurations with a measured power: the power limit in force is the
// configuration's nvml_pwr_limit, else the device's. nil without power.
func cappingReport(sum *tuner.Summary) map[string]any {
	var samples []gpuctl.CapSample
	for _, o := range sum.Evaluations {
		p, ok := o.Observations["power"]
		if !o.Valid() || !ok {
			continue
		}
		samples = append(samples, gpuctl.CapSample{PowerW: p, CapW: o.PowerLimit(sum.Device.PowerLimitW)})
	}
	if len(samples) == 0 {
		return nil
	}
	ratio, near, total := gpuctl.CappingRatio(samples, gpuctl.CappingTolW)
	return map[string]any{"ratio": ratio, "near_cap": near, "configurations": total, "tolerance_w": float64(gpuctl.CappingTolW)}
}

func capping(w io.Writer, sum *tuner.Summary) {
	r := cappingReport(sum)
	if r == nil {
		return
	}
	fmt.Fprintf(w, "power-capping ratio: %.3f (%d of %d configurations drawing the power limit, over it, or less than %g W under it)\n",
		r["ratio"], r["near_cap"], r["configurations"], r["tolerance_w"])
}

// paramMap is a configuration's parameters by name.
func paramMap(ps []store.Param) map[string]any {
	m := make(map[string]any, len(ps))
	for _, p := range ps {
		m[p.Name] = p.Value
	}
	return m
}
