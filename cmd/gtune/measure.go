package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
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
		RunE: func(cmd *cobra.Command, args []string) error { return runMeasure(cmd.Context(), cmd, args, f) },
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.configs, "config", nil, "configuration key of the corresponding SPEC, e.g. 256,4 (repeatable, in SPEC order; empty: the default)")
	fl.IntSliceVar(&f.streams, "stream", nil, "stream of each SPEC's launch, in SPEC order, e.g. --stream 0,0 for one stream (default: 0, 1, 2, ...)")
	fl.StringVar(&f.order, "order", "", "a workload: the launch order, kernel names joined by > (default: as written)")
	fl.IntVar(&f.iterations, "iterations", 0, "timed runs of the plan (default: the first spec's Gtune.Measurement.Iterations)")
	fl.StringVar(&f.tune.backend, "backend", "auto", "GPU backend: auto, cuda or sim")
	fl.IntVar(&f.tune.device, "device", 0, "GPU index (CUDA device ordinal)")
	fl.StringVar(&f.tune.simDevice, "sim-device", "", "device-database id of the simulated GPU (default: the first spec's Gtune.Simulation.Device)")
	fl.StringVar(&f.tune.db, "db", "gtune.db", "results database (SQLite)")
	fl.StringArrayVar(&f.tune.compilerOptions, "compiler-option", nil, "an NVRTC option added to every spec's CompilerOptions (repeatable)")
	fl.BoolVar(&f.tune.asJSON, "json", false, "print one JSON document instead of the table")
	fl.Uint64Var(&f.tune.seed, "seed", 1, "seed of the simulator")
	fl.BoolVar(&f.tune.energy, "energy", false, "also measure the plan's energy and power (the first spec's energy protocol)")
	return c
}

func runMeasure(ctx context.Context, cmd *cobra.Command, paths []string, f measureFlags) error {
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
	w := &workload.Workload{}
	for i, path := range paths {
		s, err := spec.Load(path)
		if err != nil {
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
		w.Launches = append(w.Launches, workload.Launch{Spec: s, Config: cfg, Stream: stream})
	}
	first := w.Launches[0].Spec
	return measureAndPrint(ctx, cmd, w, first.Request(), first.Measurement.Timeout, f)
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
		m.Spec.AddCompilerOptions(f.tune.compilerOptions...)
	}
	sp, lay, err := workloadSpace(ctx, set, false, space.DefaultMaxConfigurations)
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
	w, err := set.Workload(lay, sp.Values(idx))
	if err != nil {
		return err
	}
	if f.order != "" {
		if w.Order, err = set.ParseOrder(f.order); err != nil {
			return inputError{err}
		}
	}
	req, err := set.Request()
	if err != nil {
		return inputError{err}
	}
	var timeout time.Duration
	for _, m := range set.Members {
		timeout += m.Spec.Measurement.Timeout
	}
	return measureAndPrint(ctx, cmd, w, req, timeout, f)
}

// measureAndPrint measures w as one plan and prints and stores it.
func measureAndPrint(ctx context.Context, cmd *cobra.Command, w *workload.Workload, req measure.Request, timeout time.Duration, f measureFlags) error {
	first := w.Launches[0].Spec
	if cmd.Flags().Changed("energy") {
		req.Energy = f.tune.energy
	}
	if f.iterations < 0 {
		return badInput("--iterations must be ≥ 0, got %d", f.iterations)
	}
	if f.iterations > 0 {
		req.Iterations = f.iterations
	}
	db, err := store.Open(f.tune.db)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()
	be, err := openBackend(ctx, cmd.ErrOrStderr(), first, f.tune)
	if err != nil {
		return err
	}
	defer be.Close()
	m, err := w.Measure(ctx, be, db, req, timeout, version)
	if err != nil {
		return err
	}
	names := make([]string, len(m.Plan.Launches))
	for i, l := range m.Plan.Launches {
		names[i] = fmt.Sprintf("%s %s, stream %d", m.Problem.Kernels[l.Job.Kernel].KernelName, l.Job.Key, l.Stream)
	}
	out := cmd.OutOrStdout()
	if f.tune.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Device       string               `json:"device"`
			Run          int64                `json:"run"`
			Key          string               `json:"key"`
			Launches     []string             `json:"launches"`
			Status       string               `json:"status"`
			Reason       string               `json:"reason,omitempty"`
			Observations measure.Observations `json:"observations"`
			DB           string               `json:"db"`
		}{be.Device().Name, m.RunID, m.Plan.Key, names, string(m.Result.Status), m.Result.Reason, m.Observations.Sorted(), db.Path()})
	}
	fmt.Fprintf(out, "%s: plan %s, %d launch(es) on %d stream(s): %s\n", be.Device().Name, m.Plan.Key, len(names), m.Plan.Streams(), m.Result.Status)
	if m.Result.Reason != "" {
		fmt.Fprintf(out, "  %s\n", m.Result.Reason)
	}
	report.WriteObservations(out, m.Observations, names)
	fmt.Fprintf(out, "stored as run %d in %s\n", m.RunID, db.Path())
	return nil
}

// configOf resolves a configuration key of s's search space; "" gives
// the spec's reference configuration, else its first configuration.
func configOf(ctx context.Context, s *spec.Spec, key string) ([]expr.Value, error) {
	if key == "" {
		if cfg, ok, err := s.ReferenceConfig(); err != nil || ok {
			return cfg, err
		}
	}
	sp, err := buildSpace(ctx, s, space.DefaultMaxConfigurations)
	if err != nil {
		return nil, err
	}
	if sp.Len() == 0 {
		return nil, badInput("%s: the search space has no valid configuration", s.Path)
	}
	if key == "" {
		return sp.Values(0), nil
	}
	i, ok := sp.Lookup(key)
	if !ok {
		names := make([]string, len(s.Params))
		for k, p := range s.Params {
			names[k] = p.Name
		}
		return nil, badInput("%s: %q is not a configuration of the search space (values of %s, in that order, joined by \",\")", s.Path, key, strings.Join(names, ", "))
	}
	return sp.Values(i), nil
}
