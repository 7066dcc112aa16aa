// Package slurm runs gtune's tuning on a Slurm cluster by the commands
// every Slurm site has (sbatch, squeue, scancel), never a scheduler of its
// own: a sharded tuning run is an array job whose task I tunes shard I of
// K of the search space (package shard) into a results database on the
// node's local disk, copied to a shared results directory as it ends,
// and a merge job, started when the array has ended however it ended,
// merges the shards' databases into one (gtune merge).
package slurm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Job is a tuning job: sharded (an array job, Shards tasks) or, with
// Shards 0, coordinated (one batch job of Nodes × GPUsPerNode GPUs whose
// script runs gtune tune --slurm). Paths must be absolute: the scripts
// run on other nodes, from another working directory.
type Job struct {
	Name   string // job name (--job-name)
	Shards int    // array tasks, one shard each; 0: coordinated
	// Nodes and GPUsPerNode shape a coordinated job's allocation.
	Nodes, GPUsPerNode int
	Gtune              string   // the gtune executable, as the nodes see it
	Tune               []string // gtune tune's arguments: the spec or workload and flags, without --db and --shard
	Results            string   // shared directory: scripts, logs, shard-I.db, merged.db
	// Scheduler options, each left out when empty: --partition,
	// --time (e.g. 2:00:00), --account, and the GPU request: GRES
	// (--gres, e.g. gpu:1) where the site asks for one, else
	// --gpus-per-task=1.
	Partition, Time, Account, GRES string
	// MergePartition is the merge job's partition (it needs no GPU: a
	// CPU partition); "" takes Partition.
	MergePartition string
	// CPUsPerTask, when above 0, asks for that many CPUs per task
	// (--cpus-per-task): the compile processes of each tuning task run
	// on them. 0 leaves the site's default.
	CPUsPerTask int
	// NoGPU leaves the GPU request out (tuning on the simulated GPU).
	NoGPU bool
}

// GraceSeconds is how long before its time limit Slurm signals a job's
// batch shell (--signal=B:TERM@GraceSeconds): gtune stops between
// configurations, marks its run interrupted and the script copies the
// shard's database back, before Slurm's SIGKILL.
const GraceSeconds = 120

// Values written into #SBATCH lines: Slurm's own names (a partition or
// account list, a GRES list, a time limit), checked whole so that no
// value can end its line or carry a shell word of its own.
var (
	schedName = regexp.MustCompile(`^[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*$`)
	gresList  = regexp.MustCompile(`^[A-Za-z0-9_.+-]+(:[A-Za-z0-9_.+-]+)*(,[A-Za-z0-9_.+-]+(:[A-Za-z0-9_.+-]+)*)*$`)
	// Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or no
	// limit.
	timeLimit = regexp.MustCompile(`^([0-9]+|[0-9]+:[0-9]+|[0-9]+:[0-9]+:[0-9]+|[0-9]+-[0-9]+|[0-9]+-[0-9]+:[0-9]+|[0-9]+-[0-9]+:[0-9]+:[0-9]+|UNLIMITED|unlimited|INFINITE|infinite)$`)
)

// JobName makes s a job name Slurm and the scripts take as it is: every
// character other than a letter, a digit or one of "_.+-" becomes "_"
// (a kernel or file name may hold any), at most 128 characters.
func JobName(s string) string {
	b := []rune(s)
	for i, r := range b {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_.+-", r))) {
			b[i] = '_'
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// controlChar says whether s holds a control character (a newline ends
// a script line; others have no place in a path or an argument).
func controlChar(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// Check says what is wrong with j for writing its scripts.
func (j Job) Check() error {
	switch {
	case j.Shards < 0:
		return fmt.Errorf("slurm: %d shards: want at least 1 (0: one coordinated run)", j.Shards)
	case j.Shards == 0 && (j.Nodes < 1 || j.GPUsPerNode < 1):
		return fmt.Errorf("slurm: a coordinated job needs nodes and GPUs per node (%d × %d)", j.Nodes, j.GPUsPerNode)
	case !filepath.IsAbs(j.Gtune) || !filepath.IsAbs(j.Results):
		return errors.New("slurm: the gtune executable and the results directory need absolute paths (the job runs elsewhere)")
	case len(j.Tune) == 0:
		return errors.New("slurm: no spec or workload to tune")
	case j.Name == "" || JobName(j.Name) != j.Name:
		return fmt.Errorf("slurm: job name %q: letters, digits and _.+- only (slurm.JobName makes one)", j.Name)
	case j.CPUsPerTask < 0:
		return fmt.Errorf("slurm: --cpus-per-task %d: want 1 or more (0: the site's default)", j.CPUsPerTask)
	}
	for _, v := range []struct{ flag, value string }{{"--partition", j.Partition}, {"--account", j.Account}, {"--merge-partition", j.MergePartition}} {
		if v.value != "" && !schedName.MatchString(v.value) {
			return fmt.Errorf("slurm: %s %q: a Slurm name or comma-separated names (letters, digits, _.+-)", v.flag, v.value)
		}
	}
	if j.GRES != "" && !gresList.MatchString(j.GRES) {
		return fmt.Errorf("slurm: --gres %q: a GRES list such as gpu:a100:1 (letters, digits, _.+-, : and ,)", j.GRES)
	}
	if j.Time != "" && !timeLimit.MatchString(j.Time) {
		return fmt.Errorf("slurm: --time %q: a Slurm time limit: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S or UNLIMITED", j.Time)
	}
	for _, v := range []struct{ what, value string }{{"the results directory", j.Results}, {"the gtune executable", j.Gtune}} {
		if controlChar(v.value) || strings.Contains(v.value, `\`) {
			return fmt.Errorf("slurm: %s %q holds a control character or a backslash, which a batch script cannot carry", v.what, v.value)
		}
	}
	for _, a := range j.Tune {
		if controlChar(a) {
			return fmt.Errorf("slurm: the tune argument %q holds a control character, which a batch script cannot carry", a)
		}
	}
	return nil
}

// outputPath is the #SBATCH --output value of file in the results
// directory: Slurm expands %-patterns there (%a, the array index), so a
// % of the directory's name is written %%.
func (j Job) outputPath(file string) string {
	return quote(strings.ReplaceAll(j.Results, "%", "%%") + "/" + file)
}

// directives are the #SBATCH lines common to both scripts.
func (j Job) directives(b *strings.Builder, name, partition string) {
	fmt.Fprintf(b, "#SBATCH --job-name=%s\n", name)
	for _, o := range [][2]string{{"partition", partition}, {"time", j.Time}, {"account", j.Account}} {
		if o[1] != "" {
			fmt.Fprintf(b, "#SBATCH --%s=%s\n", o[0], o[1])
		}
	}
	fmt.Fprintf(b, "#SBATCH --signal=B:TERM@%d\n", GraceSeconds)
}

// ArrayScript is the batch script of the array job: task I tunes shard
// I/K into a database on the node's local disk ($TMPDIR, else /tmp),
// starting from the copy a previous attempt of the task left in the
// results directory (a requeued task resumes), and copies it back when
// gtune exits, also when the task is cancelled (scancel, the time limit:
// Slurm's SIGTERM reaches gtune, which stops between configurations,
// and the trap copies what it stored).
func (j Job) ArrayScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	j.directives(&b, j.Name, j.Partition)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", j.Shards-1)
	b.WriteString("#SBATCH --ntasks=1\n")
	if j.CPUsPerTask > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", j.CPUsPerTask)
	}
	switch {
	case j.NoGPU:
	case j.GRES != "":
		fmt.Fprintf(&b, "#SBATCH --gres=%s\n", j.GRES)
	default:
		b.WriteString("#SBATCH --gpus-per-task=1\n")
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", j.outputPath("shard-%a.log"))
	// A resubmission's task (and a requeued one) adds to the shard's
	// log: what the last attempt said stays.
	b.WriteString("#SBATCH --open-mode=append\n")
	b.WriteString("set -u\n")
	fmt.Fprintf(&b, "results=%s\n", quote(j.Results))
	fmt.Fprintf(&b, "gtune=%s\n", quote(j.Gtune))
	b.WriteString(`i=$SLURM_ARRAY_TASK_ID
local=${TMPDIR:-/tmp}/gtune-$SLURM_ARRAY_JOB_ID-$i.db
# One shard runs once at a time: a task Slurm requeued after a node
# failure and a resubmission of the same results directory would
# otherwise both write shard-$i.db.
exec 9>>"$results/shard-$i.lock"
if ! flock -n 9; then
  echo "gtune: shard $i is being tuned by another job of $results; this task leaves it to that one" >&2
  exit 75
fi
keep() {
  # The database and, where gtune died before folding it in, its
  # write-ahead log (committed evaluations): SQLite reads the pair.
  [ -f "$local" ] || return 0
  cp -f "$local" "$results/shard-$i.db.part" || return 1
  rm -f "$results/shard-$i.db-wal" "$results/shard-$i.db-shm"
  if [ -f "$local-wal" ]; then cp -f "$local-wal" "$results/shard-$i.db-wal"; fi
  mv -f "$results/shard-$i.db.part" "$results/shard-$i.db"
}
# A file of that name is not this task's (job ids start again with a
# new cluster state): the shard's last copy is.
rm -f "$local" "$local-wal" "$local-shm"
if [ -f "$results/shard-$i.db" ]; then
  cp -f "$results/shard-$i.db" "$local"
  if [ -f "$results/shard-$i.db-wal" ]; then cp -f "$results/shard-$i.db-wal" "$local-wal"; fi
fi
trap 'kill -TERM $pid 2>/dev/null; wait $pid; keep; rm -f "$local" "$local-wal" "$local-shm"; exit 143' TERM
`)
	fmt.Fprintf(&b, "\"$gtune\" tune %s --shard \"$i/%d\" --db \"$local\" --no-progress &\n", quoteAll(j.Tune), j.Shards)
	b.WriteString(`pid=$!
wait $pid
rc=$?
keep
rm -f "$local" "$local-wal" "$local-shm"
exit $rc
`)
	return b.String()
}

// MergeScript is the batch script of the merge job: every shard database
// the array left in the results directory into merged.db.
func (j Job) MergeScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	j.directives(&b, j.Name+"-merge", cmp.Or(j.MergePartition, j.Partition))
	b.WriteString("#SBATCH --ntasks=1\n")
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", j.outputPath("merge.log"))
	b.WriteString("#SBATCH --open-mode=append\n")
	b.WriteString("set -u\n")
	fmt.Fprintf(&b, "cd %s || exit 1\n", quote(j.Results))
	b.WriteString("shards=(shard-*.db)\n")
	b.WriteString("[ -e \"${shards[0]}\" ] || { echo \"gtune: no shard database in $PWD\" >&2; exit 1; }\n")
	fmt.Fprintf(&b, "exec %s merge merged.db \"${shards[@]}\"\n", quote(j.Gtune))
	return b.String()
}

// CoordinatedScript is the batch script of a coordinated job (with
// --no-kill: a failed node ends its workers, not the job): on the
// allocation's first node, gtune tune --slurm over every GPU of the
// allocation (one srun worker each) into results/tune.db. Submitting it
// again resumes from that database. scancel (or the time limit) sends
// gtune SIGTERM: it stops between configurations, marks its run
// interrupted and closes its workers.
func (j Job) CoordinatedScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	j.directives(&b, j.Name, j.Partition)
	fmt.Fprintf(&b, "#SBATCH --nodes=%d\n", j.Nodes)
	fmt.Fprintf(&b, "#SBATCH --ntasks-per-node=%d\n", j.GPUsPerNode)
	// A node that fails costs its workers' configurations in flight,
	// not the allocation (Slurm's default ends the job).
	b.WriteString("#SBATCH --no-kill\n")
	if j.CPUsPerTask > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", j.CPUsPerTask)
	}
	switch {
	case j.NoGPU:
	case j.GRES != "":
		fmt.Fprintf(&b, "#SBATCH --gres=%s\n", j.GRES)
	default:
		fmt.Fprintf(&b, "#SBATCH --gpus-per-node=%d\n", j.GPUsPerNode)
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", j.outputPath("tune.log"))
	b.WriteString("#SBATCH --open-mode=append\n")
	fmt.Fprintf(&b, "exec %s tune %s --slurm --nodes %d --gpus-per-node %d --db %s --no-progress\n",
		quote(j.Gtune), quoteAll(j.Tune), j.Nodes, j.GPUsPerNode, quote(filepath.Join(j.Results, "tune.db")))
	return b.String()
}

// SubmitCoordinated writes j's coordinated script into j.Results and
// submits it with sbatch; it returns the job id and the script's path.
func SubmitCoordinated(ctx context.Context, j Job, sbatch string, write func(path, text string) error) (id, script string, err error) {
	if err := j.Check(); err != nil {
		return "", "", err
	}
	if j.Shards != 0 {
		return "", "", errors.New("slurm: a sharded job is submitted by Submit")
	}
	if sbatch == "" {
		sbatch = "sbatch"
	}
	script = filepath.Join(j.Results, "tune.sbatch")
	if err := write(script, j.CoordinatedScript()); err != nil {
		return "", "", err
	}
	id, err = run(ctx, sbatch, "--parsable", script)
	return id, script, err
}

// Submitted are the jobs Submit started.
type Submitted struct {
	ArrayJob, MergeJob       string // Slurm job ids
	ArrayScript, MergeScript string // their paths
}

// Submit writes j's scripts into j.Results (created) and submits them
// with sbatch (the path of the sbatch command; "" looks it up on PATH):
// the array job, then the merge job, to start once the array has ended
// (afterany: a failed or cancelled shard still leaves its part).
// Errors: j's, the files', sbatch's (with what it printed).
func Submit(ctx context.Context, j Job, sbatch string, write func(path, text string) error) (*Submitted, error) {
	if err := j.Check(); err != nil {
		return nil, err
	}
	if j.Shards < 1 {
		return nil, errors.New("slurm: a coordinated job is submitted by SubmitCoordinated")
	}
	if sbatch == "" {
		sbatch = "sbatch"
	}
	s := &Submitted{ArrayScript: filepath.Join(j.Results, "shards.sbatch"), MergeScript: filepath.Join(j.Results, "merge.sbatch")}
	if err := write(s.ArrayScript, j.ArrayScript()); err != nil {
		return nil, err
	}
	if err := write(s.MergeScript, j.MergeScript()); err != nil {
		return nil, err
	}
	var err error
	if s.ArrayJob, err = run(ctx, sbatch, "--parsable", s.ArrayScript); err != nil {
		return nil, err
	}
	if s.MergeJob, err = run(ctx, sbatch, "--parsable", "--dependency=afterany:"+s.ArrayJob, s.MergeScript); err != nil {
		return s, err
	}
	return s, nil
}

// run runs sbatch and returns the job id it printed (--parsable: "ID" or
// "ID;CLUSTER").
func run(ctx context.Context, sbatch string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, sbatch, args...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		return "", fmt.Errorf("slurm: %s %s: %v: %s", sbatch, strings.Join(args, " "), err, text)
	}
	id, _, _ := strings.Cut(text, ";")
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("slurm: %s %s printed %q, not a job id", sbatch, strings.Join(args, " "), text)
	}
	return id, nil
}

// quote makes s one word for bash, and for sbatch's reading of #SBATCH
// lines, which groups quoted text alike (Check keeps backslashes, which
// the two read differently, out of every value).
func quote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,%+@", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}
