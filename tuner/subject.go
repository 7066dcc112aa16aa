package tuner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/workload"
)

// Subject is what a run tunes (Config.Subject): one spec (FromSpec), or
// several kernels run together over a workload's combined space
// (FromWorkload), whose layout stays inside it. The run's steps reach
// the kernels only through it; its methods are the tuner's own.
type Subject interface {
	// spec is the spec tuned alone; nil for a workload.
	spec() *spec.Spec
	// workloadSet is the workload and its layout; nil for a spec.
	workloadSet() (*workload.Set, *workload.Layout)

	hash() string
	path() string
	kernel() string
	budget() spec.Budget
	problem() (*backend.Problem, error)
	request() measure.Request
	// plan is the uncompiled plan of configuration cfg of the run's space.
	plan(cfg []expr.Value) (*backend.Plan, error)
	// reference computes the reference outputs on be (prepared with
	// prob, marked by workload.MarkReference), which be keeps.
	reference(ctx context.Context, be backend.Backend, prob *backend.Problem, build planBuilder) error
	metrics(obs map[string]float64, cfg []expr.Value) (map[string]float64, error)
	workingSet() int64
	outlierFactor() float64
	// members is the number of kernels; member gives the kernel of a
	// plan's launch (its Job.Kernel).
	members() int
}

// FromSpec is the subject of a run tuning spec s over its own space.
func FromSpec(s *spec.Spec) Subject { return specSubject{s} }

// FromWorkload is the subject of a run tuning the kernels of set
// together over its combined space (workload.Set.Space), laid out as lay
// says (multi-kernel-autotuning-performance-energy.md, section III.D):
// each configuration is measured as one plan of launches, its objective
// the whole plan's, each kernel's own time kept per launch.
func FromWorkload(set *workload.Set, lay *workload.Layout) Subject { return setSubject{set, lay} }

type specSubject struct{ s *spec.Spec }

func (x specSubject) spec() *spec.Spec                               { return x.s }
func (x specSubject) workloadSet() (*workload.Set, *workload.Layout) { return nil, nil }

func (x specSubject) hash() string                                 { return x.s.Hash }
func (x specSubject) path() string                                 { return x.s.Path }
func (x specSubject) kernel() string                               { return x.s.KernelName }
func (x specSubject) budget() spec.Budget                          { return x.s.Budget }
func (x specSubject) problem() (*backend.Problem, error)           { return x.s.Problem() }
func (x specSubject) request() measure.Request                     { return x.s.Request() }
func (x specSubject) plan(cfg []expr.Value) (*backend.Plan, error) { return x.s.Plan(cfg) }
func (x specSubject) workingSet() int64                            { return x.s.WorkingSetBytes() }
func (x specSubject) outlierFactor() float64                       { return x.s.Plausibility.OutlierFactor }
func (x specSubject) members() int                                 { return 1 }
func (x specSubject) metrics(obs map[string]float64, cfg []expr.Value) (map[string]float64, error) {
	return objective.Metrics(x.s.Metrics, obs, x.s.Env(cfg))
}

// reference runs the spec's reference configuration once, saving its
// outputs as the reference every other configuration is compared with,
// compiled by build (the run's build layer).
func (x specSubject) reference(ctx context.Context, be backend.Backend, _ *backend.Problem, build planBuilder) error {
	s := x.s
	cfg, ok, err := s.ReferenceConfig()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("outputs need a reference: give ReferenceArguments or Gtune.Reference.Configuration")
	}
	plan, err := s.Plan(cfg)
	if err != nil {
		return fmt.Errorf("reference configuration: %w", err)
	}
	plan.Measure = measure.Request{Iterations: 1, SaveReference: true, StateKey: plan.Settings.StateKey()}
	job := plan.Launches[0].Job
	if err := build(ctx, plan); err != nil {
		return fmt.Errorf("reference configuration %s does not compile: %w", job.Key, err)
	}
	res, err := be.Run(ctx, plan)
	if err != nil {
		return fmt.Errorf("reference configuration %s: %w", job.Key, err)
	}
	if res.ArgumentMismatch {
		return &ConfigError{fmt.Errorf("%s: KernelSpecification.Arguments do not match the kernel's parameters (reference configuration %s): %s", s.Path, job.Key, res.Reason)}
	}
	if res.Status != backend.StatusValid {
		return fmt.Errorf("reference configuration %s failed (%s): %s", job.Key, res.Status, res.Reason)
	}
	return nil
}

// setSubject is several kernels tuned together over a workload's combined
// space (workload.Set.Space and its Layout). Each plan keys as the
// combined space does, so that the results database reuses it.
type setSubject struct {
	set *workload.Set
	lay *workload.Layout
}

func (x setSubject) spec() *spec.Spec                               { return nil }
func (x setSubject) workloadSet() (*workload.Set, *workload.Layout) { return x.set, x.lay }
func (x setSubject) hash() string                                   { return x.set.Hash() }
func (x setSubject) path() string                                   { return x.set.Path }

// kernel names a workload's run by the workload, then its kernels
// (gtune runs lists it so): "rodinia-4 (lud+streamcluster+...)"; a plan
// of specs without a workload file by its kernels alone.
func (x setSubject) kernel() string {
	if x.set.Name == "" {
		return x.set.Names()
	}
	return x.set.Name + " (" + x.set.Names() + ")"
}
func (x setSubject) budget() spec.Budget { return spec.Budget{} }
func (x setSubject) members() int        { return len(x.set.Members) }

// request is the workload's (workload.Set.Request; its error was
// reported when the run started).
func (x setSubject) request() measure.Request {
	r, _ := x.set.Request()
	return r
}

// timeout is the sum of the kernels' timeouts: they may run one after
// another.
func (x setSubject) timeout() (t time.Duration) {
	for _, m := range x.set.Members {
		t += m.Spec.Measurement.Timeout
	}
	return t
}

func (x setSubject) workload(cfg []expr.Value) (*workload.Workload, error) {
	return x.set.Workload(x.lay, cfg)
}

func (x setSubject) problem() (*backend.Problem, error) {
	prob := &backend.Problem{}
	for _, m := range x.set.Members {
		p, err := m.Spec.Problem()
		if err != nil {
			return nil, err
		}
		prob.Kernels = append(prob.Kernels, p.Kernels...)
	}
	if !x.set.Verifies() {
		for i := range prob.Kernels {
			prob.Kernels[i].Verification = nil
		}
	}
	if _, err := x.set.Request(); err != nil {
		return nil, err
	}
	return prob, nil
}

func (x setSubject) plan(cfg []expr.Value) (*backend.Plan, error) {
	w, err := x.workload(cfg)
	if err != nil {
		return nil, err
	}
	_, plan, err := w.Plan(x.request(), x.timeout())
	return plan, err
}

// reference runs every kernel's reference configuration together once
// (workload.Workload.Reference), in the written order, compiled by build
// (the run's build layer).
func (x setSubject) reference(ctx context.Context, be backend.Backend, prob *backend.Problem, build planBuilder) error {
	w := &workload.Workload{}
	for i, m := range x.set.Members {
		ref, ok, err := m.Spec.ReferenceConfig()
		if err != nil {
			return err
		}
		if !ok {
			// A kernel whose outputs need no reference runs in the
			// reference plan only to keep its shape: at the first valid
			// configuration of its space (the first value of each
			// parameter may break a restriction).
			sp, err := x.set.MemberSpace(ctx, i, space.BuildOptions{})
			if err != nil {
				return err
			}
			ref = sp.Values(0)
		}
		w.Launches = append(w.Launches, workload.Launch{Spec: m.Spec, Config: ref, Stream: m.Stream})
	}
	return w.Reference(ctx, be, prob, build)
}

// metrics: a workload's specs' metrics read their own parameters and
// time, not the plan's; none is computed for the plan.
func (x setSubject) metrics(map[string]float64, []expr.Value) (map[string]float64, error) {
	return nil, nil
}

func (x setSubject) workingSet() int64 {
	var n int64
	for _, m := range x.set.Members {
		n += m.Spec.WorkingSetBytes()
	}
	return n
}

func (x setSubject) outlierFactor() float64 { return x.set.Members[0].Spec.Plausibility.OutlierFactor }

// planBuilder compiles a plan's launches, setting their binaries (the
// run's build layer: run.build).
type planBuilder func(ctx context.Context, plan *backend.Plan) error

// binaries caches a run's compiled kernels by kernel and configuration
// key: plans of a workload share them (every launch order of the same
// configurations, every combination holding a kernel's configuration).
type binaries struct {
	mu sync.Mutex
	m  map[binaryKey]*binaryEntry
}

// binaryKey is a kernel and configuration key, or with kernel -1 a
// compilecache.Key.
type binaryKey struct {
	kernel int
	key    string
}

type binaryEntry struct {
	once sync.Once
	bin  *backend.Binary
	err  error
	// cached: bin came from the compile cache's earlier contents, not
	// from a compilation of this run.
	cached bool
}

// compile gives the binary of j, compiling it at the first call for its
// key; fresh reports whether this call compiled it.
func (b *binaries) compile(ctx context.Context, be backend.Backend, j *backend.Job) (bin *backend.Binary, fresh bool, err error) {
	e := b.entry(binaryKey{j.Kernel, j.Key})
	e.once.Do(func() {
		e.bin, e.err = be.Compile(ctx, j)
		fresh = true
	})
	return e.bin, fresh, e.err
}

// cached gives the binary of job j of kernel k from the compile cache
// (this run's or an earlier one's, keyed by compilecache.Key with the
// backend's compiler identity), compiling and storing it at the first
// call for its key in this run when the cache has none; fresh reports
// whether this call compiled it, fromCache whether the binary came from
// the cache's earlier contents (key is its cache key). A failure to store
// the binary on disk costs the next run a compilation, not this one: it
// is not an error.
func (b *binaries) cached(ctx context.Context, be backend.Backend, c *compilecache.Cache, compiler string, k backend.Kernel, j *backend.Job) (bin *backend.Binary, fresh, fromCache bool, key string, err error) {
	key = compilecache.Key(compiler, k, j)
	e := b.entry(binaryKey{-1, key})
	e.once.Do(func() {
		if cb, rejected, ok := c.Get(key); ok {
			e.bin, e.cached = cb, true
			if rejected != nil {
				e.err = rejected
			}
			return
		}
		e.bin, e.err = be.Compile(ctx, j)
		if e.err == nil {
			_ = c.Put(key, e.bin)
		} else if ce, ok := errors.AsType[*backend.CompileError](e.err); ok && !ce.Process {
			_ = c.PutRejected(key, ce.Log)
		}
		fresh = true
	})
	return e.bin, fresh, e.cached, key, e.err
}

// recompile replaces the compile cache's binary of key, which the
// backend could not use (why), by a fresh compilation of job j: the
// cache's entry is discarded (with a warning naming its file), j
// compiled, stored under key and used by this run's later plans too.
// Errors: the compilation's.
func (b *binaries) recompile(ctx context.Context, be backend.Backend, c *compilecache.Cache, key string, j *backend.Job, why string) (*backend.Binary, error) {
	c.Discard(key, "the GPU could not use its binary ("+why+")")
	bin, err := be.Compile(ctx, j)
	if err != nil {
		return nil, err
	}
	_ = c.Put(key, bin)
	e := &binaryEntry{bin: bin}
	e.once.Do(func() {})
	b.mu.Lock()
	b.m[binaryKey{-1, key}] = e
	b.mu.Unlock()
	return bin, nil
}

// has says whether k was compiled (or is being) in this run.
func (b *binaries) has(k binaryKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.m[k]
	return ok
}

// entry is the entry of k, made at its first use.
func (b *binaries) entry(k binaryKey) *binaryEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[binaryKey]*binaryEntry{}
	}
	e, ok := b.m[k]
	if !ok {
		e = &binaryEntry{}
		b.m[k] = e
	}
	return e
}
