package slurm

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/backend/remote"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/workerproc"
)

// WorkerMain runs this process as a remote GPU worker serving the
// simulated GPU its arguments describe (--sim-device ID --index I --seed
// S --noise N --run-wall D --stragglers P --straggler-factor F) on
// stdin/stdout (package remote), and exits
// when the tuner closes it or goes away. A CUDA GPU's remote worker is
// the CUDA worker itself (cuda.WorkerArg), started by srun.
func WorkerMain(args []string, exitBadInput int) int {
	var id string
	var o sim.Options
	for i := 0; i+1 < len(args); i += 2 {
		v := args[i+1]
		var err error
		switch args[i] {
		case "--sim-device":
			id = v
		case "--index":
			o.Index, err = strconv.Atoi(v)
		case "--seed":
			o.Seed, err = strconv.ParseInt(v, 10, 64)
		case "--noise":
			o.Noise, err = strconv.ParseFloat(v, 64)
		case "--run-wall":
			o.RunWall, err = time.ParseDuration(v)
		case "--stragglers":
			o.Stragglers, err = strconv.ParseFloat(v, 64)
		case "--straggler-factor":
			o.StragglerFactor, err = strconv.ParseFloat(v, 64)
		default:
			err = fmt.Errorf("unknown argument")
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gtune remote worker: %s %s: %v\n", args[i], v, err)
			return exitBadInput
		}
	}
	d, err := device.Lookup(id)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gtune remote worker: %v\n", err)
		return exitBadInput
	}
	out, err := workerproc.ProtocolOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gtune remote worker: %v\n", err)
		return 1
	}
	// Slurm's node name where there is one (several slurmd may share a
	// host), else the host's.
	host := os.Getenv("SLURMD_NODENAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	if err := remote.Serve(context.Background(), sim.New(d, o), host, os.Stdin, out); err != nil {
		fmt.Fprintf(os.Stderr, "gtune remote worker: %v\n", err)
		return 1
	}
	return 0
}

// Shape is the allocation's GPUs: nodes × GPUs per node, as given
// (positive), else from the environment Slurm gives a job
// (SLURM_JOB_NUM_NODES, SLURM_GPUS_ON_NODE or SLURM_GPUS_PER_NODE, e.g.
// "4" or "a100:4"). Errors (bad input, badinput): not in an allocation,
// a count neither given nor in the environment.
func Shape(nodes, perNode int, getenv func(string) string) (int, int, error) {
	var err error
	if getenv("SLURM_JOB_ID") == "" {
		return 0, 0, badinput.New("--slurm runs inside a Slurm allocation (salloc -N 2 --gpus-per-node=4 gtune tune ... --slurm, or a batch script); outside one, gtune slurm submit writes and submits the job")
	}
	if nodes == 0 {
		if nodes, err = strconv.Atoi(cmp.Or(getenv("SLURM_JOB_NUM_NODES"), getenv("SLURM_NNODES"))); err != nil || nodes < 1 {
			return 0, 0, badinput.New("--slurm: the allocation's node count is not in SLURM_JOB_NUM_NODES: give --nodes")
		}
	}
	if perNode == 0 {
		v := cmp.Or(getenv("SLURM_GPUS_ON_NODE"), getenv("SLURM_GPUS_PER_NODE"))
		if i := strings.LastIndex(v, ":"); i >= 0 {
			v = v[i+1:]
		}
		if perNode, err = strconv.Atoi(v); err != nil || perNode < 1 {
			return 0, 0, badinput.New("--slurm: the allocation's GPUs per node are not in SLURM_GPUS_ON_NODE or SLURM_GPUS_PER_NODE: give --gpus-per-node")
		}
	}
	return nodes, perNode, nil
}

// WorkerOptions are how OpenWorkers starts the GPU workers.
type WorkerOptions struct {
	Srun           string           // srun's path or name
	Nodes, PerNode int              // the allocation's shape (0: from the environment, Shape)
	Simulated      bool             // simulated GPUs (a modelled backend) rather than CUDA
	Sim            registry.Options // the simulated GPUs' options (Index is each worker's)
	Silence        time.Duration    // a worker silent this long is lost
	CompileProcs   int              // compile processes for CUDA (registry.WithCompileProcesses)
	CompileTimeout time.Duration
	// Interrupt, where set, interrupts the run when a worker fails
	// because the allocation ended.
	Interrupt func()
}

// OpenWorkers starts one GPU worker per GPU of the allocation, each
// a job step of one task (srun --nodes=1 --ntasks=1 --exact), and
// returns them as the run's GPUs: the first also compiles, here in the
// coordinator (compile processes for CUDA; the simulated GPU's compiler),
// so that compilations never queue behind a measurement. Errors: not in
// an allocation, GPU settings (applied through NVML from the process
// that holds the GPU, which is not this one), a worker that does not
// start.
func OpenWorkers(ctx context.Context, log io.Writer, f WorkerOptions) (backend.Backend, []backend.Backend, error) {
	nodes, perNode, err := Shape(f.Nodes, f.PerNode, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	n := nodes * perNode
	w := workers{ctx: ctx, f: f, simulated: f.Simulated}
	if w.exe, err = os.Executable(); err != nil {
		return nil, nil, err
	}
	w.srun = stepCommand(f.Srun, w.simulated)
	if w.simulated {
		d, o, err := registry.SimOptions(f.Sim)
		if err != nil {
			return nil, nil, err
		}
		w.compiler = sim.New(d, o)
	}
	fmt.Fprintf(log, "gtune: --slurm: starting %d GPU workers (%d nodes × %d) with srun\n", n, nodes, perNode)
	t0 := time.Now()
	out := make([]backend.Backend, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = w.start(i) })
	}
	wg.Wait()
	closeAll := func() {
		for _, b := range out {
			if b != nil {
				b.Close()
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--slurm: GPU worker %d: %w", i, err)
		}
	}
	sayStarted(log, out, time.Since(t0))
	// A worker lost because the allocation ended (scancel, the time
	// limit, a node failure that revoked it) ends the run as
	// interrupted, as SIGTERM would, not as failed.
	if f.Interrupt != nil {
		ended := allocationEnded(os.Getenv("SLURM_JOB_ID"), besideSrun(f.Srun, "squeue"))
		for i, b := range out {
			out[i] = &worker{Backend: b, ended: ended, interrupt: f.Interrupt}
		}
	}
	be := out[0]
	if !w.simulated {
		// NVRTC in compile processes here, where the run's cores are.
		if be, err = registry.WithCompileProcesses(be, f.CompileProcs, f.CompileTimeout); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return be, out[1:], nil
}

// stepCommand is the command that starts one GPU worker as a job step of
// one task: srun, its options, then the worker's command line is
// appended. --unbuffered: srun otherwise holds a task's output until a
// newline, and the protocol is binary. A real GPU's step asks for one GPU
// (--gpus-per-task=1) and runs without the allocation's GPU counts in its
// environment: salloc and sbatch export --gpus-per-node as
// SLURM_GPUS_PER_NODE (--gpus as SLURM_GPUS), srun reads them as its own
// options, and each step then took every GPU of the node, so the second
// worker's step waited for the first to end ("step creation temporarily
// disabled"; seen on a node of two H100s, BENCHMARKS.md "Slurm on the GPU
// host").
func stepCommand(srun string, simulated bool) []string {
	cmd := []string{srun, "--nodes=1", "--ntasks=1", "--exact", "--cpus-per-task=1", "--unbuffered", "--quiet", "--kill-on-bad-exit=1", "--job-name=gtune-gpu"}
	if simulated {
		return cmd
	}
	return append(append([]string{"env", "-u", "SLURM_GPUS_PER_NODE", "-u", "SLURM_GPUS", "-u", "SLURM_GPUS_PER_SOCKET"}, cmd...), "--gpus-per-task=1")
}

// workers is how OpenWorkers starts each GPU worker: srun's command
// line, this executable, and for a simulated GPU the compiler worker 0
// compiles with.
type workers struct {
	ctx       context.Context
	f         WorkerOptions
	simulated bool
	srun      []string
	exe       string
	compiler  *sim.Sim
}

// start starts GPU worker i with srun: the CUDA worker, or a simulated
// GPU of index i over the remote protocol.
func (w workers) start(i int) (backend.Backend, error) {
	f := w.f
	if !w.simulated {
		be, err := cuda.Open(w.ctx, 0, cuda.Options{Wrapper: w.srun, Silence: f.Silence})
		if err != nil {
			// Not a nil *cuda.Backend in the interface: OpenWorkers
			// closes the workers that did start by their non-nil ones.
			return nil, err
		}
		return be, nil
	}
	so := f.Sim
	so.Index = i
	d, o, err := registry.SimOptions(so)
	if err != nil {
		return nil, err
	}
	argv := append(append([]string{}, w.srun...), w.exe, remote.WorkerArg, "--sim-device", d.ID, "--index", strconv.Itoa(i),
		"--seed", strconv.FormatInt(o.Seed, 10), "--noise", strconv.FormatFloat(o.Noise, 'g', -1, 64), "--run-wall", o.RunWall.String(),
		"--stragglers", strconv.FormatFloat(o.Stragglers, 'g', -1, 64), "--straggler-factor", strconv.FormatFloat(o.StragglerFactor, 'g', -1, 64))
	ro := remote.Options{Silence: f.Silence}
	if i == 0 {
		ro.Compiler = w.compiler
	}
	return remote.Start(w.ctx, argv, os.Environ(), ro)
}

// sayStarted says how many GPU workers started, in how long, on how
// many nodes.
func sayStarted(log io.Writer, out []backend.Backend, took time.Duration) {
	hosts := map[string]int{}
	for _, b := range out {
		if r, ok := b.(interface{ Host() string }); ok {
			hosts[r.Host()]++
		}
	}
	fmt.Fprintf(log, "gtune: --slurm: %d GPU workers started in %v", len(out), took.Round(time.Millisecond))
	if len(hosts) > 0 {
		fmt.Fprintf(log, " on %d nodes", len(hosts))
	}
	fmt.Fprintln(log)
}

// worker is a GPU worker of a Slurm allocation: a Run that fails
// because the allocation ended (its job step was cancelled with it)
// interrupts the run.
type worker struct {
	backend.Backend
	ended     func() bool
	interrupt func()
}

// Unwrap gives the worker's backend (backend.Capability).
func (w *worker) Unwrap() backend.Backend { return w.Backend }

// Run measures p on the worker; on failure it asks Slurm whether the
// allocation is ending, and if so interrupts the run before returning.
func (w *worker) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	res, err := w.Backend.Run(ctx, p)
	if err != nil && ctx.Err() == nil && w.ended() {
		w.interrupt()
	}
	return res, err
}

// besideSrun is Slurm's command name where srun was found: in srun's
// folder when --srun names one (a Slurm installed off PATH), else name.
func besideSrun(srun, name string) string {
	if strings.ContainsRune(srun, filepath.Separator) {
		return filepath.Join(filepath.Dir(srun), name)
	}
	return name
}

// allocationEnded says, by squeue, whether Slurm job id is over or
// ending: cancelled, out of time, its node failed, completing, or no
// longer known. A squeue that cannot be run says nothing (false): a
// worker's failure is then the worker's.
func allocationEnded(id, squeue string) func() bool {
	return func() bool {
		if id == "" {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, squeue, "-h", "-j", id, "-o", "%T").CombinedOutput()
		text := strings.TrimSpace(string(out))
		if err != nil {
			// squeue refuses a job it no longer knows.
			return strings.Contains(text, "Invalid job id")
		}
		switch text {
		case "", "CANCELLED", "COMPLETING", "COMPLETED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "DEADLINE", "FAILED", "BOOT_FAIL", "OUT_OF_MEMORY":
			return true
		}
		return false
	}
}
