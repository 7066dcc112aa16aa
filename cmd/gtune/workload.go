package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

// loadWorkload reads a workload file; its errors are bad input.
func loadWorkload(path string) (*workload.Set, error) {
	set, err := workload.Load(path)
	if err != nil {
		return nil, inputError{err}
	}
	return set, nil
}

// workloadSpace builds the combined space of set (with the launch orders
// when orders), refusing an empty one.
func workloadSpace(ctx context.Context, set *workload.Set, orders bool, limit int) (*space.Space, *workload.Layout, error) {
	sp, lay, err := set.Space(ctx, orders, space.BuildOptions{MaxConfigurations: limit, LimitName: "--max-configurations"})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("interrupted while building the search space of %s", set.Path)
		}
		return nil, nil, inputError{err}
	}
	if sp.Len() == 0 {
		return nil, nil, badInput("%s: the combined search space has no valid configuration", set.Path)
	}
	return sp, lay, nil
}

// runTuneWorkload is gtune tune WORKLOAD: the kernels of a workload file
// tuned together over their combined space, each configuration measured
// as one plan of concurrent launches.
func runTuneWorkload(ctx context.Context, cmd *cobra.Command, path string, f tuneFlags) error {
	set, err := loadWorkload(path)
	if err != nil {
		return err
	}
	first := *set.Members[0].Spec
	first.Metrics, first.Objective, first.ObjectiveMaximize = nil, "time", false
	objs, err := resolveObjectives(&first, f.objective)
	if err != nil {
		return err
	}
	stratName := f.strategy
	if stratName == "" {
		stratName = "brute_force"
	}
	if _, err := resolveStrategy(&first, stratName); err != nil {
		return err
	}
	shardOf, err := parseShardFlag(f.shard, stratName)
	if err != nil {
		return err
	}
	if err := repeatFlags(cmd, &f); err != nil {
		return err
	}
	if err := checkCompilerOptions(f.compilerOptions); err != nil {
		return err
	}
	if len(f.compilerOptions) > 0 {
		for _, m := range set.Members {
			m.Spec.AddCompilerOptions(f.compilerOptions...)
		}
	}
	if cmd.Flags().Changed("energy") {
		on := f.energy
		for _, m := range set.Members {
			m.Spec.Measurement.Energy = &on
		}
	}
	if f.thermal != "" {
		if err := thermalFlag(cmd, f); err != nil {
			return err
		}
		for _, m := range set.Members {
			m.Spec.Measurement.Protocol.Thermal = f.thermal
		}
	}
	if modelled(f.backend) {
		for _, m := range set.Members {
			if m.Spec.Simulation == nil {
				return badInput("kernel %q (%s) has no Gtune.Simulation section: the simulated GPU needs each kernel's work", m.Name, m.Spec.Path)
			}
		}
	}
	if f.validateOnly {
		_, err := strategyParams(&first, f.strategyParams)
		return err
	}
	db, err := openRunDB(f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	f.interrupt = interrupt
	be, more, err := openBackends(ctx, cmd.ErrOrStderr(), set.Members[0].Spec, f)
	if err != nil {
		return err
	}
	defer be.Close()
	for _, g := range more {
		defer g.Close()
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	noteCalibration(cmd.ErrOrStderr(), &first, names, 1+len(more), backend.TraitsOf(be).Modelled)
	if d, err := tuner.Description(be); err == nil {
		var warn strings.Builder
		if err := checkWorkloadMembers(ctx, set, d, &warn); err != nil {
			return err
		}
		for _, w := range problems0(warn.String()) {
			fmt.Fprintln(cmd.ErrOrStderr(), "gtune: warning:", w)
		}
	}
	gr, err := gpuctl.SetupWorkload(cmd.ErrOrStderr(), set, be, f.gpu, db.Path())
	if err != nil {
		return err
	}
	defer gr.Close()
	if err := gr.AddGPUs(more); err != nil {
		return err
	}
	sp, lay, err := workloadSpace(ctx, set, f.orders, f.limits.maxConfigs)
	if err != nil {
		return err
	}
	if sp, err = shardOf(cmd, sp); err != nil {
		return err
	}
	params, err := strategyParams(&first, f.strategyParams)
	if err != nil {
		return err
	}
	cfg := tuner.Config{
		Subject: tuner.FromWorkload(set, lay), Space: sp, Backend: be, DB: db, Objective: objs[0], Objectives: objs,
		Strategy: stratName, StrategyParams: params, Seed: f.seed,
		MaxEvals: f.maxEvals, TimeLimit: f.timeLimit, Fresh: f.fresh, GtuneVersion: version, GPUs: more, Shard: f.shard, Repeat: f.repeat, RepeatUntil: f.repeatUntil / 100,
		Confirm: f.confirm, ConfirmRounds: f.confirmRounds,
	}
	if err := cfg.Provide(ctx, cmd.ErrOrStderr()); err != nil {
		return inputError{err}
	}
	cfg.Backend, cfg.GPUs = gr.Wrap(be), gr.WrapGPUs(more)
	cfg.CompileCache = openCompileCache(cmd, f)
	cfg.DiscardPTX = !f.keepPTX
	cfg.CompletionOrder = completionOrder(be, f)
	_, err = runAndReport(ctx, cmd, cfg, f, db.Path(), func(out io.Writer, sum *tuner.Summary) {
		report.TuneTable(out, nil, sum, db.Path())
		report.KernelTimes(out, set, sum)
	})
	return err
}

// runWorkloadSpace is gtune space WORKLOAD: each kernel's space and its
// occupancy-reduced part (Reduce over the device database's entry and the
// resources the spec declares), the combined space and its reduced size;
// with list the combined configurations as CSV.
func runWorkloadSpace(cmd *cobra.Command, path, deviceID string, orders bool, limit int, minOcc float64, list, asJSON bool) error {
	ctx := cmd.Context()
	set, err := loadWorkload(path)
	if err != nil {
		return err
	}
	if !(minOcc > 0 && minOcc <= 1) {
		return badInput("--min-occupancy must lie in (0, 1], got %g", minOcc)
	}
	dev, err := registry.SimulatedGPU(deviceID, set.Members[0].Spec)
	if err != nil {
		return err
	}
	sp, lay, err := workloadSpace(ctx, set, orders, limit)
	if err != nil {
		return err
	}
	if list {
		return report.Space(cmd.OutOrStdout(), nil, sp, 0, true, asJSON)
	}
	out := &report.WorkloadSpace{Workload: set.Path, Device: report.EntryRef(dev), MinOccupancy: minOcc, Combined: sp.Len(), Reduced: 1, Settings: 1, Orders: 1}
	for i, m := range set.Members {
		msp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return inputError{err}
		}
		k := report.WorkloadKernel{Name: m.Name, Spec: m.Spec.Path, Stream: m.Stream, Valid: msp.Len(), Reduced: -1}
		res := tuner.DeclaredResources(m.Spec, msp)
		if res == nil {
			k.Why = "the spec declares no Gtune.Simulation.Registers"
		} else {
			t := &strategy.Target{Device: dev, Geometry: tuner.Geometry(m.Spec, msp)}
			cands, err := strategy.ReduceKernel(strategy.Part{Name: m.Name, Space: msp, Target: t, Resources: res}, minOcc)
			if err != nil {
				k.Why = err.Error()
			} else {
				k.Reduced = len(cands)
				k.MaxOccupancy = cands[0].Occupancy
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
	return report.PrintWorkloadSpace(cmd.OutOrStdout(), out, asJSON)
}
