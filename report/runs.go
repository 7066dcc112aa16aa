package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/stats"
	"github.com/gtune/gtune/store"
)

// RunRow is one run as `gtune runs` lists it.
type RunRow struct {
	ID           int64          `json:"run"`
	Started      time.Time      `json:"started"`
	Status       string         `json:"status"`
	Kernel       string         `json:"kernel"`
	Spec         string         `json:"spec"`
	Device       DeviceRef      `json:"device"`
	Strategy     string         `json:"strategy"`
	Objective    string         `json:"objective"`
	Valid        int            `json:"valid"`
	Invalid      int            `json:"invalid"`
	ByStatus     map[string]int `json:"by_status"`
	ElapsedS     float64        `json:"elapsed_s,omitempty"` // 0 while running
	GtuneVersion string         `json:"gtune_version"`
}

// Rows joins runs with their evaluation counts (store.StatusCounts).
func Rows(runs []*store.Run, counts map[int64]map[string]int) []RunRow {
	out := make([]RunRow, len(runs))
	for i, r := range runs {
		row := RunRow{ID: r.ID, Started: r.StartedAt, Status: r.Status, Kernel: r.Kernel, Spec: r.SpecPath, Device: RunRef(r),
			Strategy: r.Strategy, Objective: r.Objective, ByStatus: counts[r.ID], GtuneVersion: r.GtuneVersion}
		if row.ByStatus == nil {
			row.ByStatus = map[string]int{}
		}
		// A run with several objectives (a Pareto front) lists them all;
		// the first is the one its strategy optimised.
		if os, ok := r.Settings["objectives"].([]any); ok && len(os) > 1 {
			names := make([]string, 0, len(os))
			for _, o := range os {
				if n, ok := o.(string); ok {
					names = append(names, n)
				}
			}
			row.Objective = strings.Join(names, ",")
		}
		for st, n := range row.ByStatus {
			if st == "valid" {
				row.Valid += n
			} else {
				row.Invalid += n
			}
		}
		if !r.EndedAt.IsZero() {
			row.ElapsedS = r.EndedAt.Sub(r.StartedAt).Seconds()
		}
		out[i] = row
	}
	return out
}

// RunsTable prints runs, one line each, oldest first.
func RunsTable(w io.Writer, rows []RunRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tstarted (UTC)\tstatus\tkernel\tdevice\tstrategy\tobjective\tvalid\tinvalid\tduration")
	for _, r := range rows {
		dur := "-"
		if r.ElapsedS > 0 {
			dur = (time.Duration(r.ElapsedS * float64(time.Second))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.ID, r.Started.UTC().Format("2006-01-02 15:04:05"), r.Status,
			r.Kernel, r.Device.Name, r.Strategy, r.Objective, r.Valid, r.Invalid, dur)
	}
	tw.Flush()
}

// RunsJSON prints runs as a JSON array.
func RunsJSON(w io.Writer, rows []RunRow) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rows == nil {
		rows = []RunRow{}
	}
	return enc.Encode(rows)
}

// ShowTable prints one run's evaluations in the order they were made:
// key, status, objective value, time and energy where measured, and the
// first line of the reason a configuration failed; failedOnly leaves out
// the valid ones and prints each failure's whole reason after the table. obs gives an
// evaluation's typed observations when the caller wants them printed
// (nil: none).
func ShowTable(w io.Writer, run *store.Run, evals []*store.Evaluation, failedOnly bool, obs func(id int64) (measure.Observations, error)) error {
	fmt.Fprintf(w, "run %d: %s on %s (%s), strategy %s, objective %s, %s\n", run.ID, run.Kernel, run.DeviceName, run.Backend, run.Strategy, run.Objective, run.Status)
	if run.SpecPath != "" {
		fmt.Fprintf(w, "spec: %s\n", run.SpecPath)
	}
	// A run that reused evaluations of earlier runs (a re-run, a resume)
	// says so, and which run measured each.
	own, from := provenance(run, evals)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "#\tconfiguration\tstatus\tobjective\ttime (ms)\tenergy (J)\treason"
	if len(from) > 0 {
		fmt.Fprintf(w, "evaluations: %s\n", evaluationsFact(len(evals), own, from))
		head = "#\tconfiguration\tmeasured in\tstatus\tobjective\ttime (ms)\tenergy (J)\treason"
	}
	// A run that measured each configuration several times (tune
	// --repeat) shows the interval of each median time and the repeats.
	repeated := slices.ContainsFunc(evals, func(e *store.Evaluation) bool { return e.Metrics["repeats"] > 1 })
	if repeated {
		fmt.Fprintf(w, "repeats: each configuration measured %v times; the evaluation is the median repeat by time, the interval that of the median (%s)\n",
			run.Settings["repeat"], stats.MedianMethod)
		head = strings.Replace(head, "time (ms)\t", "time (ms)\tinterval (ms), repeats, level\t", 1)
	}
	fmt.Fprintln(tw, head)
	n := 0
	for i, e := range evals {
		if failedOnly && e.Status == "valid" {
			continue
		}
		n++
		val := "-"
		if e.Objective != nil {
			val = Format(*e.Objective)
		}
		num := func(k string) string {
			if v, ok := e.Observations[k]; ok {
				return Format(v)
			}
			return "-"
		}
		reason, _, _ := strings.Cut(e.Reason, "\n")
		if len(reason) > 100 {
			reason = reason[:97] + "..."
		}
		key := e.Key
		if len(from) > 0 {
			key += fmt.Sprintf("\trun %d", e.RunID)
		}
		t := num("time")
		if repeated {
			iv := "-"
			if lo, ok := e.Metrics["time_ci_low"]; ok {
				iv = fmt.Sprintf("[%s, %s] ×%d %.1f %%", Format(lo), Format(e.Metrics["time_ci_high"]), int(e.Metrics["repeats"]), 100*e.Metrics["time_ci_level"])
			}
			t += "\t" + iv
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, key, e.Status, val, t, num("energy"), reason)
	}
	tw.Flush()
	if failedOnly && n == 0 {
		fmt.Fprintln(w, "no failed configuration")
	}
	if failedOnly {
		for _, e := range evals {
			if e.Status != "valid" && e.Reason != "" {
				fmt.Fprintf(w, "\n%s (%s):\n    %s\n", e.Key, e.Status, strings.ReplaceAll(strings.TrimRight(e.Reason, "\n"), "\n", "\n    "))
			}
		}
	}
	if obs != nil {
		for _, e := range evals {
			if failedOnly && e.Status == "valid" {
				continue
			}
			o, err := obs(e.ID)
			if err != nil {
				return err
			}
			if len(o) == 0 {
				continue
			}
			fmt.Fprintf(w, "\nconfiguration %s:\n", e.Key)
			var names []string
			for _, l := range e.Launches {
				names = append(names, fmt.Sprintf("%s %s, stream %d", l.Kernel, l.Key, l.Stream))
			}
			WriteObservations(w, o, names)
		}
	}
	return nil
}

// ShowJSON prints one run and its evaluations (failedOnly: the failed
// ones) as one JSON document.
func ShowJSON(w io.Writer, run *store.Run, evals []*store.Evaluation, failedOnly bool) error {
	type ev struct {
		Key          string             `json:"key"`
		Params       map[string]any     `json:"params"`
		Status       string             `json:"status"`
		Reason       string             `json:"reason,omitempty"`
		Objective    *float64           `json:"objective,omitempty"`
		Observations map[string]float64 `json:"observations,omitempty"`
		Metrics      map[string]float64 `json:"metrics,omitempty"`
		Launches     []store.Launch     `json:"launches,omitempty"`
		// MeasuredIn is the run that measured a reused evaluation; 0
		// (left out) for the run's own.
		MeasuredIn int64 `json:"measured_in_run,omitempty"`
		// GPU is the GPU that measured it in a run over several.
		GPU string `json:"gpu,omitempty"`
	}
	var es []ev
	for _, e := range evals {
		if failedOnly && e.Status == "valid" {
			continue
		}
		es = append(es, ev{Key: e.Key, Params: paramMap(e.Params), Status: e.Status, Reason: e.Reason, Objective: e.Objective,
			Observations: e.Observations, Metrics: e.Metrics, Launches: e.Launches})
		if e.RunID != run.ID {
			es[len(es)-1].MeasuredIn = e.RunID
		}
		es[len(es)-1].GPU = e.GPU
	}
	if es == nil {
		es = []ev{}
	}
	return WriteJSON(w, struct {
		Device      DeviceRef      `json:"device"`
		Ended       time.Time      `json:"ended"`
		Evaluations []ev           `json:"evaluations"`
		Kernel      string         `json:"kernel"`
		Objective   string         `json:"objective"`
		Run         int64          `json:"run"`
		Settings    map[string]any `json:"settings"`
		Spec        string         `json:"spec"`
		Started     time.Time      `json:"started"`
		Status      string         `json:"status"`
		Strategy    string         `json:"strategy"`
	}{RunRef(run), run.EndedAt, es, run.Kernel, run.Objective, run.ID, run.Settings, run.SpecPath, run.StartedAt, run.Status, run.Strategy})
}

// ImportDoc is gtune import --json's document: the database and the run
// the file became, the device it names, the file's entries, those
// imported and the configurations of the space it lacks, the spec's hash
// and the imported statuses.
type ImportDoc struct {
	DB       string         `json:"db"`
	Device   DeviceRef      `json:"device"`
	Entries  int            `json:"entries"`
	Imported int            `json:"imported"`
	Missing  int            `json:"missing"`
	Run      int64          `json:"run"`
	Space    int            `json:"space"`
	SpecHash string         `json:"spec_hash"`
	Statuses map[string]int `json:"statuses"`
}

// provenance counts a run's evaluations by where they came from: own,
// measured by the run itself, and from, those it reused from earlier runs
// by the run that measured them (store.DB.RunEvaluations).
func provenance(run *store.Run, evals []*store.Evaluation) (own int, from map[int64]int) {
	from = map[int64]int{}
	for _, e := range evals {
		if e.RunID != run.ID {
			from[e.RunID]++
		} else {
			own++
		}
	}
	return own, from
}
