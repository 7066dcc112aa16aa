package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/tuner"
)

type tuneFlags struct {
	backend, db, strategy, objective, simDevice string
	strategyParams, compilerOptions             []string
	device, maxEvals, maxConfigs                int
	timeLimit                                   time.Duration
	asJSON, fresh, noProgress, energy           bool
	seed                                        uint64
	gpu                                         gpuctl.Options
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	c := &cobra.Command{
		Use:   "tune SPEC",
		Short: "Tune a kernel: evaluate configurations on the GPU (or the simulated GPU) and report the best",
		Long: `Tune a kernel described by a T1 specification (JSON or YAML, with an optional Gtune section).
Every evaluation is committed to the results database as it completes; re-running the same spec on the
same device reuses what is stored unless --fresh is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTune(cmd.Context(), cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.backend, "backend", "auto", "GPU backend: auto (CUDA when a driver is present, else the simulator), cuda or sim")
	fl.IntVar(&f.device, "device", 0, "GPU index (CUDA device ordinal)")
	fl.StringVar(&f.simDevice, "sim-device", "", "device-database id of the simulated GPU (default: the spec's Gtune.Simulation.Device, else h100_sxm)")
	fl.StringVar(&f.db, "db", "gtune.db", "results database (SQLite)")
	fl.StringVar(&f.strategy, "strategy", "", "search strategy: "+strings.Join(strategy.Names(), ", ")+" (default: the spec's Search.Name, else brute_force)")
	fl.StringArrayVar(&f.strategyParams, "strategy-param", nil, "a strategy hyperparameter NAME=VALUE (repeatable; overrides the spec's Search.Attributes)")
	fl.StringArrayVar(&f.compilerOptions, "compiler-option", nil, "an NVRTC option added after the spec's CompilerOptions, e.g. --compiler-option=-ftz=true (repeatable; results are kept apart from those compiled without it)")
	fl.IntVar(&f.maxEvals, "max-evals", 0, "evaluate at most this many configurations (0: no limit beyond the spec's Budget)")
	addMaxConfigsFlag(fl, &f.maxConfigs)
	fl.DurationVar(&f.timeLimit, "time-limit", 0, "stop proposing configurations after this wall time, e.g. 10m (0: no limit)")
	fl.StringVar(&f.objective, "objective", "", "objective: time, energy, power, edp or a metric of the spec's Gtune.Metrics (default: the spec's Gtune.Objective, else time)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document instead of the table")
	fl.BoolVar(&f.fresh, "fresh", false, "re-measure configurations already in the database")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the strategy and the simulator")
	fl.BoolVar(&f.noProgress, "no-progress", false, "do not draw the progress bar")
	addGPUFlags(fl, &f.gpu)
	fl.BoolVar(&f.energy, "energy", false, "measure energy and power for every configuration (an energy window of Gtune.Measurement.EnergyWindowSeconds each); --energy=false never measures them (default: when the objective or a metric needs them)")
	return c
}

func runTune(ctx context.Context, cmd *cobra.Command, path string, f tuneFlags) error {
	s, err := spec.Load(path)
	if err != nil {
		return err
	}
	s.AddCompilerOptions(f.compilerOptions...)
	if cmd.Flags().Changed("energy") {
		on := f.energy
		s.Measurement.Energy = &on
	}
	obj, err := resolveObjective(s, f.objective)
	if err != nil {
		return err
	}
	if e := s.Measurement.Energy; e != nil && !*e && s.ObjectiveNeedsEnergy(obj.Name) {
		what := "Gtune.Measurement.Energy is false"
		if cmd.Flags().Changed("energy") {
			what = "--energy=false"
		}
		return badInput("%s, but the objective %s needs energy measurements", what, obj.Name)
	}
	stratName, err := resolveStrategy(s, f.strategy)
	if err != nil {
		return err
	}
	if f.maxEvals < 0 {
		return badInput("--max-evals must be ≥ 0, got %d", f.maxEvals)
	}
	if f.timeLimit < 0 {
		return badInput("--time-limit must be ≥ 0, got %s", f.timeLimit)
	}
	if err := gpuctl.Preflight(s, f.gpu, simulatedBackend(f.backend)); err != nil {
		return err
	}
	sp, err := buildSpace(ctx, s, f.maxConfigs)
	if err != nil {
		return err
	}
	if sp.Len() == 0 {
		return badInput("%s: the search space has no valid configuration (%.0f raw, every one excluded by the restrictions)", s.Path, sp.RawCount())
	}
	// Every configuration's expressions, before any GPU work.
	if err := s.CheckJobs(ctx, sp); err != nil {
		return err
	}
	for _, w := range s.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "gtune: warning:", w)
	}
	// The database comes before the GPU: a bad path must cost no GPU work.
	db, err := store.Open(f.db)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()
	if _, err := db.MarkInterrupted(); err != nil {
		return err
	}
	be, err := openBackend(ctx, cmd.ErrOrStderr(), s, f)
	if err != nil {
		return err
	}
	defer be.Close()
	// GPU settings (gpuctl.Setup): parameters added, checked, applied
	// from this process before each Run and restored by the deferred Close.
	gr, err := gpuctl.Setup(ctx, cmd.ErrOrStderr(), s, sp, be, f.gpu, db.Path())
	if err != nil {
		return err
	}
	defer gr.Close()
	if gr != nil {
		if p := gr.Plan(); p != nil {
			printPlan(cmd.OutOrStdout(), p)
			return nil
		}
		sp = gr.Space()
	}

	params, err := strategyParams(s, f.strategyParams)
	if err != nil {
		return err
	}
	cfg := tuner.Config{
		Spec: s, Space: sp, Backend: be, DB: db, Objective: obj, Strategy: stratName, StrategyParams: params, Seed: f.seed,
		MaxEvals: f.maxEvals, TimeLimit: f.timeLimit, Fresh: f.fresh, GtuneVersion: version,
		Resources: tuner.NewResourceProvider(ctx, cmd.ErrOrStderr(), be, s, sp, db).Resources,
	}
	// Strategies that reason about occupancy get the GPU and the launch
	// geometry; a GPU missing from the device database stops only them.
	if t, err := tuner.OccupancyTarget(be, s, sp); err == nil {
		cfg.Device = t
	} else if strings.HasPrefix(stratName, "occupancy") {
		return badInput("strategy %s: %v", stratName, err)
	}
	if cfg.Priors, err = transferPriors(stratName, params, sp); err != nil {
		return err
	}
	if d, err := tuner.Description(be); err == nil {
		cfg.Peaks = tuner.Peaks(d, s)
	} else {
		cfg.Peaks = tuner.Peaks(nil, s)
	}
	cfg.Backend = gr.Wrap(be)
	if !f.noProgress {
		cfg.Progress = newProgress(cmd.ErrOrStderr(), obj)
	}
	sum, err := tuner.Run(ctx, cfg)
	if sum == nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		if e := writeJSON(out, sum, db.Path()); e != nil {
			return e
		}
	} else {
		writeTable(out, s, sum, db.Path())
	}
	if sum.Interrupted {
		return errors.New("interrupted; the evaluations done so far are in the database")
	}
	return err
}

// addMaxConfigsFlag adds --max-configurations, the bound on the search
// space's size (space.BuildOptions.MaxConfigurations).
func addMaxConfigsFlag(fl *pflag.FlagSet, v *int) {
	fl.IntVar(v, "max-configurations", space.DefaultMaxConfigurations,
		"refuse a search space with more valid configurations than this (memory grows with them: about 121 bytes each, space package)")
}

// buildSpace builds the search space, stopping within a second when ctx
// ends (SIGINT, SIGTERM). A space over the limit is bad input.
func buildSpace(ctx context.Context, s *spec.Spec, limit int) (*space.Space, error) {
	if limit <= 0 {
		return nil, badInput("--max-configurations must be positive, got %d", limit)
	}
	sp, err := s.BuildSpaceContext(ctx, space.BuildOptions{MaxConfigurations: limit, LimitName: "--max-configurations"})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted while building the search space of %s", s.Path)
	}
	return sp, err
}

// resolveStrategy picks the strategy: the flag, else the spec's T1
// Search.Name, else brute_force; an unknown name is bad input.
func resolveStrategy(s *spec.Spec, flag string) (string, error) {
	name := flag
	if name == "" {
		name = s.Strategy
	}
	if name == "" {
		name = "brute_force"
	}
	if !slices.Contains(strategy.Names(), name) {
		return "", badInput("unknown strategy %q (valid: %s)", name, strings.Join(strategy.Names(), ", "))
	}
	return name, nil
}

// transferPriors loads the transfer strategy's prior caches (its prior
// hyperparameter) as sp's times; nil for other strategies. A load error
// is bad input.
func transferPriors(stratName string, params map[string]any, sp *space.Space) ([]strategy.PriorTimes, error) {
	if stratName != "transfer" {
		return nil, nil
	}
	priors, err := strategy.LoadPriors(params["prior"], func(path string) ([]float64, error) { return cache.LoadSpaceTimes(path, sp) })
	if err != nil {
		return nil, inputError{err}
	}
	return priors, nil
}

// strategyParams merges the spec's Search.Attributes with --strategy-param
// NAME=VALUE flags (values parse as JSON numbers/booleans, else strings).
func strategyParams(s *spec.Spec, flags []string) (map[string]any, error) {
	params := map[string]any{}
	if s.Strategy != "" {
		for k, v := range s.StrategyOptions {
			params[k] = v
		}
	}
	for _, kv := range flags {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, badInput("--strategy-param %q: want NAME=VALUE", kv)
		}
		var v any
		if err := json.Unmarshal([]byte(val), &v); err != nil {
			v = val
		}
		params[name] = v
	}
	return params, nil
}

func resolveObjective(s *spec.Spec, name string) (objective.Objective, error) {
	if name == "" {
		return objective.FromSpec(s), nil
	}
	if slices.Contains(objective.Builtins, name) {
		s.Objective, s.ObjectiveMaximize = name, false
		return objective.FromSpec(s), nil
	}
	for _, m := range s.Metrics {
		if m.Name == name {
			s.Objective, s.ObjectiveMaximize = name, m.Maximize
			return objective.FromSpec(s), nil
		}
	}
	valid := append([]string(nil), objective.Builtins...)
	for _, m := range s.Metrics {
		valid = append(valid, m.Name)
	}
	return objective.Objective{}, badInput("unknown objective %q (valid: %s)", name, strings.Join(valid, ", "))
}

func openBackend(ctx context.Context, log io.Writer, s *spec.Spec, f tuneFlags) (backend.Backend, error) {
	switch f.backend {
	case "cuda":
		if err := cuda.Available(); err != nil {
			return nil, fmt.Errorf("--backend cuda: %w", err)
		}
		return cuda.Open(ctx, f.device, cuda.Options{AllowSettings: f.gpu.Allow && !f.gpu.DryRun})
	case "sim":
		return openSim(s, f)
	case "auto":
		if err := cuda.Available(); err != nil {
			b, serr := openSim(s, f)
			if serr != nil {
				return nil, serr
			}
			fmt.Fprintf(log, "gtune: no CUDA driver here; tuning on the simulated GPU %s (--backend cuda says why)\n", b.Device().Name)
			return b, nil
		}
		return cuda.Open(ctx, f.device, cuda.Options{AllowSettings: f.gpu.Allow && !f.gpu.DryRun})
	default:
		return nil, badInput("unknown backend %q (valid: auto, cuda, sim)", f.backend)
	}
}

func openSim(s *spec.Spec, f tuneFlags) (backend.Backend, error) {
	id := f.simDevice
	if id == "" && s.Simulation != nil {
		id = s.Simulation.Device
	}
	if id == "" {
		id = "h100_sxm"
	}
	d, err := device.Lookup(id)
	if err != nil {
		return nil, inputError{err}
	}
	if s.Simulation == nil {
		return nil, badInput("%s has no Gtune.Simulation section: the simulated GPU needs the kernel's work (Flops, Bytes) to model it", s.Path)
	}
	opts := sim.Options{Seed: int64(f.seed)}
	if s.Simulation.Noise > 0 {
		opts.Noise = s.Simulation.Noise
	}
	if s.Simulation.Seed != 0 {
		opts.Seed = s.Simulation.Seed
	}
	return sim.New(d, opts), nil
}

// keyObservations are shown in the table, in this order, when present.
var keyObservations = []struct{ name, head string }{
	{"time", "time (ms)"},
	{"energy", "energy (J)"},
	{"energy_cv", "±E (%)"}, // the spread of the configuration's energy trials (coefficient of variation)
	{"power", "power (W)"},
	{"registers", "regs"},
}

func writeTable(w io.Writer, s *spec.Spec, sum *tuner.Summary, dbPath string) {
	d := sum.Device
	fmt.Fprintf(w, "device: %s (%s), %s backend\n", d.Name, d.UUID, d.Backend)
	fmt.Fprintf(w, "space: %d valid configurations; strategy %s; evaluated %d, reused %d, invalid %d in %s\n",
		sum.SpaceSize, sum.Strategy, sum.Evaluated, sum.Reused, sum.Invalid, sum.Elapsed.Round(time.Millisecond))
	if len(sum.Best) == 0 {
		if len(sum.Implausible) > 0 {
			fmt.Fprintf(w, "no plausible configuration: %d valid ones are implausible; see the reasons in %s\n", len(sum.Implausible), dbPath)
			writeImplausible(w, sum)
			return
		}
		fmt.Fprintf(w, "no valid configuration; see the reasons in %s\n", dbPath)
		return
	}
	fmt.Fprintf(w, "best %d by %s (%s):\n", len(sum.Best), sum.Objective.Name, sum.Objective.Direction())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, p := range sum.Best[0].Params {
		head = append(head, p.Name)
	}
	var obsCols []string
	for _, k := range keyObservations {
		if _, ok := sum.Best[0].Observations[k.name]; ok {
			obsCols = append(obsCols, k.name)
			head = append(head, k.head)
		}
	}
	var metricCols []string
	for _, m := range s.Metrics {
		if _, ok := sum.Best[0].Metrics[m.Name]; ok {
			metricCols = append(metricCols, m.Name)
			head = append(head, m.Name)
		}
	}
	objInCols := slices.Contains(obsCols, sum.Objective.Name) || slices.Contains(metricCols, sum.Objective.Name)
	if !objInCols {
		head = append(head, sum.Objective.Name)
	}
	fmt.Fprintln(tw, "#\t"+strings.Join(head, "\t")+"\t")
	for i, o := range sum.Best {
		row := []string{fmt.Sprint(i + 1)}
		for _, p := range o.Params {
			row = append(row, fmt.Sprint(p.Value))
		}
		for _, k := range obsCols {
			if k == "energy_cv" {
				row = append(row, fmt.Sprintf("%.2f", 100*o.Observations[k]))
				continue
			}
			row = append(row, format(o.Observations[k]))
		}
		for _, k := range metricCols {
			row = append(row, format(o.Metrics[k]))
		}
		if !objInCols {
			row = append(row, format(o.Value))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	writeImplausible(w, sum)
	writeCapping(w, sum)
	fmt.Fprintf(w, "results: %s (run %d)\n", dbPath, sum.RunID)
}

func format(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4g", v)
	}
}

func writeJSON(w io.Writer, sum *tuner.Summary, dbPath string) error {
	doc := map[string]any{
		"device":    sum.Device,
		"objective": map[string]any{"name": sum.Objective.Name, "direction": sum.Objective.Direction(), "unit": sum.Objective.Unit},
		"strategy":  sum.Strategy,
		"space":     sum.SpaceSize,
		"evaluated": sum.Evaluated,
		"reused":    sum.Reused,
		"invalid":   sum.Invalid,
		"run":       sum.RunID,
		"elapsed_s": sum.Elapsed.Seconds(),
		"db":        dbPath,
	}
	if len(sum.Best) > 0 {
		b := sum.Best[0]
		params := map[string]any{}
		for _, p := range b.Params {
			params[p.Name] = p.Value
		}
		objs := map[string]float64{sum.Objective.Name: b.Value}
		for _, k := range []string{"time", "energy", "power", "edp"} {
			if v, ok := b.Observations[k]; ok {
				objs[k] = v
			}
		}
		for k, v := range b.Metrics {
			objs[k] = v
		}
		doc["best"] = map[string]any{"key": b.Key, "params": params, "objectives": objs, "observations": b.Observations}
		var top []map[string]any
		for _, o := range sum.Best {
			top = append(top, map[string]any{"key": o.Key, "value": o.Value})
		}
		doc["top"] = top
	}
	reasons := map[string]int{}
	for _, o := range sum.Outcomes {
		if !o.Valid() {
			reasons[string(o.Status)]++
		}
	}
	doc["invalid_by_status"] = reasons
	if len(sum.Implausible) > 0 {
		var imp []map[string]any
		for _, o := range sum.Implausible {
			imp = append(imp, map[string]any{"key": o.Key, "value": o.Value, "why": o.Implausible})
		}
		doc["implausible"] = imp
	}
	if r := cappingReport(sum); r != nil {
		doc["power_capping"] = r
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeImplausible warns of measurements that ranked before the best
// but cannot be right (package plausibility); they are not in the table.
func writeImplausible(w io.Writer, sum *tuner.Summary) {
	for _, o := range sum.Implausible {
		fmt.Fprintf(w, "warning: %s (%s %s) would rank first but is implausible and left out: %s\n",
			o.Key, format(o.Value), sum.Objective.Unit, o.Implausible)
	}
}

// sortedKeys is used for stable output of maps.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
