package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/internal/progress"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

func init() { subcommands = append(subcommands, newImportCmd, newExportCmd) }

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
	c, err := cache.LoadWarn(cmd.ErrOrStderr(), cachePath)
	if err != nil {
		return err
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
	var run *store.Run
	err = progress.During(cmd.ErrOrStderr(), "importing", func() (err error) {
		run, err = cache.ImportRun(r, s, version)
		return err
	})
	if err != nil {
		return err
	}
	db, err := store.Open(dbPath)
	if err != nil {
		return inputError{err}
	}
	defer db.Close()
	evals, counts, err := cache.StoreImport(db, r, s, run)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return report.WriteJSON(out, report.ImportDoc{DB: db.Path(), Device: report.RunRef(run), Entries: len(c.Entries),
			Imported: len(evals), Missing: counts["missing"], Run: run.ID, Space: sp.Len(), SpecHash: s.Hash, Statuses: counts})
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
		Use:   "export RUN [--db FILE]",
		Short: "Write a run of the results database as a Kernel Tuner cache or a T4 results file",
		Long: `Write the evaluations of one run as a Kernel Tuner cache file (--format kerneltuner, the default) or a
T4 results file (--format t4). Statuses become Kernel Tuner's error markers (the imported marker when the
run was imported); metrics are written under their names; an imported run gets back its file's
problem_size and tune_params. RUN is a run number, as show and report take it (--run N says the same).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				n, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil || n <= 0 {
					return badInput("export: RUN %q: want a run number (gtune runs lists them)", args[0])
				}
				if cmd.Flags().Changed("run") && n != runID {
					return badInput("export: RUN %d and --run %d name different runs; give one", n, runID)
				}
				runID = n
			}
			return runExport(cmd, dbPath, runID, format, outPath)
		},
	}
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "results database (SQLite)")
	c.Flags().Int64Var(&runID, "run", 0, "run to export, as RUN (the run id printed by tune, replay --db or import)")
	c.Flags().StringVar(&format, "format", "kerneltuner", "output format: kerneltuner or t4")
	c.Flags().StringVarP(&outPath, "output", "o", "", "output file (default: standard output)")
	return c
}

func runExport(cmd *cobra.Command, dbPath string, runID int64, format, outPath string) error {
	b, err := cache.Export(dbPath, runID, format)
	if err != nil {
		return err
	}
	if outPath != "" {
		if err := os.WriteFile(outPath, b, 0o644); err != nil {
			return inputError{fmt.Errorf("export: %v", err)}
		}
		return nil
	}
	_, err = cmd.OutOrStdout().Write(b)
	return err
}
