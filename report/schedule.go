package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/gtune/gtune/schedule"
)

// Schedule is what gtune schedule prints: the kernels' profiles, the
// symbiotic order with its execution rounds, the rounds the block
// scheduler makes of it, and its ranking among measured orders.
type Schedule struct {
	Workload    string                  `json:"workload"`
	Device      DeviceRef               `json:"device"`
	Profile     string                  `json:"profile"` // where the instruction mix came from: ncu or model
	Kernels     []schedule.Kernel       `json:"kernels"`
	Schedule    *schedule.Schedule      `json:"schedule"`
	OrderName   string                  `json:"order"`
	BlockRounds [][]schedule.RoundShare `json:"block_rounds"`
	Ranking     *OrderRanking           `json:"ranking,omitempty"`
	// Refined is the order that measurement refined the symbiotic
	// order to (gtune schedule's --refine), nil where not refined.
	Refined *Refined `json:"refined,omitempty"`
}

// Refined is the best launch order order_search measured from the
// symbiotic order (a move taken only where the repeats of the two orders
// differ: the Mann-Whitney U test), and its place among every order
// measured on the GPU.
type Refined struct {
	Order    string        `json:"order"`
	Measured int           `json:"measured"` // launch orders order_search measured (reused ones included)
	Repeats  int           `json:"repeats"`  // measurements of each
	Run      int64         `json:"run"`      // its run in the results database
	Ranking  *OrderRanking `json:"ranking,omitempty"`
}

// OrderRanking is the order's place among the measured orders.
type OrderRanking struct {
	Objective string `json:"objective"`
	schedule.Ranking
	// Sample is set when the measured orders are a sample of all of
	// them: the percentile's 95 % interval over all orders.
	Sample *schedule.Sample `json:"sample,omitempty"`
	// Repeated is set when every order was measured more than once: the
	// statistic its value is, the percentile's interval from the
	// repeats' noise and the split-half correlation.
	Repeated *schedule.Repeated `json:"repeated,omitempty"`
}

// PrintSchedule prints s as a table, or one JSON document.
func PrintSchedule(out io.Writer, s *Schedule, asJSON bool) error {
	if s.Refined != nil {
		// The refinement measured the neighbours of its path, not a
		// uniform sample of the orders: no percentile over all orders
		// is inferred from the measured ones.
		for _, r := range []*OrderRanking{s.Ranking, s.Refined.Ranking} {
			if r != nil {
				r.Sample = nil
			}
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(out, "workload %s on %s; instruction mix from %s\n", s.Workload, s.Device.Name, s.Profile)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tblocks\tthreads\tregisters\tshared B\tblocks/SM\twarps/SM\tR_sp\tR_dp\tR_mem\tN_mem B\tU_gpu_b\t")
	for i, k := range s.Kernels {
		p := s.Schedule.Profiles[i]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.1f\t%s\t\n", k.Name, k.Blocks, k.ThreadsPerBlock,
			k.RegistersPerThread, k.SharedMemoryPerBlock, p.BlocksPerSM, p.Warps, k.Rsp, k.Rdp, k.Rmem, k.MemBytesPerInst, balance(p.Balance))
	}
	tw.Flush()
	fmt.Fprintf(out, "symbiotic order: %s\n", s.OrderName)
	fmt.Fprintln(out, "execution rounds (Figure 1):")
	for r, round := range s.Schedule.Rounds {
		names := make([]string, len(round))
		for i, k := range round {
			names[i] = s.Kernels[k].Name
		}
		fmt.Fprintf(out, "  round %d: %s\n", r+1, strings.Join(names, ", "))
	}
	fmt.Fprintln(out, "rounds of the block scheduler in this order (left-over policy; thread blocks per kernel):")
	for r, round := range s.BlockRounds {
		parts := make([]string, len(round))
		for i, sh := range round {
			parts[i] = fmt.Sprintf("%s×%d", s.Kernels[sh.Kernel].Name, sh.Blocks)
		}
		fmt.Fprintf(out, "  round %d: %s\n", r+1, strings.Join(parts, " "))
	}
	if s.Refined == nil {
		fmt.Fprintf(out, "refine it by measurement: gtune tune %s --orders --strategy order_search --strategy-param start=%s (or gtune schedule --refine N)\n", s.Workload, s.OrderName)
	}
	printRanking(out, "this order", s.Ranking)
	if rf := s.Refined; rf != nil {
		fmt.Fprintf(out, "refined by measurement (order_search from the symbiotic order, %d repeats each, a move only where they differ by the U test; %d orders measured, run %d): %s\n",
			rf.Repeats, rf.Measured, rf.Run, rf.Order)
		printRanking(out, "the refined order", rf.Ranking)
	}
	return nil
}

// printRanking prints an order's place among the measured orders; what
// names the order.
func printRanking(out io.Writer, what string, r *OrderRanking) {
	if r == nil {
		return
	}
	unit := "ms"
	if r.Objective == "energy" {
		unit = "J"
	}
	by := r.Objective
	if rp := r.Repeated; rp != nil {
		by = fmt.Sprintf("%s, each order's %s of %d or more repeats", r.Objective, rp.Statistic, rp.Repeats)
	}
	fmt.Fprintf(out, "measured orders (%d, %s): best %.4g %s, median %.4g, worst %.4g; %s %.4g %s\n",
		r.N, by, r.Best, unit, r.Median, r.Worst, what, r.Value, unit)
	fmt.Fprintf(out, "  percentile %.1f, %.2f %% from the best, %.3f× over the median, %.3f× over the worst\n",
		r.Percentile, 100*r.FromBest, r.OverMedian, r.OverWorst)
	if rp := r.Repeated; rp != nil {
		fmt.Fprintf(out, "  percentile from the repeats' noise: %.1f to %.1f (95 %%, bootstrap of each order's repeats, %d resamples)\n", rp.Low, rp.High, rp.Resamples)
		if rp.SplitHalf != nil {
			stat := map[string]string{schedule.Median: "medians", schedule.Fastest: "fastest runs"}[rp.Statistic]
			fmt.Fprintf(out, "  split-half Spearman correlation of the orders' %s (the first %d repeats against the rest): %.3f\n", stat, rp.SplitHalfRepeats, *rp.SplitHalf)
		}
	}
	if sm := r.Sample; sm != nil {
		fmt.Fprintf(out, "  the measured orders are a sample of the %d: percentile over all of them %.1f to %.1f (95 %%, Clopper-Pearson)\n",
			sm.Orders, sm.Low, sm.High)
	}
}

func balance(u float64) string {
	if math.IsInf(u, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.3f", u)
}
