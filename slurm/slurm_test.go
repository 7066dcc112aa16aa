package slurm

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The batch scripts of a sharded job and of a coordinated one, as golden
// files: every directive, the resume from the results directory, the copy
// back on exit and on SIGTERM, and quoting of paths with spaces.
func TestScriptsGolden(t *testing.T) {
	j := Job{Name: "gtune-vector_add", Shards: 4, Gtune: "/opt/gtune/bin/gtune", Results: "/scratch/my results",
		Tune:      []string{"/home/u/specs/vector add.json", "--strategy", "random_sample", "--max-evals", "50"},
		Partition: "gpu", Time: "1:00:00", Account: "proj1", GRES: "gpu:a100:1"}
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	c := j
	c.Shards, c.Nodes, c.GPUsPerNode = 0, 2, 4
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"shards.sbatch": j.ArrayScript(), "merge.sbatch": j.MergeScript(), "tune.sbatch": c.CoordinatedScript()} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the golden file:\n%s", name, got)
		}
		// bash must read it.
		if bash, err := exec.LookPath("bash"); err == nil {
			if out, err := exec.Command(bash, "-n", "-c", got).CombinedOutput(); err != nil {
				t.Errorf("%s: bash -n: %v: %s", name, err, out)
			}
		}
	}
	j.GRES, j.NoGPU = "", false
	if !strings.Contains(j.ArrayScript(), "#SBATCH --gpus-per-task=1\n") {
		t.Error("no GRES: want --gpus-per-task=1")
	}
	j.NoGPU = true
	if a := j.ArrayScript(); strings.Contains(a, "#SBATCH --gpus") || strings.Contains(a, "#SBATCH --gres") {
		t.Error("NoGPU: a GPU is requested")
	}
	for _, bad := range []Job{{Shards: 0, Gtune: "/g", Results: "/r", Tune: []string{"s"}}, {Shards: 1, Gtune: "g", Results: "/r", Tune: []string{"s"}}, {Shards: 1, Gtune: "/g", Results: "/r"}, {Shards: 0, Nodes: 0, GPUsPerNode: 1, Gtune: "/g", Results: "/r", Tune: []string{"s"}}} {
		if bad.Check() == nil {
			t.Errorf("Check(%+v): no error", bad)
		}
	}
}

// The real cluster: Debian's slurmctld and two slurmd on 127.0.0.1,
// started by scripts/slurm-test.sh, which runs the scenarios (shards
// merged equal one brute force; scancel and kill -9 mid-run, then
// resubmitting, each configuration evaluated once; coordinated runs of
// three strategies over 4 srun workers; a worker, the coordinator, and
// a submitted job killed or cancelled mid-run; a cancelled salloc, a
// worker that stops answering, a node's slurmd killed, a sharded job
// resubmitted while it runs). Run where the
// packages are installed and the test runs as root; skipped elsewhere
// (apt-get install slurmctld slurmd slurm-client munge).
func TestSlurmCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Slurm cluster")
	}
	for _, c := range []string{"slurmctld", "slurmd", "sbatch", "munged"} {
		if _, err := exec.LookPath(c); err != nil {
			if _, err := os.Stat("/usr/sbin/" + c); err != nil {
				t.Skipf("no %s: install slurmctld slurmd slurm-client munge to run the cluster tests", c)
			}
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the loopback cluster's daemons run as root")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "slurm-test.sh"), "run")
	cmd.Env = append(os.Environ(), "SLURM_DIR="+dir, "TMPDIR="+dir, "PATH="+os.Getenv("PATH")+":/usr/sbin")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("scripts/slurm-test.sh run: %v", err)
	}
	for _, want := range []string{"PASS sharded", "PASS cancel", "PASS kill9", "PASS coordinated random_sample", "PASS coordinated genetic_algorithm",
		"PASS coordinated bayes_opt", "PASS coordinated, worker killed", "PASS coordinated, coordinator killed", "PASS submitted coordinated job",
		"PASS coordinated, salloc killed", "PASS a worker that stops answering", "PASS slurmd killed", "PASS resubmitted while running"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q", want)
		}
	}
}

// GPU workers that do not start (srun missing here; a job step Slurm
// never starts within the start timeout on a cluster) end OpenWorkers
// with the worker's error, not a panic closing the ones that failed.
func TestOpenWorkersNoneStarts(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "1")
	_, _, err := OpenWorkers(context.Background(), io.Discard, WorkerOptions{Srun: "/nonexistent/srun", Nodes: 1, PerNode: 2})
	if err == nil || !strings.Contains(err.Error(), "--slurm: GPU worker 0: ") || !strings.Contains(err.Error(), "/nonexistent/srun") {
		t.Fatalf("OpenWorkers: %v", err)
	}
}
