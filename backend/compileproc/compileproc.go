// Package compileproc compiles kernels in a pool of worker processes:
// gtune itself started with WorkerArg, one compilation at a time each,
// talking gob over pipes as the GPU worker does (internal/workerproc).
//
// Why processes: a process confines a compiler crash or hang: the
// configuration it was compiling fails to compile (backend.CompileError
// naming the crash or the deadline) and the run goes on with a fresh
// process. And on the H100 machine (16 cores) NVRTC compilations served
// from the CUDA cache (a configuration compiled before on the machine)
// wait for each other within one process: 236–245 ms each from 16
// goroutines against 14–21 ms in processes; cold compilations measured no
// slower in one process (BENCHMARKS.md, "Compile-bound tuning").
//
// A backend takes part by describing a compilation as a self-contained
// Task (the Remote capability) and registering the function that performs
// it under the Task's kind (Register, from the backend package's init), so
// the worker, the same executable, can run it.
package compileproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/trace"
	"github.com/gtune/gtune/internal/workerproc"
)

// WorkerArg, as the first argument, makes the program a compile worker: its
// main must then call WorkerMain.
const WorkerArg = "__gtune_compile_worker"

// Task is one compilation as data: Kind names the registered function
// that performs it and Payload is that function's input, in its own
// encoding. Key names the configuration for messages.
type Task struct {
	Kind    string
	Key     string
	Payload []byte
}

// Remote is a backend whose compilations can run in another process:
// CompileTask describes compiling j as a Task whose registered function
// gives what Compile(ctx, j) would. Errors: as Compile's for a job that
// cannot be described (no problem prepared, kernel index out of range).
type Remote interface {
	backend.Backend
	CompileTask(j *backend.Job) (Task, error)
}

// Warmer is a Remote that can load its compiler into a process before
// the first configuration needs it (Backend.Start): WarmTask is a
// compilation whose result is discarded (ok false where there is none
// yet).
type Warmer interface {
	WarmTask() (t Task, ok bool)
}

// Func performs a Task's compilation from its payload, in the worker.
// Errors: *backend.CompileError when the compiler rejects the kernel;
// another error when the compiler cannot be used at all.
type Func func(ctx context.Context, payload []byte) (*backend.Binary, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Func{}
)

// Register makes fn perform the Tasks of kind in compile workers. It
// panics on a kind registered twice (a programming error).
func Register(kind string, fn Func) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("compileproc: kind " + kind + " registered twice")
	}
	registry[kind] = fn
}

func lookup(kind string) Func {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[kind]
}

// request and reply are the protocol's messages: one Task, one answer.
type request struct {
	Task Task
}

type reply struct {
	Binary *backend.Binary
	// CompileLog is set when the compiler rejected the kernel
	// (backend.CompileError's log).
	CompileLog string
	// Err is any other failure (the compiler cannot be loaded).
	Err string
	// MaxRSSKiB is the worker's peak resident memory so far, KiB (0
	// where the system does not say).
	MaxRSSKiB int64
}

// WorkerMain runs this process as a compile worker and never returns: it
// answers one Task after another on stdin/stdout until end of input.
// Whatever else writes to stdout (a compiler's diagnostics, a panic) goes
// to stderr so it cannot corrupt the protocol.
func WorkerMain() {
	out, err := workerproc.ProtocolOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gtune compile worker: %v\n", err)
		os.Exit(2)
	}
	c := workerproc.NewConn(os.Stdin, out)
	for {
		var req request
		if err := c.Dec.Decode(&req); err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "gtune compile worker: reading request: %v\n", err)
			}
			os.Exit(0)
		}
		var rep reply
		if fn := lookup(req.Task.Kind); fn == nil {
			rep.Err = fmt.Sprintf("compile worker: no compiler of kind %q in this program", req.Task.Kind)
		} else {
			bin, err := fn(context.Background(), req.Task.Payload)
			var ce *backend.CompileError
			switch {
			case errors.As(err, &ce):
				rep.CompileLog = ce.Log
			case err != nil:
				rep.Err = err.Error()
			default:
				rep.Binary = bin
			}
		}
		rep.MaxRSSKiB = maxRSSKiB()
		if err := c.Enc.Encode(&rep); err != nil {
			fmt.Fprintf(os.Stderr, "gtune compile worker: writing reply: %v\n", err)
			os.Exit(3)
		}
	}
}

// ProcessMemory is the memory set aside per compile process when sizing
// the pool, bytes: well above the peak resident memory of a compile
// process measured on benchmark_hub's convolution (129–268 MiB;
// BENCHMARKS.md, "Compile-bound tuning on an NVIDIA H100").
const ProcessMemory = 1 << 30

// Size is the pool size for a machine of cores CPUs and availBytes of
// available memory (0: unknown): one process per core, no more than the
// memory holds at ProcessMemory each; at least 1. (A tuning run that
// measures energy keeps one of them idle for the GPU worker: tuner.Config
// CompileWorkers.)
func Size(cores int, availBytes uint64) int {
	n := cores
	if availBytes > 0 {
		n = min(n, int(availBytes/ProcessMemory))
	}
	return max(1, n)
}

// DefaultSize is Size for this machine (runtime.NumCPU and the available
// memory the system reports).
func DefaultSize() int { return Size(runtime.NumCPU(), availableMemory()) }

// Options configure Wrap. The zero value is usable.
type Options struct {
	// Executable is the program started as a worker with WorkerArg;
	// default os.Executable(). Its main must call WorkerMain when its
	// first argument is WorkerArg.
	Executable string
	// Processes is the pool's size; default DefaultSize().
	Processes int
	// Timeout bounds one compilation; a process that takes longer is
	// killed and the configuration fails to compile. Default 5 min.
	Timeout time.Duration
	// Env is added to the parent's environment for the workers ("K=V").
	Env []string
	// Stderr, when set, also receives the workers' stderr; a tail is
	// always kept for messages.
	Stderr io.Writer
}

// maxDeadStart is how many compilations may end in a dead process, with
// none compiled yet, before Compile stops the run with an error: a
// compiler that dies on everything is broken, not one configuration.
const maxDeadStart = 3

// Backend is a backend whose Compile runs in the worker processes; every
// other method is the wrapped backend's.
type Backend struct {
	backend.Backend
	remote Remote
	opts   Options
	slots  chan struct{} // one token per process that may run

	mu     sync.Mutex
	idle   []*workerproc.Proc
	closed bool

	compiled atomic.Int64
	started  atomic.Int64 // processes started, by Start and Compile
	vouched  atomic.Bool  // Works: the compiler is known to work
	crashes  atomic.Int64
	timeouts atomic.Int64
	peakKiB  atomic.Int64
}

// Wrap returns be with its compilations run in worker processes. Errors:
// be (or a backend it wraps) does not have the Remote capability, or the
// executable cannot be found.
func Wrap(be backend.Backend, o Options) (*Backend, error) {
	r, ok := backend.Capability[Remote](be)
	if !ok {
		return nil, fmt.Errorf("compileproc: the %s backend cannot compile in other processes", be.Device().Backend)
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("compileproc: finding this program to start compile workers: %w", err)
		}
		o.Executable = exe
	}
	if o.Processes <= 0 {
		o.Processes = DefaultSize()
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	return &Backend{Backend: be, remote: r, opts: o, slots: make(chan struct{}, o.Processes)}, nil
}

// Unwrap is the wrapped backend (backend.Capability looks through it).
func (b *Backend) Unwrap() backend.Backend { return b.Backend }

// Processes is the pool's size.
func (b *Backend) Processes() int { return b.opts.Processes }

// Stats are what the pool did: its size, compilations answered,
// processes that died or were killed at the deadline, and the largest
// peak resident memory of a worker, KiB.
type Stats struct {
	Processes                   int
	Compiled, Crashes, Timeouts int64
	PeakRSSKiB                  int64
	Started                     int64 // processes started, Start's included
}

// Stats reports the pool's counters so far.
func (b *Backend) Stats() Stats {
	return Stats{b.opts.Processes, b.compiled.Load(), b.crashes.Load(), b.timeouts.Load(), b.peakKiB.Load(), b.started.Load()}
}

// Since is s less the counters of an earlier snapshot (the size and the
// peak memory stay).
func (s Stats) Since(earlier Stats) Stats {
	s.Compiled -= earlier.Compiled
	s.Crashes -= earlier.Crashes
	s.Timeouts -= earlier.Timeouts
	s.Started -= earlier.Started
	return s
}

// Start starts up to n of the pool's processes now, in the background,
// so that their start (the program, the compiler's libraries, a first
// compilation) overlaps the run's opening (the GPUs' preparation, an
// energy run's warm-up) instead of delaying its first compilations: on
// a fresh host of two H100s, 32 processes started and compiled the
// WarmTask of a Warmer in 1.04 s while the GPUs prepared (BENCHMARKS.md,
// "A cold host is a cold CUDA cache"; the first compilations of a fresh
// host are slow because CUDA's compile cache is empty, which no start-up
// work changes). A process that fails to start or to warm up is dropped:
// Compile starts another and says what went wrong. Start takes only free places of the pool (none where
// compilations hold them all) and returns at once; the channel is closed
// when every process it started is ready (or dropped). A Compile
// meanwhile waits for one of them or starts one in a remaining place.
func (b *Backend) Start(n int) <-chan struct{} {
	done := make(chan struct{})
	got := 0
reserve:
	for got < min(n, b.opts.Processes) {
		select {
		case b.slots <- struct{}{}:
			got++
		default:
			break reserve
		}
	}
	go func() {
		defer close(done)
		if got == 0 {
			return
		}
		t0 := time.Now()
		var task Task
		warm := false
		if w, ok := b.remote.(Warmer); ok {
			task, warm = w.WarmTask()
		}
		var wg sync.WaitGroup
		for range got {
			wg.Go(func() {
				defer func() { <-b.slots }()
				b.startWarm(task, warm)
			})
		}
		wg.Wait()
		trace.Step("compile", "compile processes", fmt.Sprintf("%d started (warm-up compilation: %v), of", got, warm), t0)
	}()
	return done
}

// startWarm starts one process for the pool, compiles task in it where
// warm, and leaves it idle; a process that fails is dropped.
func (b *Backend) startWarm(task Task, warm bool) {
	p, err := b.startProc()
	if err != nil {
		return
	}
	if warm {
		var rep reply
		if err := p.Call(context.Background(), &request{Task: task}, &rep, b.opts.Timeout); err != nil || rep.Err != "" {
			b.drop(p)
			return
		}
	}
	b.put(p)
}

// Compile compiles j in a worker process, waiting for a free one. Errors:
// *backend.CompileError when the compiler rejects the kernel, when its
// process dies (the log names the exit status and the tail of its stderr)
// or when it takes longer than Options.Timeout; ctx.Err() when ctx ends
// (the process is killed); another error when no worker can be started,
// the compiler cannot be used, or the first compilations all end in a
// dead process.
func (b *Backend) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	task, err := b.remote.CompileTask(j)
	if err != nil {
		return nil, err
	}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-b.slots }()
	t0 := time.Now()
	p, fresh, err := b.take()
	if err != nil {
		return nil, err
	}
	var rep reply
	err = p.Call(ctx, &request{Task: task}, &rep, b.opts.Timeout)
	var died *workerproc.DiedError
	switch {
	case err == nil:
		b.put(p)
	case errors.Is(err, workerproc.ErrTimeout):
		b.drop(p)
		b.timeouts.Add(1)
		return nil, &backend.CompileError{Log: fmt.Sprintf("the compiler did not finish within %v; its process was killed (configuration %s)", b.opts.Timeout, task.Key), Process: true}
	case errors.As(err, &died):
		b.drop(p)
		n := b.crashes.Add(1)
		if b.compiled.Load() == 0 && !b.vouched.Load() && n >= maxDeadStart {
			return nil, fmt.Errorf("compileproc: %d compile processes died before any compilation finished; the last (configuration %s): %v", n, task.Key, died)
		}
		return nil, &backend.CompileError{Log: fmt.Sprintf("the compiler's process died compiling configuration %s: %v", task.Key, died), Process: true}
	default: // ctx ended: the process was killed
		b.drop(p)
		return nil, err
	}
	for {
		peak := b.peakKiB.Load()
		if rep.MaxRSSKiB <= peak || b.peakKiB.CompareAndSwap(peak, rep.MaxRSSKiB) {
			break
		}
	}
	switch {
	case rep.Err != "":
		return nil, fmt.Errorf("compileproc: %s", rep.Err)
	case rep.CompileLog != "":
		b.compiled.Add(1)
		return nil, &backend.CompileError{Log: rep.CompileLog}
	case rep.Binary == nil:
		return nil, fmt.Errorf("compileproc: the worker answered configuration %s with no binary", task.Key)
	}
	b.compiled.Add(1)
	if fresh && trace.On("compile") {
		// A new process's start (NVRTC loaded) is told apart from the
		// compiler's own time: where a cold host's compilations go.
		trace.Step("compile", "compile process", fmt.Sprintf("first compilation (%s), %.3f s in the compiler, of", task.Key, rep.Binary.CompileMs/1000), t0)
	}
	return rep.Binary, nil
}

// Works records that the compiler is known to work in this run without
// a compilation of the pool's: a binary it made came from the compile
// cache. The first compilations' deaths are then configurations'
// crashes, not a broken compiler (maxDeadStart): a run whose every other
// binary is cached must not end on its crashing configurations.
func (b *Backend) Works() { b.vouched.Store(true) }

// take returns an idle worker or starts one (fresh).
func (b *Backend) take() (p *workerproc.Proc, fresh bool, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, false, errors.New("compileproc: Compile on a closed backend")
	}
	if n := len(b.idle); n > 0 {
		p := b.idle[n-1]
		b.idle = b.idle[:n-1]
		b.mu.Unlock()
		return p, false, nil
	}
	b.mu.Unlock()
	if p, err = b.startProc(); err != nil {
		return nil, false, err
	}
	return p, true, nil
}

// startProc starts a worker process.
func (b *Backend) startProc() (*workerproc.Proc, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errors.New("compileproc: Compile on a closed backend")
	}
	env := append(os.Environ(), b.opts.Env...)
	p, err := workerproc.Start(b.opts.Executable, []string{WorkerArg}, env, b.opts.Stderr)
	if err != nil {
		return nil, fmt.Errorf("compileproc: %w", err)
	}
	b.started.Add(1)
	return p, nil
}

func (b *Backend) put(p *workerproc.Proc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed { // closed while it compiled: end it as Close does
		p.CloseInput()
		go p.WaitExit(5 * time.Second)
		return
	}
	b.idle = append(b.idle, p)
}

func (b *Backend) drop(p *workerproc.Proc) { p.Kill() }

// Close ends the workers (end of input, then a kill after 5 s) and closes
// the wrapped backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	idle := b.idle
	b.idle = nil
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range idle {
		wg.Go(func() {
			p.CloseInput()
			p.WaitExit(5 * time.Second)
		})
	}
	wg.Wait()
	return b.Backend.Close()
}

// CompilerID is the wrapped backend's (backend.Compiler), so that the
// compile cache keys binaries the same whichever process compiled them.
func (b *Backend) CompilerID() (string, error) {
	c, ok := backend.Capability[backend.Compiler](b.Backend)
	if !ok {
		return "", fmt.Errorf("compileproc: the wrapped backend has no compiler identity")
	}
	return c.CompilerID()
}

var _ backend.Compiler = (*Backend)(nil)
