package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

func init() { subcommands = append(subcommands, newImportCmd, newExportCmd) }

// importStrategy is the strategy name of an imported run.
const importStrategy = "import"

// Settings keys of an imported run.
const (
	settingSource = "source"             // path of the imported file
	settingFormat = "format"             // kerneltuner | t4
	settingHeader = "kerneltuner_header" // cache.MarshalHeader
)

// Layouts of Python's str(datetime) with a time zone, as Kernel Tuner
// writes timestamps.
const (
	pyTimeMicro = "2006-01-02 15:04:05.000000-07:00"
	pyTime      = "2006-01-02 15:04:05-07:00"
)

func parsePyTime(s string) (time.Time, bool) {
	t, err := time.Parse("2006-01-02 15:04:05.999999999-07:00", s)
	return t, err == nil
}

func formatPyTime(t time.Time) string {
	if t.Nanosecond() == 0 {
		return t.Format(pyTime)
	}
	return t.Format(pyTimeMicro)
}

func newImportCmd() *cobra.Command {
	var specPath, dbPath string
	var asJSON bool
	c := &cobra.Command{
		Use:   "import CACHE --spec SPEC",
		Short: "Store a Kernel Tuner cache or T4 results file in the results database as a run",
		Long: `Store the configurations recorded in a Kernel Tuner cache (.json or .json.gz) or a T4 results file
in the results database as one run (backend "replay", device "replay:<device name>", strategy "import"),
under the spec hash of SPEC, whose tunable parameters must match the file's. Kernel Tuner's error markers
become gtune statuses (CompilationFailedConfig: compile_failed, RuntimeFailedConfig: runtime_failed,
InvalidConfig: launch_failed) and are kept as the reason; times become the observations time, time_min,
... (ms), recorded energy and power the observations energy (J) and power (W), other recorded numbers
(GFLOP/s, nvml_power, core_freq, verification_time, ...) metrics under their Kernel Tuner names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd, args[0], specPath, dbPath, asJSON)
		},
	}
	c.Flags().StringVar(&specPath, "spec", "", "T1 spec of the kernel (required): its hash keys the run, its parameters must match the file's")
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "results database (SQLite)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document instead of the summary line")
	return c
}

// loadSpecForImport loads the spec with its kernel source when the source
// is there, so the hash is the one `gtune tune` gives the same spec, and
// without it otherwise.
func loadSpecForImport(path string) (*spec.Spec, error) {
	s, err := spec.Load(path)
	var se *spec.Error
	if err != nil && errors.As(err, &se) && se.Field == "KernelSpecification.KernelFile" {
		return spec.LoadWith(path, spec.LoadOptions{NoSource: true})
	}
	return s, err
}

func runImport(cmd *cobra.Command, cachePath, specPath, dbPath string, asJSON bool) error {
	if specPath == "" {
		return badInput("import: --spec is required (its hash keys the imported run)")
	}
	c, err := cache.Load(cachePath)
	if err != nil {
		return inputError{err}
	}
	s, err := loadSpecForImport(specPath)
	if err != nil {
		return err
	}
	sp, err := s.BuildSpace()
	if err != nil {
		return err
	}
	r, err := cache.NewReplay(c, sp) // checks the parameters and maps keys
	if err != nil {
		return inputError{err}
	}
	header, err := c.MarshalHeader()
	if err != nil {
		return err
	}
	db, err := store.Open(dbPath)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()

	obj := objective.FromSpec(s)
	dev := r.Device()
	run := &store.Run{
		SpecHash: s.Hash, SpecPath: s.Path, Kernel: s.KernelName, Objective: obj.Name, Strategy: importStrategy,
		DeviceName: c.DeviceName, DeviceUUID: dev.UUID, Backend: dev.Backend, GtuneVersion: version,
		Settings: map[string]any{settingSource: c.Path, settingFormat: c.Format, settingHeader: header},
	}
	var evals []*store.Evaluation
	counts := map[string]int{}
	for i := 0; i < sp.Len(); i++ {
		key := sp.Key(i)
		e, ok := r.Entry(key)
		if !ok {
			counts["missing"]++
			continue
		}
		cfg := sp.Values(i)
		ev := &store.Evaluation{Key: key, Status: string(e.Status), Reason: e.Error,
			TimesMs: e.Times, CompileMs: e.CompileMs, BenchmarkMs: e.BenchmarkMs, FrameworkMs: e.FrameworkMs}
		for k, p := range sp.Params() {
			ev.Params = append(ev.Params, store.Param{Name: p.Name, Value: tuner.GoValue(cfg[k])})
		}
		if t, ok := parsePyTime(e.Timestamp); ok {
			ev.StartedAt = t
		}
		ev.Metrics = map[string]float64{}
		for k, v := range e.Extra {
			ev.Metrics[k] = v
		}
		if !math.IsNaN(e.VerificationMs) {
			ev.Metrics["verification_time"] = e.VerificationMs
		}
		if !math.IsNaN(e.StrategyMs) {
			ev.Metrics["strategy_time"] = e.StrategyMs
		}
		if e.Valid() {
			res := &backend.Result{TimesMs: e.Times, Energy: e.Energy(), BenchmarkMs: e.BenchmarkMs}
			if len(res.TimesMs) == 0 && !math.IsNaN(e.Time) {
				res.TimesMs = []float64{e.Time}
			}
			obs := objective.Observations(res, e.CompileMs)
			// Not recorded by Kernel Tuner: leave them out rather than
			// store zeros.
			for _, k := range []string{"registers", "shared_memory", "local_memory", "max_threads_per_block"} {
				delete(obs, k)
			}
			if !math.IsNaN(e.Time) {
				obs["time"] = e.Time // Kernel Tuner's own mean
			}
			ev.Observations = obs
			ms, merr := objective.Metrics(s.Metrics, obs, s.Env(cfg))
			for k, v := range ms {
				ev.Metrics[k] = v
			}
			all := map[string]float64{}
			for k, v := range ev.Metrics {
				all[k] = v
			}
			if v, ok := obj.Value(obs, all); ok && merr == nil && !math.IsNaN(v) {
				ev.Objective = &v
			}
		}
		counts[ev.Status]++
		evals = append(evals, ev)
	}
	if len(evals) == 0 {
		return badInput("import: no configuration of %s's search space is in %s", s.Path, c.Path)
	}
	if err := db.BeginRun(run); err != nil {
		return err
	}
	for _, ev := range evals {
		ev.RunID = run.ID
	}
	if err := db.AddMany(evals); err != nil {
		_ = db.EndRun(run.ID, store.RunFailed)
		return err
	}
	if err := db.EndRun(run.ID, store.RunDone); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"db": db.Path(), "run": run.ID, "imported": len(evals), "statuses": counts,
			"missing": counts["missing"], "entries": len(c.Entries), "space": sp.Len(), "device_uuid": dev.UUID, "spec_hash": s.Hash,
		})
	}
	var parts []string
	for _, k := range []string{"valid", "compile_failed", "launch_failed", "runtime_failed", "timeout", "verification_failed"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	fmt.Fprintf(out, "imported %d configurations of %s (%s) into %s as run %d\n", len(evals), c.Path, strings.Join(parts, ", "), db.Path(), run.ID)
	if counts["missing"] > 0 || len(c.Entries) > len(evals) {
		fmt.Fprintf(out, "%d configurations of the space are not in the file; %d entries of the file are not in the space\n",
			counts["missing"], len(c.Entries)-len(evals))
	}
	return nil
}

func newExportCmd() *cobra.Command {
	var dbPath, format, outPath string
	var runID int64
	c := &cobra.Command{
		Use:   "export --db FILE --run ID",
		Short: "Write a run of the results database as a Kernel Tuner cache or a T4 results file",
		Long: `Write the evaluations of one run as a Kernel Tuner cache file (--format kerneltuner, the default) or a
T4 results file (--format t4). Statuses become Kernel Tuner's error markers (the imported marker when the
run was imported); metrics are written under their names; an imported run gets back its file's
problem_size and tune_params.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd, dbPath, runID, format, outPath)
		},
	}
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "results database (SQLite)")
	c.Flags().Int64Var(&runID, "run", 0, "run to export (see the run id printed by tune, replay --db or import)")
	c.Flags().StringVar(&format, "format", "kerneltuner", "output format: kerneltuner or t4")
	c.Flags().StringVarP(&outPath, "output", "o", "", "output file (default: standard output)")
	return c
}

func runExport(cmd *cobra.Command, dbPath string, runID int64, format, outPath string) error {
	if format != "kerneltuner" && format != "t4" {
		return badInput("export: unknown format %q (valid: kerneltuner, t4)", format)
	}
	if runID <= 0 {
		return badInput("export: --run ID is required (a positive run id)")
	}
	if _, err := os.Stat(dbPath); err != nil {
		return badInput("export: results database %s: %v", dbPath, errors.Unwrap(err))
	}
	db, err := store.Open(dbPath)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()
	run, err := db.Run(runID)
	if errors.Is(err, store.ErrNotFound) {
		return badInput("export: %s has no run %d", db.Path(), runID)
	} else if err != nil {
		return err
	}
	evals, err := db.Evaluations(runID)
	if err != nil {
		return err
	}
	if len(evals) == 0 {
		return badInput("export: run %d of %s has no evaluations", runID, db.Path())
	}
	c, err := runCache(run, evals)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if format == "t4" {
		err = c.WriteT4(&buf)
	} else {
		err = c.Write(&buf)
	}
	if err != nil {
		return err
	}
	var w io.Writer = cmd.OutOrStdout()
	if outPath != "" {
		if err := os.WriteFile(outPath, buf.Bytes(), 0o644); err != nil {
			return inputError{fmt.Errorf("export: %v", err)}
		}
		return nil
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// runCache turns a run's evaluations into a Cache. Later evaluations of a
// key replace earlier ones.
func runCache(run *store.Run, evals []*store.Evaluation) (*cache.Cache, error) {
	c := &cache.Cache{DeviceName: run.DeviceName, KernelName: run.Kernel, Objective: run.Objective,
		Entries: map[string]*cache.Entry{}, ParamValues: map[string][]any{}}
	imported := false
	if h, ok := run.Settings[settingHeader].(string); ok {
		if err := c.UnmarshalHeader(h); err != nil {
			return nil, fmt.Errorf("export: run %d: %v", run.ID, err)
		}
		imported = true
	} else {
		for _, p := range evals[0].Params {
			c.ParamNames = append(c.ParamNames, p.Name)
		}
	}
	seen := map[string]map[string]bool{}
	for _, e := range evals {
		if len(e.Params) != len(c.ParamNames) {
			return nil, fmt.Errorf("export: run %d: evaluation %q has %d parameters, the run has %d", run.ID, e.Key, len(e.Params), len(c.ParamNames))
		}
		nan := math.NaN()
		en := &cache.Entry{Key: e.Key, Time: nan, Times: e.TimesMs, CompileMs: e.CompileMs, BenchmarkMs: e.BenchmarkMs,
			FrameworkMs: e.FrameworkMs, VerificationMs: nan, StrategyMs: nan, Status: backend.Status(e.Status)}
		for i, p := range e.Params {
			if p.Name != c.ParamNames[i] {
				return nil, fmt.Errorf("export: run %d: evaluation %q has parameter %q where the run has %q", run.ID, e.Key, p.Name, c.ParamNames[i])
			}
			en.Params = append(en.Params, p.Value)
			if !imported {
				if seen[p.Name] == nil {
					seen[p.Name] = map[string]bool{}
				}
				k := cache.KeyOf([]any{p.Value})
				if !seen[p.Name][k] {
					seen[p.Name][k] = true
					c.ParamValues[p.Name] = append(c.ParamValues[p.Name], p.Value)
				}
			}
		}
		if en.Valid() {
			if t, ok := e.Observations["time"]; ok {
				en.Time = t
			}
		} else if cache.IsMarker(e.Reason) {
			en.Error = e.Reason
		} else {
			en.Error = cache.MarkerOf(en.Status)
		}
		for k, v := range e.Metrics {
			switch k {
			case "verification_time":
				en.VerificationMs = v
			case "strategy_time":
				en.StrategyMs = v
			default:
				if en.Extra == nil {
					en.Extra = map[string]float64{}
				}
				en.Extra[k] = v
			}
		}
		if !imported {
			// Measured by gtune: its energy observations under Kernel
			// Tuner's names.
			for obs, kt := range map[string]string{"energy": "energy", "power": "power", "sm_clock": "core_freq", "temperature": "temperature"} {
				if v, ok := e.Observations[obs]; ok {
					if en.Extra == nil {
						en.Extra = map[string]float64{}
					}
					if _, dup := en.Extra[kt]; !dup {
						en.Extra[kt] = v
					}
				}
			}
		}
		if !e.StartedAt.IsZero() {
			en.Timestamp = formatPyTime(e.StartedAt)
		}
		c.Entries[e.Key] = en
	}
	if !imported {
		for _, n := range c.ParamNames {
			sortParamValues(c.ParamValues[n])
		}
	}
	return c, nil
}

// sortParamValues orders a parameter's values numerically when they are
// all numbers (the order they were evaluated in says nothing).
func sortParamValues(vs []any) {
	num := func(v any) (float64, bool) {
		switch t := v.(type) {
		case int:
			return float64(t), true
		case float64:
			return t, true
		}
		return 0, false
	}
	for _, v := range vs {
		if _, ok := num(v); !ok {
			return
		}
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, _ := num(vs[i])
		b, _ := num(vs[j])
		return a < b
	})
}
