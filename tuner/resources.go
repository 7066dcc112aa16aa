package tuner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/plausibility"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

// OccupancyTarget gives the occupancy-guided strategies the GPU's
// description (the simulated GPU's own, or the database entry matching
// the real GPU's name, device.LookupName) and each configuration's launch
// geometry from the spec: threads per thread block and thread blocks in
// the grid. Errors: a real GPU whose name is not in the device database
// (listing the known ones); a configuration the spec cannot turn into a
// job is an error of the Geometry call.
func OccupancyTarget(be backend.Backend, s *spec.Spec, sp *space.Space) (*strategy.Target, error) {
	d, err := Description(be)
	if err != nil {
		return nil, err
	}
	return &strategy.Target{Device: d, Geometry: Geometry(s, sp)}, nil
}

// Geometry gives configuration i's threads per thread block and thread
// blocks in the grid (strategy.Target.Geometry) from the spec.
func Geometry(s *spec.Spec, sp *space.Space) func(i int) (int, int, error) {
	return func(i int) (int, int, error) {
		grid, block, err := s.Geometry(sp.Values(i))
		if err != nil {
			return 0, 0, err
		}
		return block[0] * block[1] * block[2], grid[0] * grid[1] * grid[2], nil
	}
}

// DeclaredResources gives a configuration's registers per thread and
// shared memory per thread block (bytes, static + dynamic) from the
// spec's declarations alone (Gtune.Simulation Registers and SharedMemory
// expressions, KernelSpecification.SharedMemory): nil without a
// Registers expression. For counting a reduced space without a GPU.
func DeclaredResources(s *spec.Spec, sp *space.Space) func(int) (int, int, error) {
	if s.Simulation == nil || s.Simulation.Registers == nil {
		return nil
	}
	return declaredResources(nil, s, sp)
}

// Description is the description of the backend's GPU (Device): for a
// real GPU the device database's entry for its name overridden by the
// driver's answers. Errors: a GPU the database does not know, whose peak
// throughputs (for plausibility and the simulator's models) are then
// unknown (the message lists the known ones).
func Description(be backend.Backend) (*device.Description, error) {
	d := be.Device()
	// A backend whose description carries no peak throughput reports
	// only its GPU's name: a replay of a recorded run, or a GPU the
	// database does not know (a simulated or projected one is its
	// database entry). The database's description of the name stands for
	// it, with the backend's own state kept (a replayed H100 needs the
	// H100's limits and peaks for occupancy and the projection);
	// LookupName's error lists the names it knows.
	if d.PeakFP32GFLOPS <= 0 {
		known, err := device.LookupName(d.Local.Name)
		if err != nil {
			return nil, err
		}
		known.Local = d.Local
		return known, nil
	}
	return &d, nil
}

// Peaks are the ceilings measurements on d are checked against (package
// plausibility): the spec's Gtune.Plausibility where given, else d's FP32
// peak and memory bandwidth; nil d gives only the spec's.
func Peaks(d *device.Description, s *spec.Spec) plausibility.Peaks {
	var p plausibility.Peaks
	if d != nil {
		p = plausibility.Peaks{FLOPS: d.PeakFP32GFLOPS * 1e9, BytesPerSecond: d.MemoryBandwidthGBs * 1e9, L2Bytes: d.L2Bytes,
			Source: d.Name + ", device database"}
	}
	if v := s.Plausibility.PeakGFLOPS; v > 0 {
		p.FLOPS, p.Source = v*1e9, "Gtune.Plausibility"
	}
	if v := s.Plausibility.PeakGBs; v > 0 {
		p.BytesPerSecond, p.Source = v*1e9, "Gtune.Plausibility"
	}
	return p
}

// declaredResources gives a configuration's registers per thread and
// shared memory per thread block (static + dynamic, bytes: occupancy
// counts both) from the spec's Gtune.Simulation Registers and
// SharedMemory expressions. On the simulated GPU these are what it
// simulates (Registers defaults to 32 there); on a real GPU they are the
// spec's declaration, required: without a Registers expression it
// returns nil, and the occupancy-guided strategies say that the spec must
// declare them.
func declaredResources(be backend.Backend, s *spec.Spec, sp *space.Space) func(int) (int, int, error) {
	if s.Simulation == nil {
		return nil
	}
	if !backend.TraitsOf(be).DeclaredResources && s.Simulation.Registers == nil {
		return nil
	}
	return func(i int) (int, int, error) {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			return 0, 0, err
		}
		return j.Work.Registers, j.Work.SharedMemory + j.DynamicSharedBytes, nil
	}
}

// compileProgressOver is the number of compiles above which the
// resource provider says on stderr that it is compiling (a few hundred
// NVRTC compiles take a minute or more).
const compileProgressOver = 256

// ResourceProvider answers strategy.Options.Resources (Config.Resources)
// for one run: a
// configuration's registers per thread and shared memory per thread
// block (static + dynamic, bytes: occupancy counts both), from the first
// of these that knows them:
//
//  1. a per-run in-memory cache (the table filled at the first call);
//  2. the results database: the newest stored evaluation of the same
//     spec hash and device (store.Previous) whose kernel was loaded
//     (status valid, or registers reported) carries the registers and
//     static shared memory as compiled;
//  3. the backend, when it is a backend.ResourceReporter: Compile (in
//     this process; NVRTC for backend/cuda), then Resources (backend/cuda
//     loads the module in its worker and reads cuFuncGetAttribute
//     NUM_REGS and SHARED_SIZE_BYTES, no launch; backend/sim reports its
//     Work);
//  4. the spec's declarations (declaredResources: Gtune.Simulation
//     Registers and SharedMemory expressions).
//
// The dynamic part of shared memory is always the Job's
// DynamicSharedBytes (KernelSpecification.SharedMemory).
//
// Cost: Algorithm 1 of multi-kernel-autotuning-performance-energy.md
// needs the occupancy of every configuration to reduce the search space,
// so the first call fills the table for the whole space at once: one
// compile per distinct compilation (configurations differing only in GPU
// settings such as nvml_gr_clock share one) that the database does not
// hold, run on a pool of runtime.NumCPU() workers, each followed by one
// cheap Resources call. Spaces needing more than compileProgressOver
// compiles print one line of progress on stderr. Before compiling, the
// backend is prepared with the problem's source and compiler options but
// no arguments (backends compile against the prepared problem; the
// arguments are allocated by the tuner's own Prepare afterwards).
// Strategies that never ask cost nothing.
type ResourceProvider struct {
	ctx      context.Context
	log      io.Writer
	be       backend.Backend
	s        *spec.Spec
	sp       *space.Space
	db       *store.DB // nil: no database
	declared func(int) (int, int, error)
	workers  int

	// cache, when set (UseCompileCache), keeps the binaries compiled
	// for their resources, keyed as the run's own compilations
	// (compilecache.Key with compiler, the backend's identity), so that
	// the run reuses them instead of compiling them again.
	cache    *compilecache.Cache
	compiler string
	prob     *backend.Problem // the problem compiled against (prepare)

	once    sync.Once
	fillErr error
	jobs    []*backend.Job
	jobErrs []error
	unitOf  []int // space index -> compilation unit
	units   []*resourceUnit
}

// resourceUnit is one distinct compilation (same defines, same simulated
// work) and what is known of its resources.
type resourceUnit struct {
	index       int // first space index compiled this way
	known       bool
	from        string // "database" | "backend"
	regs, smem  int    // registers per thread; static shared memory per thread block, bytes
	backendErr  error  // why the backend could not report them (nil: it was not asked)
	fromCompile bool   // backendErr is a compiler rejection
}

// NewResourceProvider makes the provider of be, s and sp; db may be nil
// (no database), log receives the progress line. It does no work until
// the first Resources call.
func NewResourceProvider(ctx context.Context, log io.Writer, be backend.Backend, s *spec.Spec, sp *space.Space, db *store.DB) *ResourceProvider {
	return &ResourceProvider{
		ctx: ctx, log: log, be: be, s: s, sp: sp, db: db,
		declared: declaredResources(be, s, sp),
		workers:  runtime.NumCPU(),
	}
}

// UseCompileCache has the provider take binaries from c and keep those it
// compiles there, under the keys the run's compilations use, so that a
// configuration compiled for its resources is not compiled again to be
// measured. A nil c, or a backend that is not a backend.Compiler, leaves
// the provider compiling on its own.
func (p *ResourceProvider) UseCompileCache(c *compilecache.Cache) {
	if c == nil {
		return
	}
	if cc, ok := backend.Capability[backend.Compiler](p.be); ok {
		if id, err := cc.CompilerID(); err == nil {
			p.cache, p.compiler = c, id
		}
	}
}

// compile compiles j, through the compile cache when the provider has
// one (UseCompileCache).
func (p *ResourceProvider) compile(j *backend.Job) (*backend.Binary, error) {
	if p.cache == nil {
		return p.be.Compile(p.ctx, j)
	}
	key := compilecache.Key(p.compiler, p.prob.Kernels[j.Kernel], j)
	if bin, rejected, ok := p.cache.Get(key); ok {
		if rejected != nil {
			return nil, rejected
		}
		return bin, nil
	}
	bin, err := p.be.Compile(p.ctx, j)
	if err == nil {
		_ = p.cache.Put(key, bin)
	} else if ce, ok := errors.AsType[*backend.CompileError](err); ok && !ce.Process {
		_ = p.cache.PutRejected(key, ce.Log)
	}
	return bin, err
}

// Resources is strategy.Options.Resources: registers per thread and
// shared memory per thread block (static + dynamic, bytes) of space
// index i. Errors (each naming the configuration): an index outside the
// space, a configuration the spec cannot turn into a job, or none of the
// four sources knowing it (with the backend's reason, e.g. the compiler's
// rejection, where it was asked); a failure to read the database is
// returned for every index.
func (p *ResourceProvider) Resources(i int) (int, int, error) {
	p.once.Do(p.fill)
	if p.fillErr != nil {
		return 0, 0, p.fillErr
	}
	if i < 0 || i >= len(p.jobs) {
		return 0, 0, fmt.Errorf("configuration index %d outside the search space of %d", i, len(p.jobs))
	}
	if p.jobErrs[i] != nil {
		return 0, 0, fmt.Errorf("configuration %s: %w", p.sp.Key(i), p.jobErrs[i])
	}
	j, u := p.jobs[i], p.units[p.unitOf[i]]
	if u.known {
		return u.regs, u.smem + j.DynamicSharedBytes, nil
	}
	if p.declared != nil {
		return p.declared(i)
	}
	var why []string
	switch {
	case u.backendErr != nil && u.fromCompile:
		why = append(why, "it does not compile ("+u.backendErr.Error()+")")
	case u.backendErr != nil:
		why = append(why, "the backend could not report them ("+u.backendErr.Error()+")")
	default:
		why = append(why, fmt.Sprintf("the %s backend cannot report them", p.be.Device().Backend))
	}
	if p.db != nil {
		why = append(why, "the results database holds no evaluation of it with this spec on this GPU")
	}
	why = append(why, "and the spec declares no Gtune.Simulation.Registers expression")
	return 0, 0, fmt.Errorf("configuration %s: registers per thread and shared memory per thread block unknown: %s", j.Key, strings.Join(why, "; "))
}

// unitKey identifies a compilation: the defines passed to the compiler
// and, on the simulated GPU, the work it encodes.
func unitKey(j *backend.Job) string {
	var b strings.Builder
	for _, d := range j.Defines {
		fmt.Fprintf(&b, "%s=%s;", d.Name, d.Value)
	}
	if j.Work != nil {
		fmt.Fprintf(&b, "%+v", *j.Work)
	}
	return b.String()
}

func (p *ResourceProvider) fill() {
	p.units = p.unitsOf()
	if p.db != nil {
		if err := p.fromDatabase(); err != nil {
			p.fillErr = err
			return
		}
	}
	rr, ok := backend.Capability[backend.ResourceReporter](p.be)
	if !ok {
		return
	}
	var todo []*resourceUnit
	for _, u := range p.units {
		if !u.known {
			todo = append(todo, u)
		}
	}
	if len(todo) == 0 {
		return
	}
	if err := p.prepare(); err != nil {
		for _, u := range todo {
			u.backendErr = err
		}
		return
	}
	start := time.Now()
	if len(todo) > compileProgressOver {
		fmt.Fprintf(p.log, "gtune: compiling %d configurations on %d CPUs for their registers and shared memory (occupancy)...", len(todo), p.workers)
	}
	next := make(chan *resourceUnit)
	var wg sync.WaitGroup
	for range max(1, p.workers) {
		wg.Go(func() {
			for u := range next {
				p.fromBackend(rr, u)
			}
		})
	}
	for _, u := range todo {
		next <- u
	}
	close(next)
	wg.Wait()
	if len(todo) > compileProgressOver {
		fmt.Fprintf(p.log, " done in %s\n", time.Since(start).Round(100*time.Millisecond))
	}
}

// unitsOf makes each configuration's job (p.jobs, p.jobErrs) and groups
// the configurations whose jobs compile alike (unitKey) into units
// (p.unitOf), one per group, named by its first configuration.
func (p *ResourceProvider) unitsOf() []*resourceUnit {
	n := p.sp.Len()
	p.jobs, p.jobErrs, p.unitOf = make([]*backend.Job, n), make([]error, n), make([]int, n)
	var units []*resourceUnit
	byKey := map[string]int{}
	for i := range n {
		j, err := p.s.Job(p.sp.Values(i))
		if err != nil {
			p.jobErrs[i], p.unitOf[i] = err, -1
			continue
		}
		p.jobs[i] = j
		k := unitKey(j)
		u, ok := byKey[k]
		if !ok {
			u = len(units)
			byKey[k] = u
			units = append(units, &resourceUnit{index: i})
		}
		p.unitOf[i] = u
	}
	return units
}

// fromDatabase takes each unit's registers and shared memory from an
// evaluation of it on this GPU in the results database, where one is.
// Errors: the database's.
func (p *ResourceProvider) fromDatabase() error {
	prev, err := p.db.Previous(p.s.Hash, p.be.Device().UUID)
	if err != nil {
		return fmt.Errorf("registers and shared memory from the results database: %w", err)
	}
	for i, j := range p.jobs {
		if j == nil {
			continue
		}
		e, ok := prev[j.Key]
		u := p.units[p.unitOf[i]]
		if !ok || u.known || (e.Status != string(backend.StatusValid) && e.Registers <= 0) {
			continue
		}
		u.known, u.from, u.regs, u.smem = true, "database", e.Registers, e.SharedStaticBytes
	}
	return nil
}

// fromBackend compiles unit u's job and asks the backend for its
// registers and shared memory; a failure is the unit's (backendErr,
// fromCompile for a compiler's refusal, by its log's first line).
func (p *ResourceProvider) fromBackend(rr backend.ResourceReporter, u *resourceUnit) {
	j := p.jobs[u.index]
	bin, err := p.compile(j)
	if err != nil {
		var ce *backend.CompileError
		u.fromCompile = errors.As(err, &ce)
		if u.fromCompile {
			err = errors.New(firstLine(ce.Log))
		}
		u.backendErr = err
		return
	}
	r, err := rr.Resources(p.ctx, j, bin)
	if err != nil {
		u.backendErr = err
		return
	}
	u.known, u.from, u.regs, u.smem = true, "backend", r.Registers, r.SharedStaticBytes
}

// prepare gives the backend the problem to compile against, without its
// arguments: compiling needs only the source, kernel name and compiler
// options, and the tuner prepares the full problem itself.
func (p *ResourceProvider) prepare() error {
	prob, err := p.s.Problem()
	if err != nil {
		return err
	}
	for i := range prob.Kernels {
		prob.Kernels[i].Args, prob.Kernels[i].Verification = nil, nil
	}
	p.prob = prob
	if err := p.be.Prepare(p.ctx, prob); err != nil {
		return fmt.Errorf("preparing the backend to compile: %w", err)
	}
	return nil
}

// firstLine is the first non-blank line of a compiler log, at most 200
// characters.
func firstLine(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "..."
			}
			return l
		}
	}
	return "compile failed"
}
