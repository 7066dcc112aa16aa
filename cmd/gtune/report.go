package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/report"
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
		if runs, err = report.ReadRuns(f.dbPath, args); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("pareto") {
		if err := report.ParetoFound(runs, a, b); err != nil {
			return err
		}
	}
	if f.asText {
		report.RunsReport(cmd.OutOrStdout(), runs)
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
