package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

// WorkloadKernel is one kernel's line of a workload's space: its own
// valid configurations and how many the occupancy-based reduction keeps
// (multi-kernel-autotuning-performance-energy.md, section III.A);
// Reduced is -1 when it could not be computed, Why says why.
type WorkloadKernel struct {
	Name    string `json:"name"`
	Spec    string `json:"spec"`
	Stream  int    `json:"stream"`
	Valid   int    `json:"valid"`
	Reduced int    `json:"reduced"`
	// MaxOccupancy is the highest theoretical occupancy of its
	// configurations, 0..1 (the reduction keeps those of it when none
	// reaches the threshold).
	MaxOccupancy float64 `json:"max_occupancy"`
	Why          string  `json:"why,omitempty"`
}

// WorkloadSpace is the combined space of a workload: the product of the
// kernels' spaces, times the chip's GPU settings (and launch orders when
// counted), and the same product over the reduced spaces.
type WorkloadSpace struct {
	Workload     string           `json:"workload"`
	Device       DeviceRef        `json:"device"`
	MinOccupancy float64          `json:"min_occupancy"`
	Kernels      []WorkloadKernel `json:"kernels"`
	Settings     int              `json:"settings"` // combinations of the chip's GPU settings
	Orders       int              `json:"orders"`   // launch orders counted (1: the written one)
	Combined     int              `json:"combined"`
	Reduced      int              `json:"reduced"` // -1: unknown
}

// PrintWorkloadSpace prints a workload's space: one line per kernel,
// then the combined and the reduced sizes; with asJSON one document.
func PrintWorkloadSpace(out io.Writer, s *WorkloadSpace, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(out, "workload %s: %d kernels; occupancy on %s, kept at ≥ %.0f %%\n", s.Workload, len(s.Kernels), s.Device.ID, 100*s.MinOccupancy)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tstream\tvalid\treduced\tbest occupancy\tspec")
	for _, k := range s.Kernels {
		red, occ := fmt.Sprint(k.Reduced), fmt.Sprintf("%.1f %%", 100*k.MaxOccupancy)
		if k.Reduced < 0 {
			red, occ = "?", "?"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", k.Name, k.Stream, k.Valid, red, occ, k.Spec)
	}
	tw.Flush()
	for _, k := range s.Kernels {
		if k.Why != "" {
			fmt.Fprintf(out, "%s: reduced space unknown: %s\n", k.Name, k.Why)
		}
	}
	if s.Settings > 1 {
		fmt.Fprintf(out, "GPU settings: %d combinations\n", s.Settings)
	}
	if s.Orders > 1 {
		fmt.Fprintf(out, "launch orders: %d\n", s.Orders)
	}
	fmt.Fprintf(out, "combined configurations: %d\n", s.Combined)
	if s.Reduced >= 0 {
		fmt.Fprintf(out, "after occupancy reduction: %d\n", s.Reduced)
	}
	return nil
}

// KernelTimes prints the best configuration's time per kernel of a
// workload run (each kernel's launch, overlapping the others').
func KernelTimes(out io.Writer, set *workload.Set, sum *tuner.Summary) {
	if len(sum.Best) == 0 || sum.Best[0].KernelTimes == nil {
		return
	}
	fmt.Fprintln(out, "best configuration, time per kernel (its launch's events, overlapping the others):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for i, t := range sum.Best[0].KernelTimes {
		v := "-"
		if !math.IsNaN(t) {
			v = fmt.Sprintf("%.4f ms", t)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", set.Members[i].Name, v)
	}
	tw.Flush()
}
