package main

import (
	"github.com/spf13/cobra"

	"github.com/gtune/gtune/ncupass"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

func init() { subcommands = append(subcommands, newObserveCmd) }

func newObserveCmd() *cobra.Command {
	var f tuneFlags
	c := &cobra.Command{
		Use:   "observe SPEC RUN",
		Short: "Profile a stored run's configurations with Nsight Compute on every GPU named, as tune --observe does after a run",
		Long: `observe profiles the valid configurations of run RUN of --db, tuned from SPEC, that have no metrics yet: a
worker under ncu (read-only, --clock-control none) on each GPU of --devices at a time, the configurations dealt
out over them, each GPU of the run's model; the metrics are stored as observations of the run's evaluations, for
gtune report (correlations, Figure 9's classes). A sweep merged from shards, or tuned without --observe, gets its
counters in one pass, on another host of the same GPU model if need be.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := spec.Load(args[0])
			if err != nil {
				return err
			}
			metrics, err := ncupass.ParseObserve(f.observe)
			if err != nil {
				return err
			}
			f.backend = "cuda"
			devs, err := gpuIndexes(f)
			if err == nil && len(devs) == 0 {
				err = badInput("--devices %s: no GPU here", f.devices)
			}
			if err != nil {
				return err
			}
			db, err := store.Open(f.db)
			if err != nil {
				return inputError{err}
			}
			defer db.Close()
			return ncupass.ObserveRun(cmd.Context(), cmd.ErrOrStderr(), s, db, args[1], metrics, ncupass.Options{Ncu: f.ncu, Device: devs[0], Devices: devs, Version: version, CompileCache: openCompileCache(cmd, f)})
		},
	}
	c.Flags().StringVar(&f.db, "db", "gtune.db", "results database (SQLite) holding RUN")
	c.Flags().StringVar(&f.devices, "devices", "0", "the GPUs to profile on: all, or indexes such as 0,2,3")
	c.Flags().StringVar(&f.observe, "observe", "ncu", "ncu or ncu:METRIC,...: the metrics (default: DRAM, L2 and L1 throughput, achieved occupancy, IPC, warp stall reasons)")
	c.Flags().StringVar(&f.ncu, "ncu", "ncu", "the Nsight Compute command")
	return c
}
