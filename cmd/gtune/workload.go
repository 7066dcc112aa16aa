package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/check"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/shard"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
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
	objs, stratName, shardOf, err := checkTuneWorkload(cmd, set, &first, &f)
	if err != nil || f.validateOnly {
		return err
	}
	g, err := openRunGPUs(ctx, cmd, &f, set.Members[0].Spec, &first, objs)
	if err != nil {
		return err
	}
	defer g.close()
	ctx = g.ctx
	if d, err := tuner.Description(g.be); err == nil {
		var warn strings.Builder
		if err := check.WorkloadMembers(ctx, set, d, &warn); err != nil {
			return err
		}
		for _, w := range check.Lines(warn.String()) {
			fmt.Fprintln(cmd.ErrOrStderr(), "gtune: warning:", w)
		}
	}
	gr, err := gpuctl.SetupWorkload(cmd.ErrOrStderr(), set, g.be, f.gpu, g.db.Path())
	if err != nil {
		return err
	}
	defer gr.Close()
	if err := gr.AddGPUs(g.more); err != nil {
		return err
	}
	sp, lay, err := set.NonEmptySpace(ctx, f.orders, f.limits.maxConfigs)
	if err != nil {
		return err
	}
	if sp, err = shardOf(cmd.ErrOrStderr(), sp); err != nil {
		return err
	}
	params, err := strategy.MergeParams(first.Strategy, first.StrategyOptions, f.strategyParams)
	if err != nil {
		return err
	}
	cfg := runConfig(f, g, objs, stratName, params)
	cfg.Subject, cfg.Space = tuner.FromWorkload(set, lay), sp
	if err := completeConfig(ctx, cmd, f, &cfg, gr); err != nil {
		return err
	}
	_, err = runAndReport(ctx, cmd, cfg, f, g.db.Path(), func(out io.Writer, sum *tuner.Summary) {
		report.TuneTable(out, nil, sum, g.db.Path())
		report.KernelTimes(out, set, sum)
	})
	return err
}

// checkTuneWorkload checks what a workload's run asks before any GPU
// work: its objectives (read against first, the first kernel's spec
// without its metrics, for time by default), the strategy (brute force
// by default), the shard and repeats, the kernel flags applied to every
// kernel, and on a modelled GPU each kernel's Gtune.Simulation; under
// --validate-only the strategy's parameters. Errors are bad input.
func checkTuneWorkload(cmd *cobra.Command, set *workload.Set, first *spec.Spec, f *tuneFlags) ([]objective.Objective, string, func(io.Writer, *space.Space) (*space.Space, error), error) {
	objs, err := objective.ResolveList(first, f.objective)
	if err != nil {
		return nil, "", nil, err
	}
	stratName := cmp.Or(f.strategy, "brute_force")
	if _, err := strategy.Resolve(stratName, first.Strategy); err != nil {
		return nil, "", nil, err
	}
	shardOf, err := shard.Restrictor(f.shard, stratName)
	if err != nil {
		return nil, "", nil, err
	}
	if err := repeatFlags(cmd, f); err != nil {
		return nil, "", nil, err
	}
	specs := make([]*spec.Spec, len(set.Members))
	for i, m := range set.Members {
		specs[i] = m.Spec
	}
	if err := applyKernelFlags(cmd, *f, specs...); err != nil {
		return nil, "", nil, err
	}
	if modelled(f.backend) {
		for _, m := range set.Members {
			if m.Spec.Simulation == nil {
				return nil, "", nil, badInput("kernel %q (%s) has no Gtune.Simulation section: the simulated GPU needs each kernel's work", m.Name, m.Spec.Path)
			}
		}
	}
	if f.validateOnly {
		_, err := strategy.MergeParams(first.Strategy, first.StrategyOptions, f.strategyParams)
		return nil, "", nil, err
	}
	return objs, stratName, shardOf, nil
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
	sp, lay, err := set.NonEmptySpace(ctx, orders, limit)
	if err != nil {
		return err
	}
	if list {
		return report.Space(cmd.OutOrStdout(), nil, sp, 0, true, asJSON)
	}
	out, err := report.WorkloadSpaceOf(ctx, set, lay, sp, dev, minOcc)
	if err != nil {
		return inputError{err}
	}
	return report.PrintWorkloadSpace(cmd.OutOrStdout(), out, asJSON)
}
