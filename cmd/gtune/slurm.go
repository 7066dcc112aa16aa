package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/shard"
	"github.com/gtune/gtune/slurm"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newSlurmCmd) }

func newSlurmCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "slurm",
		Short: "Tune on a Slurm cluster through sbatch (sharded: an array job and a merge job)",
	}
	c.AddCommand(newSlurmSubmitCmd())
	return c
}

type slurmFlags struct {
	shards, nodes, gpusPerNode, cpusPerTask int
	results, partition, time, account, gres string
	mergePartition                          string
	sbatch                                  string
	noGPU, dryRun                           bool
}

func newSlurmSubmitCmd() *cobra.Command {
	var f slurmFlags
	c := &cobra.Command{
		Use:   "submit [--nodes N --gpus-per-node G | --shards K] [flags] -- SPEC|WORKLOAD [tune flags]",
		Short: "Write and submit a tuning job: one run over N nodes' GPUs (coordinated), or K array tasks each tuning a shard",
		Long: `submit writes batch scripts into --results and submits them with sbatch.

Coordinated (the default): one job of --nodes N × --gpus-per-node G GPUs whose script runs "gtune tune SPEC
[tune flags] --slurm --db RESULTS/tune.db" on the first node: one run over every GPU of the allocation, any
strategy, each GPU a worker started by srun. Submitting again resumes from tune.db.

Sharded (--shards K), for clusters whose jobs cannot talk to each other: an array job of K tasks,
task I running "gtune tune SPEC [tune flags] --shard I/K" on one GPU into a database on its node's local disk
(copied to --results as shard-I.db when it ends, also when cancelled or out of time), and a merge job that
starts when the array has ended and merges the shards into --results/merged.db (gtune merge). Submitting
again with the same --results resumes: each task starts from the shard database the last attempt left.
The shards tune apart, so the strategy is brute_force or random_sample (--max-evals is per shard). --dry-run
prints the scripts and submits nothing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return badInput("give the tuning after --: gtune slurm submit --shards K -- SPEC [tune flags]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runSlurmSubmit(cmd, args, f) },
	}
	fl := c.Flags()
	flagrange.Int(fl, &f.shards, "shards", 0, 1, 100000, "array tasks, each tuning one shard of the search space (brute_force, random_sample); without it, one coordinated run")
	flagrange.Int(fl, &f.nodes, "nodes", 1, 1, 100000, "coordinated: nodes of the job")
	flagrange.Int(fl, &f.gpusPerNode, "gpus-per-node", 1, 1, 1024, "coordinated: GPUs per node, one worker each")
	fl.StringVar(&f.results, "results", "gtune-slurm", "shared directory for the scripts, the tasks' logs and databases, and merged.db")
	fl.StringVar(&f.partition, "partition", "", "Slurm partition (--partition)")
	fl.StringVar(&f.time, "time", "", "time limit of each task (--time, e.g. 2:00:00)")
	fl.StringVar(&f.account, "account", "", "account charged (--account)")
	fl.StringVar(&f.gres, "gres", "", "the GPUs as the site requests them (--gres): per task with --shards (e.g. gpu:a100:1), per node for a coordinated job (e.g. gpu:a100:4); default --gpus-per-task=1, or --gpus-per-node")
	fl.StringVar(&f.mergePartition, "merge-partition", "", "the merge job's partition: it needs no GPU, so a CPU partition where the site has one (default: --partition)")
	flagrange.Int(fl, &f.cpusPerTask, "cpus-per-task", 0, 0, 4096, "CPUs per task (--cpus-per-task), for each task's compile processes (0: the site's default)")
	fl.BoolVar(&f.noGPU, "no-gpu", false, "request no GPU (tuning on the simulated GPU: --backend sim)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the two batch scripts; submit nothing")
	fl.StringVar(&f.sbatch, "sbatch", "sbatch", "the sbatch command")
	return c
}

func runSlurmSubmit(cmd *cobra.Command, args []string, f slurmFlags) error {
	sharded := cmd.Flags().Changed("shards")
	if sharded && (cmd.Flags().Changed("nodes") || cmd.Flags().Changed("gpus-per-node")) {
		return badInput("--shards is a job of K one-GPU tasks; --nodes and --gpus-per-node shape a coordinated job: give one or the other")
	}
	path, strat, err := checkSlurmTune(cmd, args)
	if err != nil {
		return err
	}
	name := slurm.JobName("gtune-" + strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if !workload.IsFile(path) {
		s, err := spec.Load(path)
		if err != nil {
			return err
		}
		if strat, err = strategy.Resolve(strat, s.Strategy); err != nil {
			return err
		}
		name = slurm.JobName("gtune-" + s.KernelName)
	} else if strat == "" {
		strat = "brute_force"
	}
	if sharded {
		if _, err := shard.Restrictor("0/1", strat); err != nil {
			return err
		}
	}
	j, err := slurm.Prepare(slurm.Job{Name: name, Shards: f.shards, Nodes: f.nodes, GPUsPerNode: f.gpusPerNode,
		Partition: f.partition, Time: f.time, Account: f.account, GRES: f.gres, NoGPU: f.noGPU,
		MergePartition: f.mergePartition, CPUsPerTask: f.cpusPerTask}, path, args, f.results)
	if err != nil {
		return err
	}
	return slurm.SubmitOrPrint(cmd.Context(), cmd.OutOrStdout(), j, sharded, f.dryRun, f.sbatch)
}

// checkSlurmTune checks the tuning after -- as tune would read it,
// before anything is written or submitted (a typo must not cost a queue
// wait): one spec or workload file, no flag the job sets, and every tune
// flag as tune checks it (the objective, the repeat policy, the
// strategy's hyperparameters, the spec and its space), stopping before
// the database and the GPU. It returns the file and the strategy named
// ("" for the spec's). Errors are bad input.
func checkSlurmTune(cmd *cobra.Command, args []string) (string, string, error) {
	tc := newTuneCmd()
	if err := tc.Flags().Parse(args); err != nil {
		return "", "", badInput("the tune flags after --: %v", err)
	}
	targs := tc.Flags().Args()
	if len(targs) != 1 {
		return "", "", badInput("after --: one spec or workload file and tune's flags (got %d files: %s)", len(targs), strings.Join(targs, " "))
	}
	for _, name := range []string{"db", "shard", "slurm", "nodes", "gpus-per-node", "device", "devices"} {
		if tc.Flags().Changed(name) {
			return "", "", badInput("after --: --%s is set by the job (its GPUs, each task's shard and database)", name)
		}
	}
	path := targs[0]
	if _, err := os.Stat(path); err != nil {
		return "", "", badInput("%v", err)
	}
	vc := newTuneCmdOpts(true)
	vc.SetArgs(args)
	vc.SetOut(io.Discard)
	vc.SetErr(cmd.ErrOrStderr())
	vc.SilenceErrors, vc.SilenceUsage = true, true
	vc.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return inputError{err} })
	if err := vc.ExecuteContext(cmd.Context()); err != nil {
		if exitCode(err) == exitBadInput {
			return "", "", badInput("the tuning after --: %v", err)
		}
		return "", "", fmt.Errorf("the tuning after --: %w", err)
	}
	strat, _ := tc.Flags().GetString("strategy")
	return path, strat, nil
}
