package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

// The steps a tuning run of one spec (runTune) and of a workload's
// kernels together (runTuneWorkload) share, so that the two flows cannot
// drift apart: the flags applied to every kernel alike, the database and
// the GPUs opened in the same order, the run's configuration completed
// the same way.

// applyKernelFlags applies the flags that change how each kernel is
// compiled and measured to every spec of the run: --compiler-option,
// --energy, --thermal. Errors are bad input.
func applyKernelFlags(cmd *cobra.Command, f tuneFlags, specs ...*spec.Spec) error {
	if err := backend.CheckCompilerOptions(f.compilerOptions); err != nil {
		return err
	}
	if f.thermal != "" {
		if err := thermalFlag(cmd, f); err != nil {
			return err
		}
	}
	for _, s := range specs {
		s.AddCompilerOptions(f.compilerOptions...)
		if cmd.Flags().Changed("energy") {
			on := f.energy
			s.Measurement.Energy = &on
		}
		if f.thermal != "" {
			s.Measurement.Protocol.Thermal = f.thermal
		}
	}
	return nil
}

// runGPUs is what a run has opened: its database, its GPUs (the first
// the run's backend, the others tuner.Config.GPUs) and the context
// --slurm interrupts it by. close closes them, last opened first.
type runGPUs struct {
	db    *store.DB
	be    backend.Backend
	more  []backend.Backend
	ctx   context.Context
	close func()
}

// openRunGPUs opens the run's database, then its GPUs (a bad database
// path costs no GPU work), and says how the GPUs' energies are made
// comparable where objectives over several need energy (lead is the
// spec the objectives are read against). On error nothing stays open.
func openRunGPUs(ctx context.Context, cmd *cobra.Command, f *tuneFlags, s, lead *spec.Spec, objs []objective.Objective) (*runGPUs, error) {
	db, err := openRunDB(f.db)
	if err != nil {
		return nil, err
	}
	ctx, interrupt := context.WithCancel(ctx)
	f.interrupt = interrupt
	be, more, err := openBackends(ctx, cmd.ErrOrStderr(), s, *f)
	if err != nil {
		interrupt()
		db.Close()
		return nil, err
	}
	r := &runGPUs{db: db, be: be, more: more, ctx: ctx}
	r.close = func() {
		for _, g := range more {
			g.Close()
		}
		be.Close()
		interrupt()
		db.Close()
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	tuner.NoteCalibration(cmd.ErrOrStderr(), lead, names, 1+len(more), backend.TraitsOf(be).Modelled)
	return r, nil
}

// completeConfig finishes the run's configuration the same way for a
// spec and a workload: the compile cache first (the resource provider of
// occupancy-guided strategies keeps the binaries it compiles there for
// the run), what the strategy is provided with, then the GPUs wrapped by
// their settings sessions and the order configurations are evaluated in.
// Errors: Provide's, as bad input.
func completeConfig(ctx context.Context, cmd *cobra.Command, f tuneFlags, cfg *tuner.Config, gr *gpuctl.Run) error {
	cfg.CompileCache = openCompileCache(cmd, f)
	cfg.DiscardPTX = !f.keepPTX
	if err := cfg.Provide(ctx, cmd.ErrOrStderr()); err != nil {
		return inputError{err}
	}
	be := cfg.Backend
	cfg.Backend, cfg.GPUs = gr.Wrap(be), gr.WrapGPUs(cfg.GPUs)
	cfg.CompletionOrder = completionOrder(be, f)
	return nil
}

// runConfig is the tuner.Config every run's flags give alike.
func runConfig(f tuneFlags, g *runGPUs, objs []objective.Objective, strat string, params map[string]any) tuner.Config {
	return tuner.Config{
		Backend: g.be, GPUs: g.more, DB: g.db, Objective: objs[0], Objectives: objs, Strategy: strat, StrategyParams: params, Seed: f.seed,
		MaxEvals: f.maxEvals, InFlight: f.inFlight, TimeLimit: f.timeLimit, Fresh: f.fresh, GtuneVersion: version, Shard: f.shard,
		Repeat: f.repeat, RepeatUntil: f.repeatUntil / 100, Confirm: f.confirm, ConfirmRounds: f.confirmRounds,
	}
}
