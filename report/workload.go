package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/strategy"
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

// WorkloadSpaceOf counts a workload's space for gtune space WORKLOAD:
// each kernel's space and its occupancy-reduced part on dev
// (strategy.ReduceKernel, the reduction of Algorithms 3 and 4 of
// multi-kernel-autotuning-performance-energy.md, over the resources the
// spec declares; a kernel without them, or without a configuration
// reaching minOcc, says why and leaves the reduced size unknown, -1),
// and the combined space sp (of layout lay) with its reduced size, GPU
// settings and launch orders included. Errors: a kernel's space that
// does not build.
func WorkloadSpaceOf(ctx context.Context, set *workload.Set, lay *workload.Layout, sp *space.Space, dev *device.Description, minOcc float64) (*WorkloadSpace, error) {
	out := &WorkloadSpace{Workload: set.Path, Device: EntryRef(dev), MinOccupancy: minOcc, Combined: sp.Len(), Reduced: 1, Settings: 1, Orders: 1}
	for i, m := range set.Members {
		msp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return nil, err
		}
		k := WorkloadKernel{Name: m.Name, Spec: m.Spec.Path, Stream: m.Stream, Valid: msp.Len(), Reduced: -1}
		if res := tuner.DeclaredResources(m.Spec, msp); res == nil {
			k.Why = "the spec declares no Gtune.Simulation.Registers"
		} else {
			t := &strategy.Target{Device: dev, Geometry: tuner.Geometry(m.Spec, msp)}
			if cands, err := strategy.ReduceKernel(strategy.Part{Name: m.Name, Space: msp, Target: t, Resources: res}, minOcc); err != nil {
				k.Why = err.Error()
			} else {
				k.Reduced, k.MaxOccupancy = len(cands), cands[0].Occupancy
			}
		}
		if k.Reduced < 0 || out.Reduced < 0 {
			out.Reduced = -1
		} else {
			out.Reduced *= k.Reduced
		}
		out.Kernels = append(out.Kernels, k)
	}
	for _, p := range set.Settings {
		out.Settings *= len(p.Values)
	}
	if lay.Order >= 0 {
		out.Orders = len(lay.Orders)
	}
	if out.Reduced >= 0 {
		out.Reduced *= out.Settings * out.Orders
	}
	return out, nil
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
