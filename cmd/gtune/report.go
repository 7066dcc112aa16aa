package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/store"
)

func init() { subcommands = append(subcommands, newReportCmd) }

// reportFlags are report's flags.
type reportFlags struct {
	dbPath, out, pareto string
	bench               []string
	asText              bool
}

func newReportCmd() *cobra.Command {
	var f reportFlags
	c := &cobra.Command{
		Use:   "report [RUN | FILE:RUN ...]",
		Short: "Report runs as one self-contained HTML file (charts of the Pareto front, the convex hull, GPU settings, progress, parameter effects, correlations), or for a terminal with --text",
		Long: `report reads runs of the results database (read-only; by default its newest run) and writes one HTML
file that any browser opens offline (nothing is fetched: the charts are SVG drawn by gonum/plot, hovering a
point shows its configuration, tables sort by any column). Several runs of one kernel, on different GPUs or
clocks, share each chart's axes. Sections: the runs' facts; the best configurations; the Pareto front of
time × energy (--pareto A,B: of any two observations or metrics); the convex hull of performance × efficiency and its configurations in hull order
(autotuning-gemm-energy-beast.md, Figure 5 and Table II); time, energy, power and EDP against each GPU
setting with the ridge frequency and the power-capping ratio; the best objective so far against evaluations
and tuning time; the objective against each tunable parameter; Pearson's and Spearman's coefficients of
every observation and metric with the performance and the efficiency objective (Figures 6-9). --bench FILE
adds the fraction of the optimum each strategy of a gtune bench-strategies --json result reaches against
its budget (without RUN, no database is read).

A RUN is a run number of --db; FILE:RUN is run RUN of the database FILE, so that runs measured on
different machines, each in its own database, share one report (named "FILE run RUN" there).

--text prints each run for a terminal instead: its facts, the best configuration by time, energy and EDP,
the Pareto front, the hull's configurations and a text plot of the best objective so far.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runReport(cmd, args, f) },
	}
	c.Flags().StringVar(&f.dbPath, "db", "gtune.db", "results database (SQLite)")
	c.Flags().StringVarP(&f.out, "output", "o", "report.html", "the HTML file to write")
	c.Flags().StringArrayVar(&f.bench, "bench", nil, "a gtune bench-strategies --json document to chart (repeatable); with no RUN, the database is not read")
	c.Flags().StringVar(&f.pareto, "pareto", "time,energy", "the two quantities of the Pareto front, A,B: observations or metrics; a rate (…/s) or efficiency (…/W) is maximized, any other minimized")
	c.Flags().BoolVar(&f.asText, "text", false, "print the report for a terminal instead of writing HTML")
	return c
}

// runReport reads the runs and bench-strategies documents and writes the
// report: HTML, or text for a terminal.
func runReport(cmd *cobra.Command, args []string, f reportFlags) error {
	a, b, ok := strings.Cut(f.pareto, ",")
	if !ok || a == "" || b == "" || a == b || strings.Contains(b, ",") {
		return badInput("--pareto %q: want two different quantities, A,B (observations or metrics, such as time,energy or GFLOP/s,GFLOPS/W)", f.pareto)
	}
	if !f.asText {
		if f.out == "" {
			return badInput("-o: an empty path; name the HTML file to write")
		}
		if fi, err := os.Stat(f.out); err == nil && fi.IsDir() {
			return badInput("-o %s is a folder; name the HTML file to write, e.g. %s", f.out, filepath.Join(f.out, "report.html"))
		}
	}
	docs, err := readBenchDocs(f.bench)
	if err != nil {
		return err
	}
	if f.asText && len(docs) > 0 {
		return badInput("--bench is charted in the HTML report; gtune bench-strategies prints its table for a terminal")
	}
	var runs []report.HTMLRun
	if len(args) > 0 || len(docs) == 0 {
		if runs, err = readRuns(f.dbPath, args); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("pareto") {
		if err := paretoFound(runs, a, b); err != nil {
			return err
		}
	}
	if f.asText {
		for i, r := range runs {
			if i > 0 {
				fmt.Fprintln(cmd.OutOrStdout())
			}
			report.RunReport(cmd.OutOrStdout(), r.Run, r.Evals)
		}
		return nil
	}
	opts := report.HTMLOptions{Pareto: [2]string{a, b}, Generated: time.Now()}
	if err := writeReportFile(f.out, runs, docs, opts); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "gtune: wrote %s (%d run(s), %d bench-strategies result(s))\n", f.out, len(runs), len(docs))
	return nil
}

// readBenchDocs reads the bench-strategies documents of --bench.
// Errors are bad input.
func readBenchDocs(names []string) ([]report.BenchDoc, error) {
	var docs []report.BenchDoc
	for _, name := range names {
		b, err := bounded.ReadFile(name, bounded.Data, "a bench-strategies document")
		if err != nil {
			return nil, inputError{fmt.Errorf("--bench: %w", err)}
		}
		d, err := report.ReadBenchDoc(bytes.NewReader(b), name)
		if err != nil {
			return nil, inputError{fmt.Errorf("--bench %w", err)}
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// writeReportFile writes the HTML report to out, beside it first and
// renamed: a failed report leaves the file that was there. Errors: a
// folder that cannot be written in (bad input), the write's.
func writeReportFile(out string, runs []report.HTMLRun, docs []report.BenchDoc, opts report.HTMLOptions) error {
	f, err := os.CreateTemp(filepath.Dir(out), ".gtune-report-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return inputError{fmt.Errorf("-o %s: cannot write in %s: %w", out, filepath.Dir(out), err)}
	}
	err = report.WriteHTML(f, runs, docs, opts)
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// readRuns reads the runs args name, opened read-only: a run number of
// the database at dbPath, or FILE:N, run N of the database FILE (named
// "FILE run N" in the report, FILE's base name); none: the newest run of
// dbPath. Errors: a database that cannot be opened, a run it lacks.
func readRuns(dbPath string, args []string) ([]report.HTMLRun, error) {
	if len(args) == 0 {
		return readDBRuns(dbPath, nil)
	}
	// Every argument's form first: a typo is named as such, not blamed on
	// a database it never named.
	for _, a := range args {
		if _, _, named := dbRun(a); named {
			continue
		}
		if _, err := strconv.ParseInt(a, 10, 64); err != nil {
			return nil, badInput("RUN %q: want a run number N of --db, or FILE:N for run N of the database FILE (gtune runs lists them)", a)
		}
	}
	var runs []report.HTMLRun
	seen := map[string]bool{}
	for _, a := range args {
		file, id, named := dbRun(a)
		if !named {
			file, id = dbPath, a
		}
		rs, err := readDBRuns(file, []string{id})
		if err != nil {
			return nil, err
		}
		if named {
			rs[0].Name = fmt.Sprintf("%s run %s", filepath.Base(file), id)
		}
		// The same run twice is the same name twice: a usage error.
		k := rs[0].Name
		if k == "" {
			k = fmt.Sprintf("run %d", rs[0].Run.ID)
		}
		if seen[k] {
			return nil, badInput("report: two runs are named %q (%s is given twice; runs of several databases need names of their own: FILE:N)", k, a)
		}
		seen[k] = true
		runs = append(runs, rs...)
	}
	return runs, nil
}

// dbRun splits FILE:N into the database FILE and the run number N; false
// when a is not of that form (a run number of --db).
func dbRun(a string) (file, id string, ok bool) {
	i := strings.LastIndex(a, ":")
	if i <= 0 {
		return "", "", false
	}
	if _, err := strconv.ParseInt(a[i+1:], 10, 64); err != nil {
		return "", "", false
	}
	return a[:i], a[i+1:], true
}

// readDBRuns reads runs args (their numbers; none: the newest run) of the
// database at dbPath, opened read-only.
func readDBRuns(dbPath string, args []string) ([]report.HTMLRun, error) {
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		return nil, inputError{err}
	}
	defer db.Close()
	if len(args) == 0 {
		all, err := db.Runs()
		if err != nil {
			return nil, err
		}
		if len(all) == 0 {
			return nil, badInput("%s holds no run", db.Path())
		}
		newest := all[0]
		for _, r := range all {
			if r.ID > newest.ID {
				newest = r
			}
		}
		args = []string{strconv.FormatInt(newest.ID, 10)}
	}
	var runs []report.HTMLRun
	for _, a := range args {
		run, evals, err := storedRun(db, a)
		if err != nil {
			return nil, err
		}
		runs = append(runs, report.HTMLRun{Run: run, Evals: evals})
	}
	return runs, nil
}

// paretoFound refuses (bad input) a --pareto whose two quantities no
// valid configuration of the runs has both of, naming the quantities
// they do have: a front of nothing is not a report.
func paretoFound(runs []report.HTMLRun, a, b string) error {
	has := map[string]bool{}
	for _, r := range runs {
		for _, e := range r.Evals {
			if e.Status != "valid" {
				continue
			}
			get := func(k string) bool {
				_, ok := e.Observations[k]
				if !ok {
					_, ok = e.Metrics[k]
				}
				return ok
			}
			if get(a) && get(b) {
				return nil
			}
			for k := range e.Observations {
				has[k] = true
			}
			for k := range e.Metrics {
				has[k] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(has))
	if len(names) == 0 {
		return badInput("--pareto %s,%s: the runs have no valid configuration", a, b)
	}
	return badInput("--pareto %s,%s: no valid configuration of the runs has both (they have: %s)", a, b, strings.Join(names, ", "))
}
