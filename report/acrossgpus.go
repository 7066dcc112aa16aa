package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/tuner"
)

// acrossGPUs are the plan's observations that measure --devices compares
// between GPUs, in column order.
var acrossGPUs = []string{"time", "energy", "power", "idle_power", "sm_clock", "temperature"}

// AcrossGPUs prints a plan measured on several GPUs (measure
// --devices): a row per GPU of the headline observations (acrossGPUs,
// those any GPU gave), then each one's spread, (highest − lowest) ÷
// lowest in %. Every observation is in each GPU's stored run.
func AcrossGPUs(out io.Writer, sums []*tuner.Summary, plan string, launches, streams int, db string) {
	var ok []*tuner.Summary
	for _, sum := range sums {
		if sum != nil && len(sum.Evaluations) > 0 {
			ok = append(ok, sum)
		}
	}
	if len(ok) == 0 {
		return
	}
	fmt.Fprintf(out, "%d × %s: plan %s, %d launch(es) on %d stream(s)\n", len(ok), ok[0].Device.Name, plan, launches, streams)
	var cols []string
	units := map[string]string{}
	for _, name := range acrossGPUs {
		for _, sum := range ok {
			for _, x := range sum.Evaluations[0].Typed {
				if x.Name == name && x.Launch == measure.PlanScope {
					units[name] = x.Unit
				}
			}
		}
		if _, seen := units[name]; seen {
			cols = append(cols, name)
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "GPU\tstatus\trun")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s (%s)", c, units[c])
	}
	fmt.Fprintln(tw)
	lo, hi := map[string]float64{}, map[string]float64{}
	for _, sum := range ok {
		o := sum.Evaluations[0]
		fmt.Fprintf(tw, "%s\t%s\t%d", sum.Device.UUID, o.Status, sum.RunID)
		for _, c := range cols {
			v, has := o.Typed.Get(c)
			if !has {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%.5g", v)
			if l, seen := lo[c]; !seen || v < l {
				lo[c] = v
			}
			if h, seen := hi[c]; !seen || v > h {
				hi[c] = v
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "spread\t\t")
	for _, c := range cols {
		if lo[c] > 0 {
			fmt.Fprintf(tw, "\t%.2f %%", 100*(hi[c]-lo[c])/lo[c])
		} else {
			fmt.Fprint(tw, "\t-")
		}
	}
	fmt.Fprintln(tw)
	tw.Flush()
	for _, sum := range ok {
		if o := sum.Evaluations[0]; o.Reason != "" {
			fmt.Fprintf(out, "%s: %s\n", sum.Device.UUID, o.Reason)
		}
	}
	fmt.Fprintf(out, "every observation of each GPU is stored in %s (gtune show RUN)\n", db)
}
