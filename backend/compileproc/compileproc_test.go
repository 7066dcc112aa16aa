package compileproc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
)

// Test compilers, performed in the workers (this test binary, started
// with WorkerArg): "pid" answers with its process id, "hang" never
// answers, "exit" dies with status 7 after a line on stderr, "broken"
// cannot compile anything.
func TestMain(m *testing.M) {
	compileproc.Register("pid", func(ctx context.Context, payload []byte) (*backend.Binary, error) {
		return &backend.Binary{Image: payload, Log: fmt.Sprint(os.Getpid())}, nil
	})
	compileproc.Register("hang", func(ctx context.Context, payload []byte) (*backend.Binary, error) {
		select {}
	})
	compileproc.Register("exit", func(ctx context.Context, payload []byte) (*backend.Binary, error) {
		fmt.Fprintln(os.Stderr, "internal compiler error: out of luck")
		os.Exit(7)
		return nil, nil
	})
	compileproc.Register("broken", func(ctx context.Context, payload []byte) (*backend.Binary, error) {
		return nil, errors.New("libnvrtc.so not found")
	})
	if len(os.Args) > 1 && os.Args[1] == compileproc.WorkerArg {
		compileproc.WorkerMain()
	}
	os.Exit(m.Run())
}

// testBackend is the simulated GPU whose jobs named "kind:..." compile
// with the test compiler of that kind.
type testBackend struct{ *sim.Sim }

func (b testBackend) CompileTask(j *backend.Job) (compileproc.Task, error) {
	if kind, _, ok := strings.Cut(j.Key, ":"); ok {
		return compileproc.Task{Kind: kind, Key: j.Key, Payload: []byte(j.Key)}, nil
	}
	return b.Sim.CompileTask(j)
}

func newSim(t *testing.T) *sim.Sim {
	t.Helper()
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(d, sim.Options{Seed: 3})
	// Kernels compile against a prepared problem, on the simulated GPU
	// as on a real one.
	if err := s.Prepare(context.Background(), backend.Single(backend.Kernel{KernelName: "k", SourceName: "k.cu"})); err != nil {
		t.Fatal(err)
	}
	return s
}

func wrap(t *testing.T, be backend.Backend, o compileproc.Options) *compileproc.Backend {
	t.Helper()
	b, err := compileproc.Wrap(be, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func job(key string, w backend.Work) *backend.Job {
	return &backend.Job{Key: key, Grid: [3]int{64, 1, 1}, Block: [3]int{256, 1, 1}, Work: &w}
}

var work = backend.Work{Flops: 1e9, Bytes: 4e8, Registers: 40, Efficiency: 0.8}

// A simulated compilation in a worker gives exactly the binary, or the
// compile error, the simulator gives in this process.
func TestWorkerMatchesInProcess(t *testing.T) {
	s := newSim(t)
	b := wrap(t, s, compileproc.Options{Processes: 2})
	ctx := context.Background()
	for _, j := range []*backend.Job{
		job("128,4", work),
		job("256,8", backend.Work{Flops: 1, Bytes: 1, Registers: 300}),
		job("64,1", backend.Work{Flops: 1, Bytes: 1, CompileFails: true}),
	} {
		want, wantErr := s.Compile(ctx, j)
		got, gotErr := b.Compile(ctx, j)
		if !reflect.DeepEqual(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: worker gave %+v, %v\nin process %+v, %v", j.Key, got, gotErr, want, wantErr)
		}
		var ce *backend.CompileError
		if (wantErr != nil) != errors.As(gotErr, &ce) {
			t.Fatalf("%s: error %T, want *backend.CompileError", j.Key, gotErr)
		}
	}
	if st := b.Stats(); st.Compiled != 3 || st.Crashes != 0 || (runtime.GOOS == "linux" && st.PeakRSSKiB <= 0) {
		t.Fatalf("stats %+v", st)
	}
	id, err := b.CompilerID()
	if want, _ := s.CompilerID(); err != nil || id != want {
		t.Fatalf("CompilerID %q, %v; want %q", id, err, want)
	}
}

// A crash costs the configuration being compiled, as a compile error
// naming the crash, and the next compilation gets a fresh process.
func TestCrashCostsOneConfiguration(t *testing.T) {
	s := newSim(t)
	b := wrap(t, testBackend{s}, compileproc.Options{Processes: 1})
	ctx := context.Background()
	first, err := b.Compile(ctx, job("pid:a", work))
	if err != nil {
		t.Fatal(err)
	}
	crash := work
	crash.CompileCrashes = true
	_, err = b.Compile(ctx, job("1,2", crash))
	var ce *backend.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, `the compiler's process died compiling configuration 1,2: worker process exited (exit status 2)`) ||
		!strings.Contains(ce.Log, `panic: sim: simulated compiler crash on configuration "1,2"`) {
		t.Fatalf("crash gave %v", err)
	}
	_, err = b.Compile(ctx, job("exit:b", work))
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.Log, "worker process exited (exit status 7); stderr: internal compiler error: out of luck") {
		t.Fatalf("exit gave %v", err)
	}
	after, err := b.Compile(ctx, job("pid:c", work))
	if err != nil {
		t.Fatal(err)
	}
	if after.Log == first.Log {
		t.Fatalf("the process that compiled before the crash (pid %s) still compiles", first.Log)
	}
	if st := b.Stats(); st.Compiled != 2 || st.Crashes != 2 || st.Timeouts != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A compiler that dies on every one of the first compilations is broken:
// the third death is an error that ends the run.
func TestDeadCompilerEndsRun(t *testing.T) {
	b := wrap(t, testBackend{newSim(t)}, compileproc.Options{Processes: 2})
	for i := range 3 {
		_, err := b.Compile(context.Background(), job(fmt.Sprintf("exit:%d", i), work))
		var ce *backend.CompileError
		if i < 2 && !errors.As(err, &ce) {
			t.Fatalf("death %d: %v, want a compile error", i, err)
		}
		if i == 2 && (err == nil || errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "compileproc: 3 compile processes died before any compilation finished; the last (configuration exit:2): worker process exited (exit status 7)")) {
			t.Fatalf("death 3: %v", err)
		}
	}
}

// A compilation that outlasts the timeout is killed and costs its
// configuration; one whose run is cancelled ends with the context's
// error.
func TestHangTimesOutAndCancels(t *testing.T) {
	b := wrap(t, testBackend{newSim(t)}, compileproc.Options{Processes: 1, Timeout: 300 * time.Millisecond})
	_, err := b.Compile(context.Background(), job("hang:a", work))
	var ce *backend.CompileError
	if !errors.As(err, &ce) || ce.Log != "the compiler did not finish within 300ms; its process was killed (configuration hang:a)" {
		t.Fatalf("hang gave %v", err)
	}
	if _, err := b.Compile(context.Background(), job("pid:b", work)); err != nil {
		t.Fatalf("after the hang: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := b.Compile(ctx, job("hang:c", work)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled hang gave %v", err)
	}
	if st := b.Stats(); st.Timeouts != 1 || st.Compiled != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A compiler that cannot work is a plain error, not a configuration's
// failure; the pool never runs more processes than its size.
func TestBrokenCompilerAndPoolSize(t *testing.T) {
	b := wrap(t, testBackend{newSim(t)}, compileproc.Options{Processes: 2})
	_, err := b.Compile(context.Background(), job("broken:a", work))
	var ce *backend.CompileError
	if err == nil || errors.As(err, &ce) || err.Error() != "compileproc: libnvrtc.so not found" {
		t.Fatalf("broken gave %v", err)
	}
	pids := make(chan string, 12)
	errs := make(chan error, 12)
	for i := range 12 {
		go func() {
			bin, err := b.Compile(context.Background(), job(fmt.Sprintf("pid:%d", i), work))
			if err != nil {
				errs <- err
				return
			}
			pids <- bin.Log
		}()
	}
	seen := map[string]bool{}
	for range 12 {
		select {
		case err := <-errs:
			t.Fatal(err)
		case p := <-pids:
			seen[p] = true
		}
	}
	if len(seen) < 1 || len(seen) > 2 {
		t.Fatalf("%d processes compiled, pool of 2", len(seen))
	}
}

func TestWrapNeedsRemote(t *testing.T) {
	type plain struct{ backend.Backend }
	_, err := compileproc.Wrap(plain{newSim(t)}, compileproc.Options{})
	if err == nil || err.Error() != "compileproc: the sim backend cannot compile in other processes" {
		t.Fatalf("Wrap: %v", err)
	}
}

func TestSize(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		cores int
		mem   uint64
		want  int
	}{
		{16, 0, 16},
		{16, 128 * gib, 16},
		{16, 6*gib + gib/2, 6},
		{2, 24 * gib, 2},
		{1, 0, 1},
		{64, gib / 2, 1},
	} {
		if got := compileproc.Size(c.cores, c.mem); got != c.want {
			t.Errorf("Size(%d, %d) = %d, want %d", c.cores, c.mem, got, c.want)
		}
	}
}

// warmBackend is testBackend with a warm-up task of the test compiler
// kind (compileproc.Warmer).
type warmBackend struct {
	testBackend
	kind string
}

func (b warmBackend) WarmTask() (compileproc.Task, bool) {
	return compileproc.Task{Kind: b.kind, Key: "warm-up"}, true
}

// Start starts the pool's processes before the first compilation and
// warms them up; the compilations after it run in them, none starting a
// process of its own. A process whose warm-up fails is dropped, and a
// compilation starts another in its place.
func TestStartWarmsProcesses(t *testing.T) {
	b := wrap(t, warmBackend{testBackend{newSim(t)}, "pid"}, compileproc.Options{Processes: 2})
	<-b.Start(5)
	if st := b.Stats(); st.Started != 2 || st.Compiled != 0 {
		t.Fatalf("after Start(5) on a pool of 2: %+v, want 2 started and nothing compiled", st)
	}
	pids := map[string]bool{}
	for i := range 4 {
		bin, err := b.Compile(context.Background(), job(fmt.Sprintf("pid:%d", i), work))
		if err != nil {
			t.Fatal(err)
		}
		pids[bin.Log] = true
	}
	if st := b.Stats(); st.Started != 2 || st.Compiled != 4 || len(pids) != 1 {
		t.Fatalf("4 compilations after Start: %+v, %d processes compiled; want 2 started, 1 used", st, len(pids))
	}

	broken := wrap(t, warmBackend{testBackend{newSim(t)}, "exit"}, compileproc.Options{Processes: 3})
	<-broken.Start(2)
	if _, err := broken.Compile(context.Background(), job("pid:a", work)); err != nil {
		t.Fatal(err)
	}
	if st := broken.Stats(); st.Started != 3 || st.Crashes != 0 || st.Compiled != 1 {
		t.Fatalf("warm-ups that died: %+v, want 3 started (2 dropped), no crash counted, 1 compiled", st)
	}
}

// Start takes only free places: with every place compiling, it starts
// nothing.
func TestStartTakesFreePlacesOnly(t *testing.T) {
	b := wrap(t, testBackend{newSim(t)}, compileproc.Options{Processes: 1, Timeout: 2 * time.Second})
	go b.Compile(context.Background(), job("hang:a", work))
	for b.Stats().Started == 0 {
		time.Sleep(time.Millisecond)
	}
	<-b.Start(4)
	if st := b.Stats(); st.Started != 1 {
		t.Fatalf("Start with the pool's one place compiling: %+v, want only the compilation's process", st)
	}
}
