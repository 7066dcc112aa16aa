package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/check"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/projection"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newMeasureCmd) }

type measureFlags struct {
	tune       tuneFlags
	configs    []string
	streams    []int
	iterations int
	order      string
}

func newMeasureCmd() *cobra.Command {
	var f measureFlags
	c := &cobra.Command{
		Use:   "measure SPEC [SPEC...] | measure WORKLOAD",
		Short: "Measure one configuration of each spec, launched together as one plan (one stream each unless --stream says otherwise)",
		Long: `Measure a plan of launches: one configuration of each spec (--config, in the order of the specs; default the
spec's Gtune.Reference.Configuration, else its first configuration), each kernel with its own arguments, issued in
the order given on the streams given. Prints every observation of the whole plan and of each launch with its unit and
the method that measured it, and stores them in the results database as a run of strategy "measure".

A workload file is measured at one configuration of its combined space (--config KEY, default the first) in its
written launch order or --order NAME>NAME>...`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := deviceOrDevices(cmd); err != nil {
				return err
			}
			return runMeasure(cmd.Context(), cmd, args, f)
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.configs, "config", nil, "configuration key of the corresponding SPEC, e.g. 256,4 (repeatable, in SPEC order; empty: the default)")
	fl.IntSliceVar(&f.streams, "stream", nil, "stream of each SPEC's launch, in SPEC order, e.g. --stream 0,0 for one stream (default: 0, 1, 2, ...)")
	fl.StringVar(&f.order, "order", "", "a workload: the launch order, kernel names joined by > (default: as written)")
	flagrange.Int(fl, &f.iterations, "iterations", 0, 1, 1_000_000, "timed runs of the plan (default: the first spec's Gtune.Measurement.Iterations)")
	fl.StringVar(&f.tune.backend, "backend", "auto", "GPU backend: auto, cuda, sim, or model (the projection of --sim-device)")
	flagrange.Int(fl, &f.tune.device, "device", 0, 0, 1023, "GPU index (CUDA device ordinal)")
	fl.StringVar(&f.tune.devices, "devices", "", "measure the plan on several GPUs of one model, at once, one run each: all, or GPU indexes such as 0,2,3 (on the simulated GPU, that many simulated GPUs); prints each GPU's observations and their spread")
	fl.StringVar(&f.tune.simDevice, "sim-device", "", "device-database id of the simulated GPU (default: the first spec's Gtune.Simulation.Device)")
	fl.StringVar(&f.tune.db, "db", "gtune.db", "results database (SQLite)")
	fl.StringArrayVar(&f.tune.compilerOptions, "compiler-option", nil, "an NVRTC option added to every spec's CompilerOptions (repeatable)")
	fl.BoolVar(&f.tune.asJSON, "json", false, "print one JSON document instead of the table")
	fl.Uint64Var(&f.tune.seed, "seed", 1, "seed of the simulator")
	fl.BoolVar(&f.tune.energy, "energy", false, "also measure the plan's energy and power (the first spec's energy protocol)")
	addCompileFlags(fl, &f.tune)
	return c
}

func runMeasure(ctx context.Context, cmd *cobra.Command, paths []string, f measureFlags) error {
	if f.iterations < 0 {
		return badInput("--iterations must be ≥ 0, got %d", f.iterations)
	}
	if len(paths) == 1 && workload.IsFile(paths[0]) {
		return runMeasureWorkload(ctx, cmd, paths[0], f)
	}
	if f.order != "" {
		return badInput("--order takes a workload file")
	}
	if len(f.configs) > len(paths) {
		return badInput("%d --config for %d specs", len(f.configs), len(paths))
	}
	if len(f.streams) > 0 && len(f.streams) != len(paths) {
		return badInput("--stream gives %d streams for %d specs", len(f.streams), len(paths))
	}
	var specs []*spec.Spec
	var configs [][]expr.Value
	var streams []int
	for i, path := range paths {
		s, err := spec.Load(path)
		if err != nil {
			return err
		}
		if err := backend.CheckCompilerOptions(f.tune.compilerOptions); err != nil {
			return err
		}
		s.AddCompilerOptions(f.tune.compilerOptions...)
		key := ""
		if i < len(f.configs) {
			key = f.configs[i]
		}
		cfg, err := configOf(ctx, s, key)
		if err != nil {
			return err
		}
		stream := i
		if len(f.streams) > 0 {
			stream = f.streams[i]
		}
		if stream < 0 {
			return badInput("--stream %d for %s: streams are numbered from 0", stream, path)
		}
		specs, configs, streams = append(specs, s), append(configs, cfg), append(streams, stream)
	}
	if len(specs) == 1 {
		return measureSpec(ctx, cmd, specs[0], configs[0], f)
	}
	set, err := workload.FromSpecs(specs, configs, streams)
	if err != nil {
		return inputError{err}
	}
	return measureSet(ctx, cmd, set, f)
}

// runMeasureWorkload measures one configuration of a workload file's
// combined space (--config, default the first) in its written order or
// --order.
func runMeasureWorkload(ctx context.Context, cmd *cobra.Command, path string, f measureFlags) error {
	set, err := loadWorkload(path)
	if err != nil {
		return err
	}
	if len(f.streams) > 0 || len(f.configs) > 1 {
		return badInput("a workload file gives its streams; --config takes one key of its combined space")
	}
	for _, m := range set.Members {
		if err := backend.CheckCompilerOptions(f.tune.compilerOptions); err != nil {
			return err
		}
		m.Spec.AddCompilerOptions(f.tune.compilerOptions...)
	}
	sp, lay, err := set.NonEmptySpace(ctx, false, space.DefaultMaxConfigurations)
	if err != nil {
		return err
	}
	idx := 0
	if len(f.configs) == 1 && f.configs[0] != "" {
		i, ok := sp.Lookup(f.configs[0])
		if !ok {
			names := make([]string, len(sp.Params()))
			for k, p := range sp.Params() {
				names[k] = p.Name
			}
			return badInput("%s: %q is not a configuration of the combined space (values of %s, in that order, joined by \",\")", path, f.configs[0], strings.Join(names, ", "))
		}
		idx = i
	}
	var order []int
	if f.order != "" {
		if order, err = set.ParseOrder(f.order); err != nil {
			return inputError{err}
		}
	}
	one, err := set.Fix(lay, sp.Values(idx), order)
	if err != nil {
		return inputError{err}
	}
	return measureSet(ctx, cmd, one, f)
}

// measureSpec measures configuration cfg of one spec: the tuner over a
// space of that one configuration, stored under the spec's hash as a run
// of kind "measure".
func measureSpec(ctx context.Context, cmd *cobra.Command, s *spec.Spec, cfg []expr.Value, f measureFlags) error {
	fixed := make([]space.Param, len(s.Params))
	for k, p := range s.Params {
		fixed[k] = space.Param{Name: p.Name, Values: []expr.Value{cfg[k]}}
	}
	sp, err := space.BuildContext(ctx, fixed, s.Restrictions, s.Constants, space.BuildOptions{})
	if err != nil {
		return inputError{fmt.Errorf("%s: %w", s.Path, err)}
	}
	if sp.Len() != 1 {
		return badInput("%s: configuration %s does not satisfy the spec's restrictions", s.Path, spec.KeyOf(cfg))
	}
	if f.iterations > 0 {
		s.Measurement.Iterations = f.iterations
	}
	if cmd.Flags().Changed("energy") {
		on := f.tune.energy
		s.Measurement.Energy = &on
	}
	// The simulated GPU's memory and launch limits, as tune and check
	// see them, before the database and the GPU.
	if modelled(f.tune.backend) {
		d, err := registry.SimulatedGPU(f.tune.simDevice, s)
		if err != nil {
			return err
		}
		if err := check.ArgumentsFit(s, d); err != nil {
			return err
		}
		if _, err := check.GeometryFit(ctx, s, sp, d, ""); err != nil {
			return err
		}
	}
	launch := []string{fmt.Sprintf("%s %s, stream 0", s.KernelName, sp.Key(0))}
	return measureOne(ctx, cmd, s, tuner.Config{Subject: tuner.FromSpec(s), Space: sp}, sp.Key(0), launch, 1, f)
}

// measureSet measures a workload narrowed to one configuration
// (workload.Set.Fix, workload.FromSpecs): the tuner over its combined
// space of that one plan.
func measureSet(ctx context.Context, cmd *cobra.Command, set *workload.Set, f measureFlags) error {
	sp, lay, err := set.NonEmptySpace(ctx, false, space.DefaultMaxConfigurations)
	if err != nil {
		return err
	}
	if sp.Len() != 1 {
		return badInput("%s: %d configurations to measure, not one", set.Path, sp.Len())
	}
	if f.iterations > 0 || cmd.Flags().Changed("energy") {
		m := workload.FileMeasurement{}
		if set.Measurement != nil {
			m = *set.Measurement
		}
		if f.iterations > 0 {
			m.Iterations = f.iterations
		}
		if cmd.Flags().Changed("energy") {
			on := f.tune.energy
			m.Energy = &on
		}
		set.Measurement = &m
	}
	w, err := set.Workload(lay, sp.Values(0))
	if err != nil {
		return inputError{err}
	}
	// The launches as issued: the plan's observations name them by their
	// position in issue order.
	var names []string
	streams := map[int]bool{}
	for _, i := range w.Order { // Set.Workload always gives the order
		l := w.Launches[i]
		names = append(names, fmt.Sprintf("%s %s, stream %d", l.Spec.KernelName, l.Spec.Key(l.Config), l.Stream))
		streams[l.Stream] = true
	}
	return measureOne(ctx, cmd, set.Members[0].Spec, tuner.Config{Subject: tuner.FromWorkload(set, lay), Space: sp}, w.Key(), names, len(streams), f)
}

// measureOne completes c (a space of one configuration), runs the tuner
// over it with fresh measurements, and prints and stores the plan's
// observations. first is the spec the backend is chosen from; plan and
// launches name the plan and its launches in issue order, on streams
// streams.
func measureOne(ctx context.Context, cmd *cobra.Command, first *spec.Spec, c tuner.Config, plan string, launches []string, streams int, f measureFlags) error {
	db, err := store.Open(f.tune.db)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()
	be, more, err := openBackends(ctx, cmd.ErrOrStderr(), first, f.tune)
	if err != nil {
		return err
	}
	defer be.Close()
	for _, g := range more {
		defer g.Close()
	}
	c.DB, c.GtuneVersion, c.Seed = db, version, f.tune.seed
	c.CompileCache = openCompileCache(cmd, f.tune)
	c.DiscardPTX = !f.tune.keepPTX
	c.Objective = objective.Objective{Name: objective.Time, Unit: "ms"}
	c.Strategy, c.RunKind, c.MaxEvals, c.Fresh = "brute_force", "measure", 1, true
	sums, err := tuner.RunEach(ctx, c, append([]backend.Backend{be}, more...))
	return report.Measured(cmd.OutOrStdout(), sums, err, plan, launches, streams, db.Path(), f.tune.asJSON, f.tune.devices != "")
}

// configOf resolves a configuration key of s's search space; "" gives
// the spec's reference configuration, else its first configuration.
func configOf(ctx context.Context, s *spec.Spec, key string) ([]expr.Value, error) {
	if key == "" {
		if cfg, ok, err := s.ReferenceConfig(); err != nil || ok {
			return cfg, err
		}
	}
	sp, err := buildSpace(ctx, s, spaceLimits{space.DefaultMaxConfigurations, defaultMaxExamined})
	if err != nil {
		return nil, err
	}
	return projection.ConfigIn(s, sp, key)
}
