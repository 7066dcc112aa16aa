package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/gpuctl"
)

func init() { subcommands = append(subcommands, newRestoreCmd) }

func newRestoreCmd() *cobra.Command {
	var journal, db string
	c := &cobra.Command{
		Use:   "restore",
		Short: "Put back the GPU settings recorded in a journal after gtune tune --allow-gpu-settings was killed",
		Long: `gtune tune --allow-gpu-settings writes the GPU's original clocks and power limit to a journal before its
first change and restores them when it exits, also after SIGINT, SIGTERM or a panic. After a crash or
kill -9 the journal remains; gtune restore reads it, checks its checksum and that it belongs to this GPU,
puts the settings back (unlocking clocks, the application clocks, the power limit) and removes it.
A corrupt journal, or one for another GPU, changes nothing. A run over several GPUs (--devices) keeps one
journal per GPU, the first GPU's at the database path + .gpu-journal and the others' with .1, .2, ...
appended; --db restores each of them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("journal") {
				return gpuctl.RestoreJournal(cmd.OutOrStdout(), journal, true)
			}
			first := gpuctl.DefaultJournalPath(db)
			// Every GPU's journal, the further GPUs' of a run over
			// several in order: one that cannot be restored (damaged,
			// another GPU's) leaves the next GPU's to be restored all
			// the same, and the error names each that failed.
			var errs []error
			bad := true
			for i, p := range append([]string{first}, gpuctl.FurtherJournals(first)...) {
				if err := gpuctl.RestoreJournal(cmd.OutOrStdout(), p, i > 0); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "gtune: %v\n", err)
					errs = append(errs, err)
					bad = bad && exitCode(err) == exitBadInput
				}
			}
			switch {
			case len(errs) == 0:
				return nil
			case bad:
				return badInput("%d of the journals of %s could not be restored (above); the others were", len(errs), db)
			}
			return fmt.Errorf("%d of the journals of %s could not be restored (above); the others were", len(errs), db)
		},
	}
	c.Flags().StringVar(&journal, "journal", "", "the journal (default: the database path + .gpu-journal)")
	c.Flags().StringVar(&db, "db", "gtune.db", "results database whose journal to use when --journal is not given")
	return c
}
