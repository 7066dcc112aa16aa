package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "GTUNE_STORE_HELPER_DB"

// helperBatchEnv, when set to N > 1, makes the helper writer group its
// evaluations into batches of N (SetBatch, no timer).
const helperBatchEnv = "GTUNE_STORE_HELPER_BATCH"

// sampleEvaluation is a realistically sized evaluation of run runID.
func sampleEvaluation(runID int64, i int) *Evaluation {
	now := time.Now()
	times := make([]float64, 32)
	for j := range times {
		times[j] = 1 + float64(j%7)*0.01
	}
	return &Evaluation{RunID: runID, Key: fmt.Sprintf("%d,%d,4,1", 16*(1+i%8), i),
		Params: []Param{{"block_size_x", 16 * (1 + i%8)}, {"block_size_y", i}, {"tile_size", 4}, {"unroll", 1}},
		Status: "valid", Objective: ptr(float64(i)),
		Observations: map[string]float64{"time": 1.03, "time_min": 1, "time_max": 1.06, "time_std": 0.02,
			"energy": 0.25, "power": 242.5, "sm_clock": 1980, "mem_clock": 2619, "temperature": 61},
		Metrics: map[string]float64{"GFLOP/s": 10240.5, "edp": 0.26},
		TimesMs: times, Registers: 72, SharedStaticBytes: 8192, MaxError: 1e-7,
		CompileMs: 180, BenchmarkMs: 60, FrameworkMs: 1.5, StartedAt: now, FinishedAt: now}
}

// TestHelperWriter is the child of TestCrashKeepsCommitted and
// TestCrashLosesOnlyTheOpenBatch: it adds evaluations to a new run until
// killed, printing "committed N" after the Add of the N-th returns (with
// batches, the N-th is then committed only if N is a multiple of the batch
// size). Without the environment variable it does nothing.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process of TestCrashKeepsCommitted")
	}
	db, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := &Run{SpecHash: "crash", DeviceUUID: "GPU-crash", Backend: "sim"}
	if err := db.BeginRun(r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if n, _ := strconv.Atoi(os.Getenv(helperBatchEnv)); n > 1 {
		if err := db.SetBatch(n, 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Printf("run %d\n", r.ID)
	deadline := time.Now().Add(60 * time.Second) // never outlive a parent that failed to kill us
	for i := 1; time.Now().Before(deadline); i++ {
		if err := db.Add(sampleEvaluation(r.ID, i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		// os.Stdout is unbuffered: the line is in the pipe once Printf returns.
		fmt.Printf("committed %d\n", i)
	}
	os.Exit(3)
}

// TestCrashKeepsCommitted kills a writing process with SIGKILL at several
// points and checks that the database is intact and holds every evaluation
// the child reported committed, plus at most the one in flight.
func TestCrashKeepsCommitted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	for round, killAfter := range []int{1, 37, 150} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
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
			s, ok := strings.CutPrefix(line, "committed ")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n != last+1 {
				t.Fatalf("round %d: bad line %q after %d", round, line, last)
			}
			last = n
			if n >= killAfter && !killed {
				// The child keeps writing until the signal lands, so
				// the kill hits it at an arbitrary point of an Add.
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		// Lines already in the pipe when the kill landed were committed too.
		err = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child ended before being killed: %v\n%s", round, err, stderr.String())
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child was not killed by SIGKILL: %v\n%s", round, err, stderr.String())
		}

		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var check string
		if err := db.sql.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
			t.Fatalf("round %d: integrity_check = %q, %v", round, check, err)
		}
		var fk int
		if err := db.sql.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
			t.Fatalf("round %d: %d foreign key violations, %v", round, fk, err)
		}
		es, err := db.Evaluations(runID)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) < last || len(es) > last+1 {
			t.Fatalf("round %d: %d evaluations stored, child reported %d committed", round, len(es), last)
		}
		for i, e := range es { // every stored row is whole
			if want := sampleEvaluation(runID, i+1); e.Key != want.Key || len(e.TimesMs) != 32 || len(e.Params) != 4 {
				t.Fatalf("round %d: evaluation %d = %+v", round, i, e)
			}
		}
		n, err := db.MarkInterrupted()
		if err != nil || n != 1 {
			t.Fatalf("round %d: MarkInterrupted() = %d, %v; want 1", round, n, err)
		}
		if r, err := db.Run(runID); err != nil || r.Status != RunInterrupted {
			t.Fatalf("round %d: run after crash: %+v, %v", round, r, err)
		}
		t.Logf("round %d: killed after %d reported, %d stored", round, last, len(es))
		db.Close()
	}
}

// A second connection (as another process would have) reads while this
// one writes: readers are never blocked, never see a half-written
// evaluation, and keep a consistent snapshot inside a read transaction.
func TestConcurrentReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rd, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r := newRun(t, w, "h", "GPU-0")

	// A read transaction open across writes sees its snapshot only.
	if err := w.Add(sampleEvaluation(r.ID, 1)); err != nil {
		t.Fatal(err)
	}
	conn, err := rd.sql.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A deferred transaction: the pool's BeginTx would be IMMEDIATE (a writer).
	if _, err := conn.ExecContext(t.Context(), "BEGIN DEFERRED"); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := conn.QueryRowContext(t.Context(), `SELECT count(*) FROM evaluations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("snapshot count %d, want 1", n)
	}
	for i := 2; i <= 5; i++ { // must not wait for the reader
		if err := w.Add(sampleEvaluation(r.ID, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("snapshot count %d after writes, want 1", n)
	}
	if _, err := conn.ExecContext(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 5 {
		t.Fatalf("count %d after the read transaction, want 5", n)
	}

	const total = 200
	var wg sync.WaitGroup
	wg.Add(1)
	var writeErr error
	go func() {
		defer wg.Done()
		for i := 6; i <= total; i++ {
			if err := w.Add(sampleEvaluation(r.ID, i)); err != nil {
				writeErr = err
				return
			}
		}
	}()
	seen, reads := 0, 0
	for seen < total {
		es, err := rd.Evaluations(r.ID)
		if err != nil {
			t.Fatalf("read while writing: %v", err)
		}
		if len(es) < seen {
			t.Fatalf("count went back from %d to %d", seen, len(es))
		}
		for i, e := range es {
			if e.ID != es[0].ID+int64(i) || len(e.TimesMs) != 32 || e.Observations["power"] != 242.5 {
				t.Fatalf("partial evaluation read: %+v", e)
			}
		}
		seen = len(es)
		reads++
		if writeErr != nil {
			break
		}
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if seen != total {
		t.Fatalf("reader saw %d evaluations, want %d", seen, total)
	}
	t.Logf("%d reads during %d writes", reads, total-5)
}

// BenchmarkAdd measures one committed (fsynced) evaluation.
func BenchmarkAdd(b *testing.B) {
	db := openTemp(b)
	r := newRun(b, db, "h", "GPU-0")
	for i := 0; b.Loop(); i++ {
		if err := db.Add(sampleEvaluation(r.ID, i)); err != nil {
			b.Fatal(err)
		}
	}
}
