// Package remote runs a GPU backend in another process, started by a
// command (on this host, or on a cluster node through Slurm's srun, whose
// standard input and output carry the messages), and drives it from the
// tuner as a backend.Backend: the executor's slot for one GPU of a run
// over many nodes (gtune tune --slurm). Messages are gob-encoded requests
// and replies, one at a time, as between gtune and its local CUDA worker;
// nothing else (no broker, port or shared file system) is needed.
//
// The worker side is Serve, which answers for any backend.Backend; a
// worker that loses its tuner (end of input: the coordinator died, or
// srun was cancelled) closes its GPU and exits.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/workerproc"
)

// WorkerArg is the first command-line argument that makes a gtune binary
// a remote GPU worker (cmd/gtune: "gtune __gtune_remote_worker
// --sim-device ID ...", started by srun on a node).
const WorkerArg = "__gtune_remote_worker"

// Operations of a request.
const (
	opHello   = "hello"
	opPrepare = "prepare"
	opCompile = "compile"
	opRun     = "run"
	opClose   = "close"
)

type request struct {
	Op      string
	Problem *backend.Problem
	Job     *backend.Job
	Plan    *backend.Plan
}

type reply struct {
	Device    device.Description
	Simulated bool // the worker's backend is a backend.Simulator
	Binary    *backend.Binary
	Result    *backend.Result
	// CompileLog is set (with Err) when the compiler rejected the
	// kernel: a *backend.CompileError on the tuner's side.
	CompileLog     string
	CompileProcess bool
	Err            string
	Host           string // the worker's host (hello)
	// Alive marks a keep-alive, sent every HeartbeatInterval while the
	// worker works on a request; the request's reply follows.
	Alive bool
}

// HeartbeatInterval is how often a worker busy with a request sends a
// keep-alive. DefaultSilence, the coordinator's bound on the time
// between two messages, is six of them: a worker silent that long (its
// node died, its connection hangs) is given up, its configuration going
// to another GPU.
const (
	HeartbeatInterval = 10 * time.Second
	DefaultSilence    = 6 * HeartbeatInterval
)

// Serve answers requests from in on out for be until a close request or
// the end of in (the tuner is gone), then closes be. Errors: the
// connection's (a broken pipe), not the backend's (those go back in the
// replies).
func Serve(ctx context.Context, be backend.Backend, host string, in io.Reader, out io.Writer) error {
	c := workerproc.NewConn(in, out)
	defer be.Close()
	for {
		var req request
		if err := c.Dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("remote: reading a request: %w", err)
		}
		rep := answerAlive(ctx, be, host, &req, c, HeartbeatInterval)
		if err := c.Enc.Encode(&rep); err != nil {
			return fmt.Errorf("remote: writing a reply: %w", err)
		}
		if req.Op == opClose {
			return nil
		}
	}
}

// answerAlive answers req, sending a keep-alive on c every interval
// while the backend works on it (a measurement with a thermal warm-up,
// arguments of many GiB), so the coordinator can tell a busy worker from
// a lost one.
func answerAlive(ctx context.Context, be backend.Backend, host string, req *request, c *workerproc.Conn, interval time.Duration) reply {
	stop := c.KeepAlive(interval, &reply{Alive: true})
	defer stop()
	return answer(ctx, be, host, req)
}

func answer(ctx context.Context, be backend.Backend, host string, req *request) (rep reply) {
	fail := func(err error) reply {
		if ce, ok := errors.AsType[*backend.CompileError](err); ok {
			return reply{Err: err.Error(), CompileLog: ce.Log, CompileProcess: ce.Process}
		}
		return reply{Err: err.Error()}
	}
	switch req.Op {
	case opHello:
		_, sim := backend.Capability[backend.Simulator](be)
		return reply{Device: be.Device(), Simulated: sim, Host: host}
	case opPrepare:
		if err := be.Prepare(ctx, req.Problem); err != nil {
			return fail(err)
		}
	case opCompile:
		b, err := be.Compile(ctx, req.Job)
		if err != nil {
			return fail(err)
		}
		rep.Binary = b
	case opRun:
		r, err := be.Run(ctx, req.Plan)
		if err != nil {
			return fail(err)
		}
		rep.Result = r
	case opClose:
	default:
		return reply{Err: fmt.Sprintf("remote: unknown request %q", req.Op)}
	}
	return rep
}

// Options bound the waits on a worker.
type Options struct {
	// Stderr also receives the worker's standard error (a tail of it
	// is kept for error messages either way).
	Stderr io.Writer
	// StartTimeout bounds the worker's start and hello (a cluster may
	// take a while to give a job step its node); default 5 min.
	StartTimeout time.Duration
	// CallTimeout bounds every other request; default 30 min (Prepare
	// fills arguments of many GiB).
	CallTimeout time.Duration
	// Silence bounds the time between two messages of a worker busy
	// with a request (it sends a keep-alive every HeartbeatInterval);
	// default DefaultSilence.
	Silence time.Duration
	// Compiler, when set, compiles here instead of on the worker (the
	// coordinator's cores: the simulated GPU's compiler, or NVRTC in
	// compile processes), so that compilations do not queue behind the
	// worker's measurements. Its binaries must be ones the worker's
	// backend runs.
	Compiler interface {
		Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error)
	}
}

// Backend is one GPU served by a worker process. Calls are serialised:
// the worker answers one request at a time.
type Backend struct {
	mu     sync.Mutex
	p      *workerproc.Proc
	dev    device.Description
	host   string
	opts   Options
	closed bool
}

// SimBackend is a Backend whose worker serves a simulated GPU: it is a
// backend.Simulator, so the tuner treats it as the simulated GPU it is
// (exact description, the spec's declared resources).
type SimBackend struct{ *Backend }

// Description is the simulated device's description.
func (s SimBackend) Description() device.Description { return s.dev }

// Simulated marks backend.Simulator.
func (SimBackend) Simulated() {}

// Traits implements backend.TraitDeclarer: the worker's simulated GPU
// models its results and takes resources from the declared work; its
// compilations are the coordinator's (Options.Compiler), instant too.
func (SimBackend) Traits() backend.Traits {
	return backend.Traits{InstantCompile: true, Modelled: true, DeclaredResources: true}
}

// Start starts the worker argv (argv[0] its program: gtune itself, or
// srun running gtune on a node) and asks it for its GPU. It returns a
// SimBackend where the worker's GPU is simulated. Errors: the worker
// does not start or answer within Options.StartTimeout (with its
// standard error's tail).
func Start(ctx context.Context, argv []string, env []string, o Options) (backend.Backend, error) {
	if len(argv) == 0 {
		return nil, errors.New("remote: no worker command")
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Minute
	}
	if o.Silence <= 0 {
		o.Silence = DefaultSilence
	}
	p, err := workerproc.Start(argv[0], argv[1:], env, o.Stderr)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	var rep reply
	// Silent up to StartTimeout: before the worker runs at all, srun
	// may wait that long for its node.
	hello := func() bool {
		if rep.Alive {
			rep = reply{}
			return true
		}
		return false
	}
	if err := p.CallAlive(ctx, &request{Op: opHello}, &rep, o.StartTimeout, o.StartTimeout, hello); err != nil {
		p.Kill()
		return nil, fmt.Errorf("remote: worker %v: %w; its stderr: %s", argv, err, p.Tail())
	}
	if rep.Err != "" {
		p.Kill()
		return nil, fmt.Errorf("remote: worker %v: %s", argv, rep.Err)
	}
	b := &Backend{p: p, dev: rep.Device, host: rep.Host, opts: o}
	if rep.Simulated {
		return SimBackend{b}, nil
	}
	return b, nil
}

// Host is the name of the host the worker runs on.
func (b *Backend) Host() string { return b.host }

// Device describes the worker's GPU.
func (b *Backend) Device() device.Description { return b.dev }

// call sends one request and decodes the reply; the worker's own
// failure (it died, a timeout) is an error naming its host.
func (b *Backend) call(ctx context.Context, req *request) (*reply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("remote: backend closed")
	}
	var rep reply
	alive := func() bool {
		if rep.Alive {
			rep = reply{} // gob leaves fields the next reply omits
			return true
		}
		return false
	}
	if err := b.p.CallAlive(ctx, req, &rep, b.opts.CallTimeout, b.opts.Silence, alive); err != nil {
		return nil, fmt.Errorf("remote: the worker on %s: %w", b.host, err)
	}
	if rep.Err != "" {
		if rep.CompileLog != "" || req.Op == opCompile && rep.CompileProcess {
			return nil, &backend.CompileError{Log: rep.CompileLog, Process: rep.CompileProcess}
		}
		return nil, fmt.Errorf("remote: the worker on %s: %s", b.host, rep.Err)
	}
	return &rep, nil
}

// Prepare allocates and fills p's arguments on the worker's GPU.
func (b *Backend) Prepare(ctx context.Context, p *backend.Problem) error {
	if c, ok := b.opts.Compiler.(interface {
		Prepare(context.Context, *backend.Problem) error
	}); ok {
		// The compiler here compiles against the problem, as a GPU's
		// backend does against the problem it prepared.
		if err := c.Prepare(ctx, p); err != nil {
			return err
		}
	}
	_, err := b.call(ctx, &request{Op: opPrepare, Problem: p})
	return err
}

// Compile compiles j with Options.Compiler where there is one, else on
// the worker's node.
func (b *Backend) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	if b.opts.Compiler != nil {
		return b.opts.Compiler.Compile(ctx, j)
	}
	rep, err := b.call(ctx, &request{Op: opCompile, Job: j})
	if err != nil {
		return nil, err
	}
	return rep.Binary, nil
}

// Run measures p on the worker's GPU.
func (b *Backend) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	rep, err := b.call(ctx, &request{Op: opRun, Plan: p})
	if err != nil {
		return nil, err
	}
	return rep.Result, nil
}

// Close asks the worker to close its GPU and exit (killing it after 5 s).
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var rep reply
	if err := b.p.Call(context.Background(), &request{Op: opClose}, &rep, 5*time.Second); err != nil {
		b.p.Kill()
		return nil
	}
	b.p.WaitExit(5 * time.Second)
	return nil
}
