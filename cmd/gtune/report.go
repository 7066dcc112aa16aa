package main

import (
	"github.com/spf13/cobra"

	"github.com/gtune/gtune/report"
)

func init() { subcommands = append(subcommands, newReportCmd) }

func newReportCmd() *cobra.Command {
	var dbPath string
	c := &cobra.Command{
		Use:   "report RUN",
		Short: "Report a run for a terminal: best configurations, the Pareto front of time × energy, the convex hull of performance × efficiency, the best-so-far curve",
		Long: `report reads a run of the results database (read-only) and prints its facts, the best configuration
by time, energy and EDP, the Pareto front of time × energy, the convex hull of performance × efficiency
(a rate metric of the spec, such as GFLOP/s or GB/s, against one per watt; the configurations on it,
fastest first, with what each step costs in speed and gains in efficiency:
autotuning-gemm-energy-beast.md, Figure 5 and Table II) and a text plot of the best objective so far.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, run, evals, err := openStoredRun(dbPath, args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			report.RunReport(cmd.OutOrStdout(), run, evals)
			return nil
		},
	}
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "results database (SQLite)")
	return c
}
