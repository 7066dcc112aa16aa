package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/ncupass"
	"github.com/gtune/gtune/profile"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/schedule"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
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
order in the columns of the paper's Table 4.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSchedule(cmd.Context(), cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.tune.backend, "backend", "auto", "GPU backend for the kernels' resources: auto, cuda or sim")
	intFlag(fl, &f.tune.device, "device", 0, 0, 1023, "GPU index (CUDA device ordinal)")
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
	floatFlag(fl, &f.balance, "balance", 1, 0, 1e6, true, "U_gpu_b, the optimum utilisation balance the score aims at")
	floatFlag(fl, &f.devLimit, "deviation-limit", 4, 1, 1e6, true, "U_gpu_b_devlim, how many times above or below U_gpu_b a pair's balance still scores")
	fl.StringVar(&f.statistic, "statistic", schedule.Median, "with orders measured several times (tune --orders --repeat N): rank each order by the median or the fastest of its repeats, and give the percentile's 95 % interval from their noise and the split-half correlation of the ranking")
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
	sp, lay, err := workloadSpace(ctx, set, false, space.DefaultMaxConfigurations)
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
	d, err := tuner.Description(be)
	if err != nil {
		return inputError{err}
	}
	dev, err := schedule.DeviceFrom(d)
	if err != nil {
		return err
	}
	source := profileSource(be, f)
	ks, err := workloadKernels(ctx, cmd.ErrOrStderr(), set, lay, cfg, w, be, db, source, f)
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
	rank, err := rankOrder(ctx, set, db, be.Device().UUID, cfg, sched.Order, f.tune.objective, f.statistic)
	if err != nil {
		return err
	}
	out.Ranking = rank
	return report.PrintSchedule(cmd.OutOrStdout(), out, f.tune.asJSON)
}

// workloadKernels profiles each kernel of w for the symbiotic order: its
// launch geometry from its spec, registers and shared memory as compiled
// (tuner.ResourceProvider: the database, the backend, the spec's
// declarations), and its instruction mix from source (ncu or model).
func workloadKernels(ctx context.Context, log io.Writer, set *workload.Set, lay *workload.Layout, cfg []expr.Value, w *workload.Workload, be backend.Backend, db *store.DB, source string, f scheduleFlags) ([]schedule.Kernel, error) {
	var ncu []profile.Mix
	if source == "ncu" {
		var err error
		if ncu, err = ncuMixes(ctx, f, set, lay, cfg); err != nil {
			return nil, err
		}
	}
	var ks []schedule.Kernel
	for i, m := range set.Members {
		l := w.Launches[i]
		j, err := m.Spec.Job(l.Config)
		if err != nil {
			return nil, err
		}
		msp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return nil, inputError{err}
		}
		mi, ok := msp.Lookup(m.Spec.Key(l.Config))
		if !ok {
			return nil, fmt.Errorf("kernel %s: configuration %s is not in its own space", m.Name, m.Spec.Key(l.Config))
		}
		regs, smem, err := tuner.NewResourceProvider(ctx, log, be, m.Spec, msp, db).Resources(mi)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: registers and shared memory: %w", m.Name, err)
		}
		mix := profile.Mix{}
		if source == "ncu" {
			mix = ncu[i]
		} else if mix, err = profile.FromWork(j); err != nil {
			return nil, fmt.Errorf("kernel %s: %w", m.Name, err)
		}
		rsp, rdp, rmem, nmem, err := mix.Ratios()
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", m.Name, err)
		}
		ks = append(ks, schedule.Kernel{
			Name: m.Name, Blocks: j.Grid[0] * j.Grid[1] * j.Grid[2], ThreadsPerBlock: j.Block[0] * j.Block[1] * j.Block[2],
			RegistersPerThread: regs, SharedMemoryPerBlock: smem,
			Instructions: mix.SP + mix.DP + mix.Mem, Rsp: rsp, Rdp: rdp, Rmem: rmem, MemBytesPerInst: nmem,
		})
	}
	return ks, nil
}

// rankOrder ranks order among the orders of configuration cfg (of the
// combined space without orders) measured in db on the device, by
// objective; nil when fewer than two were measured or order was not.
// Where every order was measured more than once (tune --repeat), each
// order's value is statistic over its repeats (schedule.RankRepeated).
func rankOrder(ctx context.Context, set *workload.Set, db *store.DB, uuid string, cfg []expr.Value, order []int, objective, statistic string) (*report.OrderRanking, error) {
	spo, layo, err := set.Space(ctx, true, space.BuildOptions{})
	if err != nil {
		return nil, nil // too many kernels to order: nothing was measured
	}
	prev, err := db.Previous(set.Hash(), uuid)
	if err != nil {
		return nil, err
	}
	prefix := spec.KeyOf(cfg) + ","
	var values []float64
	var samples [][]float64
	repeated := true
	chosen, found, at := 0.0, false, 0
	name := set.OrderName(order)
	for _, key := range sortedKeys(prev) {
		e := prev[key]
		if e.Status != string(backend.StatusValid) || !strings.HasPrefix(key, prefix) {
			continue
		}
		v, ok := e.Observations[objective]
		if !ok {
			continue
		}
		i, ok := spo.Lookup(key)
		if !ok {
			continue
		}
		if spo.Values(i)[layo.Order].Str() == name {
			chosen, found, at = v, true, len(values)
		}
		values = append(values, v)
		rs, err := db.Repeats(e.ID)
		if err != nil {
			return nil, err
		}
		var sample []float64
		for _, rep := range rs {
			if x, ok := rep.Observations[objective]; ok && rep.Status == string(backend.StatusValid) {
				sample = append(sample, x)
			}
		}
		repeated = repeated && len(sample) > 1
		samples = append(samples, sample)
	}
	if len(values) < 2 || !found {
		return nil, nil
	}
	orders := len(spo.Params()[layo.Order].Values)
	if repeated {
		rr, err := schedule.RankRepeated(samples, at, statistic, 0, 1)
		if err != nil {
			return nil, err
		}
		return &report.OrderRanking{Objective: objective, Ranking: rr.Ranking, Sample: rr.SampledFrom(orders), Repeated: &rr}, nil
	}
	r, err := schedule.Rank(values, chosen)
	if err != nil {
		return nil, err
	}
	return &report.OrderRanking{Objective: objective, Ranking: r, Sample: r.SampledFrom(orders)}, nil
}

// ncuMixes profiles one launch of every kernel of configuration cfg of
// set's combined space (laid out as lay says) with Nsight Compute: a
// CUDA worker started under ncu (cuda.Options.Wrapper; read-only,
// profile.NcuArgs, its output to a log file so that the worker's pipes
// stay its own) measures the plan once through the tuner, issued in
// member order, one timed run, no verification, into a scratch database;
// the first launch of each kernel is its profile.
func ncuMixes(ctx context.Context, f scheduleFlags, set *workload.Set, lay *workload.Layout, cfg []expr.Value) ([]profile.Mix, error) {
	members := make([]int, len(set.Members))
	for i := range members {
		members[i] = i
	}
	one, err := set.Fix(lay, cfg, members)
	if err != nil {
		return nil, err
	}
	no := false
	one.Measurement = &workload.FileMeasurement{Iterations: 1, Verify: &no, Energy: &no}
	sp, oneLay, err := one.Space(ctx, false, space.BuildOptions{})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gtune-ncu-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	log, _, err := ncupass.MeasureUnder(ctx, ncupass.Options{Ncu: f.ncu, Device: f.tune.device, Version: version}, profile.NcuArgs(len(set.Members)), tmp, tuner.Config{Subject: tuner.FromWorkload(one, oneLay), Space: sp})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	ls, err := profile.ParseNcuCSV(log)
	if err != nil {
		return nil, err
	}
	if len(ls) < len(set.Members) {
		return nil, fmt.Errorf("ncu profiled %d launches of the workload's %d kernels", len(ls), len(set.Members))
	}
	out := make([]profile.Mix, len(set.Members))
	for i, m := range set.Members {
		if !strings.HasPrefix(ls[i].Kernel, m.Spec.KernelName) {
			return nil, fmt.Errorf("ncu's launch %d is %s, kernel %s is %s", i, ls[i].Kernel, m.Name, m.Spec.KernelName)
		}
		out[i] = ls[i].Mix
	}
	return out, nil
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

// profileSource is where the kernels' profiles come from: --profile, or
// for auto Nsight Compute where the GPU is real and ncu is on the PATH,
// else the specs' declared work (model).
func profileSource(be backend.Backend, f scheduleFlags) string {
	if f.profileSource != "auto" {
		return f.profileSource
	}
	if !backend.TraitsOf(be).Modelled { // a model has no counters
		if _, err := exec.LookPath(f.ncu); err == nil {
			return "ncu"
		}
	}
	return "model"
}
