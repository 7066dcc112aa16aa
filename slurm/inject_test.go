package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A hostile value in each field a script carries: a control character
// in a scheduler option, the results directory, the executable or a tune
// argument is refused by Check; a value of Slurm's syntax in the wrong
// place too (--time). Every value Check takes is one word in the script:
// the script has the lines of a plain job, and bash hands the tune
// arguments back exactly as given.
func TestScriptsInjection(t *testing.T) {
	plain := Job{Name: "gtune-k", Shards: 2, Gtune: "/opt/gtune", Results: "/r", Tune: []string{"/s.json"}}
	for _, j := range []Job{
		{Partition: "gpu\nrm -rf ~"}, {Account: "a\n#SBATCH --uid=0"}, {GRES: "gpu:1\necho pwned"}, {Time: "1:00\ntouch x"},
		{Time: "bogus"}, {Time: "-1"}, {Partition: "gpu part"}, {Partition: "a;b"}, {MergePartition: "$(id)"}, {Account: "`id`"},
		{GRES: "gpu:1 --uid=0"}, {Name: "k\nx"}, {Name: "k;x"}, {Results: "/r\n/x"}, {Results: `/r\x`}, {Gtune: "/g\rx"},
		{Tune: []string{"/s.json", "--objective", "time\nrm -rf ~"}}, {CPUsPerTask: -1},
	} {
		bad := plain
		for _, set := range []func(){
			func() { cmpSet(&bad.Partition, j.Partition) }, func() { cmpSet(&bad.Account, j.Account) },
			func() { cmpSet(&bad.GRES, j.GRES) }, func() { cmpSet(&bad.Time, j.Time) },
			func() { cmpSet(&bad.MergePartition, j.MergePartition) }, func() { cmpSet(&bad.Name, j.Name) },
			func() { cmpSet(&bad.Results, j.Results) }, func() { cmpSet(&bad.Gtune, j.Gtune) },
		} {
			set()
		}
		if j.Tune != nil {
			bad.Tune = j.Tune
		}
		bad.CPUsPerTask = j.CPUsPerTask
		if err := bad.Check(); err == nil {
			t.Errorf("Check(%+v): no error", j)
		}
	}
	for _, tm := range []string{"30", "1:00:00", "2-00", "2-12:30", "1-00:00:00", "UNLIMITED", "5:30"} {
		j := plain
		j.Time = tm
		if err := j.Check(); err != nil {
			t.Errorf("--time %s: %v", tm, err)
		}
	}

	// Values taken: every shell and Slurm character a path or an
	// argument may hold.
	odd := []string{"/s p a c e.json", "--strategy-param", `name=it's "q" $(touch pwned) ` + "`id` ; & | > < * ? ~ ! # %a %j {a,b}"}
	j := Job{Name: JobName("gtune-vec $(id);\nx"), Shards: 3, Nodes: 2, GPUsPerNode: 2, Gtune: "/opt/g tune/$HOME/gtune", Results: "/tmp/r %a 'q' $x",
		Tune: odd, Partition: "gpu,gpu2", Account: "proj-1", GRES: "gpu:a100:1", Time: "1-00:00:00", MergePartition: "cpu", CPUsPerTask: 4}
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	if j.Name != "gtune-vec___id___x" {
		t.Errorf("JobName: %q", j.Name)
	}
	ref := plain
	ref.Nodes, ref.GPUsPerNode, ref.Partition, ref.Account, ref.GRES, ref.Time, ref.MergePartition, ref.CPUsPerTask = 2, 2, "p", "a", "g", "1", "c", 4
	ref.Tune = []string{"a", "b", "c"}
	coord, refCoord := j, ref
	coord.Shards, refCoord.Shards = 0, 0
	for name, s := range map[string][2]string{"array": {j.ArrayScript(), ref.ArrayScript()}, "merge": {j.MergeScript(), ref.MergeScript()}, "coordinated": {coord.CoordinatedScript(), refCoord.CoordinatedScript()}} {
		if got, want := strings.Count(s[0], "\n"), strings.Count(s[1], "\n"); got != want {
			t.Errorf("%s script: %d lines; a plain job's %d:\n%s", name, got, want, s[0])
		}
		for _, line := range strings.Split(s[0], "\n") {
			if strings.HasPrefix(line, "#SBATCH") && len(strings.Fields(line)) != 2 && !strings.Contains(line, "'") {
				t.Errorf("%s script: %q is not one option", name, line)
			}
		}
	}
	if !strings.Contains(j.ArrayScript(), `#SBATCH --output='/tmp/r %%a '\''q'\'' $x/shard-%a.log'`) {
		t.Errorf("the output path's %% is not escaped:\n%s", j.ArrayScript())
	}
	if !strings.Contains(j.MergeScript(), "#SBATCH --partition=cpu\n") || !strings.Contains(j.ArrayScript(), "#SBATCH --cpus-per-task=4\n") {
		t.Error("--merge-partition or --cpus-per-task not written")
	}
	// bash hands the arguments back as given: the tune line run with a
	// gtune that prints them.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	var line string
	for _, l := range strings.Split(coord.CoordinatedScript(), "\n") {
		if strings.HasPrefix(l, "exec ") {
			line = strings.Replace(l, "exec "+quote(coord.Gtune), "printf '%s\\n'", 1)
		}
	}
	cmd := exec.Command(bash, "-c", line)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) < len(odd)+1 || !slices.Equal(got[1:1+len(odd)], odd) {
		t.Errorf("bash read the tune arguments as %q; want %q", got, odd)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a tune argument ran a command")
	}
}

func cmpSet(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// A real GPU's worker step asks for one GPU and drops the allocation's
// GPU counts that srun would read from its environment (each step took
// every GPU of the node with them); a simulated one asks for none.
func TestStepCommand(t *testing.T) {
	got := strings.Join(stepCommand("/opt/slurm/bin/srun", false), " ")
	want := "env -u SLURM_GPUS_PER_NODE -u SLURM_GPUS -u SLURM_GPUS_PER_SOCKET /opt/slurm/bin/srun --nodes=1 --ntasks=1 --exact --cpus-per-task=1 --unbuffered --quiet --kill-on-bad-exit=1 --job-name=gtune-gpu --gpus-per-task=1"
	if got != want {
		t.Errorf("real GPU step:\n got %s\nwant %s", got, want)
	}
	got = strings.Join(stepCommand("srun", true), " ")
	want = "srun --nodes=1 --ntasks=1 --exact --cpus-per-task=1 --unbuffered --quiet --kill-on-bad-exit=1 --job-name=gtune-gpu"
	if got != want {
		t.Errorf("simulated step:\n got %s\nwant %s", got, want)
	}
}
