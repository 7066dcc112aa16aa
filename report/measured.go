package report

import (
	"fmt"
	"io"

	"github.com/gtune/gtune/tuner"
)

// Measured writes what gtune measure measured on each GPU (sums, one
// run each): with asJSON one document, or one per GPU where devices
// (--devices); else the GPUs side by side (AcrossGPUs), or the one
// GPU's observations. plan and launches name the plan and its launches
// in issue order, on streams streams. It returns err, the runs' errors,
// unless writing fails.
func Measured(out io.Writer, sums []*tuner.Summary, err error, plan string, launches []string, streams int, dbPath string, asJSON, devices bool) error {
	if asJSON {
		var docs []MeasureDoc
		for _, sum := range sums {
			if sum == nil || len(sum.Evaluations) == 0 {
				continue
			}
			o := sum.Evaluations[0]
			docs = append(docs, MeasureDoc{Device: LocalRef(sum.Device.Local), Run: sum.RunID, Key: o.Key, Plan: plan, Launches: launches,
				Status: string(o.Status), Reason: o.Reason, Observations: o.Typed.Sorted(), DB: dbPath})
		}
		switch {
		case len(docs) == 0:
			return err
		case !devices:
			if e := WriteJSON(out, docs[0]); e != nil {
				return e
			}
		default:
			if e := WriteJSON(out, docs); e != nil {
				return e
			}
		}
		return err
	}
	if len(sums) > 1 {
		AcrossGPUs(out, sums, plan, len(launches), streams, dbPath)
		return err
	}
	sum := sums[0]
	if sum == nil || len(sum.Evaluations) == 0 {
		return err
	}
	o := sum.Evaluations[0]
	fmt.Fprintf(out, "%s: plan %s, %d launch(es) on %d stream(s): %s\n", sum.Device.Name, plan, len(launches), streams, o.Status)
	if o.Reason != "" {
		fmt.Fprintf(out, "  %s\n", o.Reason)
	}
	WriteObservations(out, o.Typed, launches)
	fmt.Fprintf(out, "stored as run %d in %s\n", sum.RunID, dbPath)
	return err
}
