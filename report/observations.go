package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/gtune/gtune/measure"
)

// WriteObservations prints typed observations as a table, the whole plan
// first and then each launch (launches names them, indexed like the
// plan's launches): name, value, unit and the method that measured it.
func WriteObservations(w io.Writer, obs measure.Observations, launches []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scope\tobservation\tvalue\tunit\tmethod")
	for _, o := range obs.Sorted() {
		scope := "plan"
		if o.Launch != measure.PlanScope {
			scope = fmt.Sprintf("launch %d", o.Launch)
			if o.Launch < len(launches) {
				scope += " (" + launches[o.Launch] + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", scope, o.Name, formatValue(o.Value), o.Unit, o.Method)
	}
	tw.Flush()
}

// formatValue prints a value with 5 significant digits, integers whole.
func formatValue(v float64) string {
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 5, 64)
}

// MeasureDoc is gtune measure --json's document: the device, the run, the
// configuration key, the plan and its launches, the outcome and its typed
// observations, and the database.
type MeasureDoc struct {
	Device       DeviceRef            `json:"device"`
	Run          int64                `json:"run"`
	Key          string               `json:"key"`
	Plan         string               `json:"plan"`
	Launches     []string             `json:"launches"`
	Status       string               `json:"status"`
	Reason       string               `json:"reason,omitempty"`
	Observations measure.Observations `json:"observations"`
	DB           string               `json:"db"`
}

// WriteJSON writes doc indented, as every --json document is.
func WriteJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
