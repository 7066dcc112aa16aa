package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/shard"
	"github.com/gtune/gtune/store"
)

func init() { subcommands = append(subcommands, newMergeCmd) }

func newMergeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "merge OUT.db SHARD.db...",
		Short: "Merge the results databases of shards (tune --shard, slurm submit --shards) into one run per kernel and GPU model",
		Long: `merge copies the runs of the shard databases into OUT.db (created if needed): the runs that tuned the same
spec on the same GPU model for the same objective become one run, with every evaluation's observations,
launches and PTX, as if one run had tuned the whole space (a library routine's runs, the reference points
of the kernels measured on their GPU, stay one run a GPU). Each evaluation keeps the UUID of the GPU that
measured it; a configuration evaluated by several shards is kept once (a valid evaluation first, then the
newest); the merged run's settings list where each part came from (file, run, host, GPU, shard). A run still
marked running (a shard that died) is merged and makes the merged run interrupted.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, shards := args[0], args[1:]
			// Files are told apart by device and inode (os.SameFile):
			// a symbolic or hard link to a shard is that shard.
			outInfo, outErr := os.Stat(out)
			for _, p := range shards {
				fi, err := os.Stat(p)
				if err != nil {
					return badInput("merge: shard database %v", err)
				}
				if fi.IsDir() {
					return badInput("merge: shard database %s is a directory", p)
				}
				if outErr == nil && os.SameFile(fi, outInfo) {
					if p != out {
						return badInput("merge: %s is both the output and a shard (it is the file %s)", p, out)
					}
					return badInput("merge: %s is both the output and a shard", p)
				}
			}
			db, err := store.Open(out)
			if err != nil {
				return inputError{err}
			}
			defer db.Close()
			if _, err := shard.Merge(db, shards, version, cmd.OutOrStdout()); err != nil {
				return inputError{err}
			}
			return nil
		},
	}
}
