package store

import (
	"bufio"
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// committedCount counts the evaluations of run runID committed to the file
// at path, through a read-only connection of its own (as another process
// sees them): a read never waits for a writer in WAL mode.
func committedCount(t *testing.T, path string, runID int64) int {
	t.Helper()
	r, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n int
	if err := r.QueryRow(`SELECT count(*) FROM evaluations WHERE run_id = ?`, runID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Batches of 10: the 10th and 20th Add commit, the last 5 wait in the open
// batch (invisible to other connections) until Close commits them; then
// all 25 are there, in order, with the ids Add gave them.
func TestBatchHoldsAllAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetBatch(10, 0); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, db, "h", "GPU-0")
	var ids []int64
	for i := range 25 {
		e := sampleEvaluation(r.ID, i)
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
		if want := (i + 1) / 10 * 10; committedCount(t, path, r.ID) != want {
			t.Fatalf("after %d Adds %d committed, want %d", i+1, committedCount(t, path, r.ID), want)
		}
	}
	// A refused evaluation leaves the open batch as it was.
	if err := db.Add(&Evaluation{RunID: r.ID + 100, Key: "1", Status: "valid"}); err == nil {
		t.Fatal("an evaluation of an unknown run was accepted")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Evaluations(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 25 {
		t.Fatalf("%d evaluations after Close, want 25", len(es))
	}
	for i, e := range es {
		if want := sampleEvaluation(r.ID, i); e.Key != want.Key || e.ID != ids[i] || *e.Objective != float64(i) || len(e.TimesMs) != 32 {
			t.Fatalf("evaluation %d: key %s id %d (Add gave %d)", i, e.Key, e.ID, ids[i])
		}
	}
}

// The open batch is committed by the timer, and before anything that
// reads or ends the run; SetBatch(1, 0) goes back to one commit per Add.
func TestBatchFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SetBatch(1000, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := db.SetBatch(10, -time.Second); err == nil {
		t.Fatal("a negative delay was accepted")
	}
	r := newRun(t, db, "h", "GPU-0")
	for i := range 3 {
		if err := db.Add(sampleEvaluation(r.ID, i)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for committedCount(t, path, r.ID) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the timer did not commit the batch within 5 s: %d committed", committedCount(t, path, r.ID))
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := db.SetBatch(1000, 0); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 5; i++ {
		if err := db.Add(sampleEvaluation(r.ID, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := committedCount(t, path, r.ID); n != 3 {
		t.Fatalf("%d committed with a batch open, want 3", n)
	}
	// Reads of this DB see the open batch: it is committed first.
	if es, err := db.Evaluations(r.ID); err != nil || len(es) != 5 {
		t.Fatalf("Evaluations: %d, %v; want 5", len(es), err)
	}
	if p, err := db.Previous("h", "GPU-0"); err != nil || len(p) != 5 {
		t.Fatalf("Previous: %d, %v", len(p), err)
	}
	if err := db.Add(sampleEvaluation(r.ID, 5)); err != nil {
		t.Fatal(err)
	}
	if err := db.EndRun(r.ID, RunDone); err != nil {
		t.Fatal(err)
	}
	if n := committedCount(t, path, r.ID); n != 6 {
		t.Fatalf("%d committed after EndRun, want 6", n)
	}
	if err := db.Add(sampleEvaluation(r.ID, 6)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil || committedCount(t, path, r.ID) != 7 {
		t.Fatalf("Flush: %v, %d committed", err, committedCount(t, path, r.ID))
	}
	if err := db.SetBatch(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Add(sampleEvaluation(r.ID, 7)); err != nil || committedCount(t, path, r.ID) != 8 {
		t.Fatalf("unbatched Add: %v, %d committed", err, committedCount(t, path, r.ID))
	}
}

// A process killed while writing in batches of 10 loses at most the open
// batch: the database holds whole batches only, every batch the child saw
// committed, and at most the one it was filling.
func TestCrashLosesOnlyTheOpenBatch(t *testing.T) {
	const batch = 10
	path := filepath.Join(t.TempDir(), "results.db")
	for round, killAfter := range []int{5, 57} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, helperBatchEnv+"="+strconv.Itoa(batch))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var runID int64
		last, killed := 0, false
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if s, ok := strings.CutPrefix(line, "run "); ok {
				runID, _ = strconv.ParseInt(s, 10, 64)
				continue
			}
			if s, ok := strings.CutPrefix(line, "committed "); ok {
				last, _ = strconv.Atoi(s)
				if last >= killAfter && !killed {
					if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					killed = true
				}
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child ended before being killed\n%s", round, stderr.String())
		}
		n := committedCount(t, path, runID)
		sure := last / batch * batch
		if n%batch != 0 || n < sure || n > sure+batch {
			t.Fatalf("round %d: %d stored after %d added; want whole batches of %d, at least %d", round, n, last, batch, sure)
		}
		t.Logf("round %d: killed after %d added, %d stored", round, last, n)
	}
}

// BenchmarkAddBatched measures one evaluation added in batches of 256, as
// a replay stores them (compare BenchmarkAdd: one commit, one fsync each).
func BenchmarkAddBatched(b *testing.B) {
	db := openTemp(b)
	if err := db.SetBatch(256, time.Second); err != nil {
		b.Fatal(err)
	}
	r := newRun(b, db, "h", "GPU-0")
	for i := 0; b.Loop(); i++ {
		if err := db.Add(sampleEvaluation(r.ID, i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
}
