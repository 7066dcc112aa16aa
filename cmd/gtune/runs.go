package main

import (
	"github.com/spf13/cobra"

	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/store"
)

func init() { subcommands = append(subcommands, newRunsCmd, newShowCmd) }

func newRunsCmd() *cobra.Command {
	var dbPath string
	var asJSON bool
	c := &cobra.Command{
		Use:   "runs",
		Short: "List the runs in a results database: kernel, device, strategy, objective, valid and failed evaluations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := store.OpenReadOnly(dbPath)
			if err != nil {
				return inputError{err}
			}
			defer db.Close()
			runs, err := db.Runs()
			if err != nil {
				return err
			}
			counts, err := db.StatusCounts()
			if err != nil {
				return err
			}
			rows := report.Rows(runs, counts)
			if asJSON {
				return report.RunsJSON(cmd.OutOrStdout(), rows)
			}
			report.RunsTable(cmd.OutOrStdout(), rows)
			return nil
		},
	}
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "results database (SQLite)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

func newShowCmd() *cobra.Command {
	var dbPath string
	var asJSON, failed, observations bool
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run's evaluations, with why each failed configuration failed (--failed: only those, reasons in full)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, run, evals, err := report.OpenStoredRun(dbPath, args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			if asJSON {
				return report.ShowJSON(cmd.OutOrStdout(), run, evals, failed)
			}
			var obs = db.Observations
			if !observations {
				obs = nil
			}
			return report.ShowTable(cmd.OutOrStdout(), run, evals, failed, obs)
		},
	}
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "results database (SQLite)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON document")
	c.Flags().BoolVar(&failed, "failed", false, "only the configurations that failed, with their full reasons")
	c.Flags().BoolVar(&observations, "observations", false, "also every observation of each configuration, with unit and method")
	return c
}
