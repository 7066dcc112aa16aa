package slurm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gtune/gtune/internal/badinput"
)

// Prepare completes j (its name, shape and queue set) as the job that
// runs the tuning args of the spec or workload at path: this gtune
// executable, the file's path made absolute in the tune arguments (the
// tasks run in another directory), and the results directory made
// absolute. Errors: a job Slurm would refuse or could be injected by
// (Check), as bad input (badinput).
func Prepare(j Job, path string, args []string, results string) (Job, error) {
	exe, err := os.Executable()
	if err != nil {
		return Job{}, fmt.Errorf("slurm: the gtune executable: %v", err)
	}
	results, err = filepath.Abs(results)
	if err != nil {
		return Job{}, badinput.New("--results: %v", err)
	}
	abs, _ := filepath.Abs(path)
	tune := make([]string, len(args))
	for i, a := range args {
		tune[i] = a
		if a == path {
			tune[i] = abs
		}
	}
	j.Gtune, j.Tune, j.Results = exe, tune, results
	if err := j.Check(); err != nil {
		return Job{}, badinput.New("%v", err)
	}
	return j, nil
}

// SubmitOrPrint writes j's scripts and submits them with sbatch (its
// path or name), saying so on out; with dryRun it prints them instead:
// the coordinated job, or where sharded the array of shards and its
// merge job. Errors: a results folder that cannot be made (bad input),
// sbatch's.
func SubmitOrPrint(ctx context.Context, out io.Writer, j Job, sharded, dryRun bool, sbatch string) error {
	results := j.Results
	write := func(p, text string) error { return os.WriteFile(p, []byte(text), 0o755) }
	switch {
	case !sharded && dryRun:
		fmt.Fprintf(out, "# %s/tune.sbatch\n%s", results, j.CoordinatedScript())
		return nil
	case sharded && dryRun:
		fmt.Fprintf(out, "# %s/shards.sbatch\n%s\n# %s/merge.sbatch (sbatch --dependency=afterany:ARRAY_JOB)\n%s", results, j.ArrayScript(), results, j.MergeScript())
		return nil
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return badinput.New("--results: %v", err)
	}
	if !sharded {
		id, _, err := SubmitCoordinated(ctx, j, sbatch, write)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "gtune: submitted job %s (%d nodes × %d GPUs, one run); results in %s/tune.db\n", id, j.Nodes, j.GPUsPerNode, results)
		return nil
	}
	s, err := Submit(ctx, j, sbatch, write)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "gtune: submitted array job %s (%d shards) and merge job %s; results in %s (merged.db when the merge job ends)\n", s.ArrayJob, j.Shards, s.MergeJob, results)
	return nil
}
