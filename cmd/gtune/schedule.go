package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/ncupass"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/schedule"
	"github.com/gtune/gtune/schedule/symbiotic"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newScheduleCmd) }

type scheduleFlags struct {
	tune          tuneFlags
	config        string
	profileSource string
	ncu           string
	balance       float64
	devLimit      float64
	opposingOnly  bool
	statistic     string
	refine        int
	refineRepeat  int
}

func newScheduleCmd() *cobra.Command {
	var f scheduleFlags
	c := &cobra.Command{
		Use:   "schedule WORKLOAD",
		Short: "Order a workload's concurrent kernels for symbiosis (symbiotic-scheduling-concurrent-kernels.md, Figure 1) and show the execution rounds",
		Long: `Compute the symbiotic launch order of a workload's kernels: each kernel's profile (registers, shared memory,
warps and thread blocks per SM from compilation and the occupancy calculator; instruction mix and memory traffic from
Nsight Compute, or from the work the spec declares), the pairwise symbiosis scores and the greedy rounds of Figure 1
of symbiotic-scheduling-concurrent-kernels.md, and the rounds the block scheduler makes of that order. With --db
holding a run of gtune tune WORKLOAD --orders (brute force) on the same GPU, the order is ranked among every measured
order in the columns of the paper's Table 4. Then (--refine, default) the order is refined by measurement: order_search
from it, each order measured --refine-repeat times into --db, a move taken only where the repeats differ (U test); the
refined order is ranked as well.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSchedule(cmd.Context(), cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.tune.backend, "backend", "auto", "GPU backend for the kernels' resources: auto, cuda or sim")
	flagrange.Int(fl, &f.tune.device, "device", 0, 0, 1023, "GPU index (CUDA device ordinal)")
	fl.StringVar(&f.tune.simDevice, "sim-device", "", "device-database id of the simulated GPU")
	fl.StringVar(&f.tune.db, "db", "gtune.db", "results database: the kernels' resources as measured, and the measured orders to rank against")
	fl.StringVar(&f.tune.objective, "objective", "time", "the measured objective orders are ranked by: time or energy")
	fl.BoolVar(&f.tune.asJSON, "json", false, "print one JSON document")
	fl.Uint64Var(&f.tune.seed, "seed", 1, "seed of the simulator")
	fl.StringVar(&f.config, "config", "", "configuration key of the combined space whose kernels are ordered (default: the first)")
	fl.StringVar(&f.profileSource, "profile", "auto", "instruction mix: ncu (Nsight Compute on the GPU), model (the specs' declared work) or auto (ncu on a real GPU when found, else model)")
	fl.StringVar(&f.ncu, "ncu", "ncu", "the Nsight Compute command")
	// U_gpu_b is a ratio of utilisations: positive. A deviation limit of
	// 1 or less makes every balance other than U_gpu_b score 0 (Figure 1,
	// lines 27 and 29), so it must be above 1.
	flagrange.Float(fl, &f.balance, "balance", 1, 0, 1e6, true, "U_gpu_b, the optimum utilisation balance the score aims at")
	flagrange.Float(fl, &f.devLimit, "deviation-limit", 4, 1, 1e6, true, "U_gpu_b_devlim, how many times above or below U_gpu_b a pair's balance still scores")
	fl.StringVar(&f.statistic, "statistic", schedule.Median, "with orders measured several times (tune --orders --repeat N): rank each order by the median or the fastest of its repeats, and give the percentile's 95 % interval from their noise and the split-half correlation of the ranking")
	flagrange.Int(fl, &f.refine, "refine", 40, 0, 1<<20, "then refine the order by measurement: order_search from it, at most this many launch orders measured into --db, a move taken only where --refine-repeat repeats of the two orders differ (U test); 0: the symbiotic order alone")
	flagrange.Int(fl, &f.refineRepeat, "refine-repeat", 5, 2, 1000, "with --refine: measurements of each launch order")
	fl.BoolVar(&f.opposingOnly, "opposing-only", false, "score a pair's balance only when its two sets lie on opposite sides of U_gpu_b (the prose of section 4.3) instead of Figure 1's printed line 23")
	return c
}

func runSchedule(ctx context.Context, cmd *cobra.Command, path string, f scheduleFlags) error {
	if err := checkScheduleFlags(f); err != nil {
		return err
	}
	set, err := loadWorkload(path)
	if err != nil {
		return err
	}
	sp, lay, err := set.NonEmptySpace(ctx, false, space.DefaultMaxConfigurations)
	if err != nil {
		return err
	}
	if len(set.Members) < 2 {
		return badInput("%s: one kernel has one launch order", path)
	}
	idx := 0
	if f.config != "" {
		i, ok := sp.Lookup(f.config)
		if !ok {
			return badInput("%s: %q is not a configuration of the combined space", path, f.config)
		}
		idx = i
	}
	cfg := sp.Values(idx)
	w, err := set.Workload(lay, cfg)
	if err != nil {
		return err
	}
	db, err := store.Open(f.tune.db)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()
	be, err := openBackend(ctx, cmd.ErrOrStderr(), set.Members[0].Spec, f.tune)
	if err != nil {
		return err
	}
	defer be.Close()
	dev, err := symbiotic.Device(be)
	if err != nil {
		return err
	}
	source := symbiotic.ProfileSource(be, f.profileSource, f.ncu)
	ks, err := symbiotic.Kernels(ctx, cmd.ErrOrStderr(), set, lay, cfg, w, be, db, source, ncupass.Options{Ncu: f.ncu, Device: f.tune.device, Version: version, CompileCache: openCompileCache(cmd, f.tune)})
	if err != nil {
		return err
	}
	sched, err := schedule.Symbiotic(dev, ks, schedule.Options{TargetBalance: f.balance, DeviationLimit: f.devLimit, OpposingOnly: f.opposingOnly})
	if err != nil {
		return err
	}
	out := &report.Schedule{
		Workload: set.Path, Device: report.LocalRef(be.Device().Local), Profile: source, Kernels: ks, Schedule: sched,
		OrderName:   set.OrderName(sched.Order),
		BlockRounds: schedule.BlockRounds(dev, ks, sched.Order),
	}
	uuid := be.Device().UUID
	rank := func(order []int) (*report.OrderRanking, error) {
		return symbiotic.Rank(ctx, set, db, uuid, cfg, order, f.tune.objective, f.statistic)
	}
	if f.refine > 0 {
		be.Close() // the refinement's run opens the GPU again
		var order []int
		if out.Refined, order, err = refineOrder(ctx, cmd, set, out.OrderName, f); err != nil {
			return err
		}
		if out.Refined.Ranking, err = rank(order); err != nil {
			return err
		}
	}
	if out.Ranking, err = rank(sched.Order); err != nil {
		return err
	}
	return report.PrintSchedule(cmd.OutOrStdout(), out, f.tune.asJSON)
}

// refineOrder runs order_search from the symbiotic order start as gtune
// tune WORKLOAD --orders --strategy order_search would, into the same
// database on the same GPU (its progress on stderr): its best order.
func refineOrder(ctx context.Context, cmd *cobra.Command, set *workload.Set, start string, f scheduleFlags) (*report.Refined, []int, error) {
	args := []string{set.Path, "--orders", "--strategy", "order_search", "--strategy-param", "start=" + start, "--max-evals", strconv.Itoa(f.refine),
		"--repeat", strconv.Itoa(f.refineRepeat), "--objective", f.tune.objective, "--energy=" + strconv.FormatBool(f.tune.objective == "energy"),
		"--db", f.tune.db, "--backend", f.tune.backend, "--device", strconv.Itoa(f.tune.device), "--seed", strconv.FormatUint(f.tune.seed, 10), "--json", "--no-progress"}
	if f.tune.simDevice != "" {
		args = append(args, "--sim-device", f.tune.simDevice)
	}
	t := newTuneCmd()
	t.SilenceUsage, t.SilenceErrors = true, true // the error is schedule's to report
	var doc bytes.Buffer
	t.SetArgs(args)
	t.SetOut(&doc)
	t.SetErr(cmd.ErrOrStderr())
	if err := t.ExecuteContext(ctx); err != nil {
		return nil, nil, err
	}
	var sum struct {
		Run       int64 `json:"run"`
		Evaluated int   `json:"evaluated"`
		Reused    int   `json:"reused"`
		Best      struct {
			Params map[string]any `json:"params"`
		} `json:"best"`
	}
	if err := json.Unmarshal(doc.Bytes(), &sum); err != nil {
		return nil, nil, fmt.Errorf("schedule --refine: reading the refinement's summary: %w", err)
	}
	name, _ := sum.Best.Params["order"].(string)
	order, err := set.ParseOrder(name)
	if err != nil {
		return nil, nil, fmt.Errorf("schedule --refine: run %d's best launch order: %w", sum.Run, err)
	}
	return &report.Refined{Order: name, Measured: sum.Evaluated + sum.Reused, Repeats: f.refineRepeat, Run: sum.Run}, order, nil
}

// checkScheduleFlags checks schedule's own flags: the objective (time
// or energy), the statistic, the profile's source (Nsight Compute
// profiles a real GPU: not a modelled one). Errors are bad input.
func checkScheduleFlags(f scheduleFlags) error {
	if f.tune.objective != "time" && f.tune.objective != "energy" {
		return badInput("--objective %q: orders are ranked by time or energy", f.tune.objective)
	}
	if _, err := schedule.Statistic(f.statistic); err != nil {
		return badInput("--statistic %q: %s or %s", f.statistic, schedule.Median, schedule.Fastest)
	}
	switch f.profileSource {
	case "ncu", "model", "auto":
	default:
		return badInput("--profile %q: ncu, model or auto", f.profileSource)
	}
	if f.profileSource == "ncu" && modelled(f.tune.backend) {
		return badInput("--profile ncu profiles a real GPU with Nsight Compute; the simulated GPU has no counters (--profile model reads the specs' declared work)")
	}
	return nil
}
