package spec

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// checkAll is how many configurations CheckJobs evaluates: all of a space
// up to this size, an evenly spaced sample of this many beyond it (about a
// second of work on one core; a later configuration whose expression fails
// is then reported by Job when the tuner reaches it).
const checkAll = 200_000

// placeholder is the value every observation takes when CheckJobs tries
// the metrics: not 0 or 1, so that a metric dividing by (time - 1) does
// not fail here by accident.
const placeholder = 1.7

// CheckJobs evaluates, before any GPU work, every expression of the spec
// that depends on a configuration — LocalSize, GlobalSize, GridDiv,
// SharedMemory, Gtune.Simulation, GPU-setting values — for the
// configurations of sp (see checkAll), and each metric once with the first
// configuration and placeholder observations, so that a spec error stops
// the run with exit status 2 instead of surfacing mid-run. A metric may
// still divide by zero on real observations; that leaves the metric
// missing for that configuration (package objective), so a division by
// zero is not an error here.
//
// It also adds to Warnings that GlobalSize is not used when ProblemSize is
// given and the two disagree for the first configuration.
//
// Errors: an *Error naming the field and the configuration; ctx.Err()
// when ctx ends first.
func (s *Spec) CheckJobs(ctx context.Context, sp *space.Space) error {
	err := sampled(ctx, sp, func(cfg []expr.Value) error {
		if _, err := s.job(cfg, false); err != nil {
			return err
		}
		_, err := s.Settings(cfg)
		return err
	})
	if err != nil {
		return err
	}
	n := sp.Len()
	if n == 0 {
		return nil
	}
	first := sp.Values(0)
	if err := s.checkMetrics(first); err != nil {
		return err
	}
	s.warnGlobalSize(first)
	return nil
}

// checkMetrics evaluates the metrics in order for cfg with every
// observation at placeholder.
func (s *Spec) checkMetrics(cfg []expr.Value) error {
	vals := expr.MapEnv{}
	for _, o := range ObservationNames {
		vals[o] = expr.Float(placeholder)
	}
	env := obsEnv{vals, s.Env(cfg)}
	for i, m := range s.Metrics {
		v, err := m.Expr.Eval(env)
		if err != nil {
			var ee *expr.EvalError
			if errors.As(err, &ee) && ee.Type == "ZeroDivisionError" {
				vals[m.Name] = expr.Float(placeholder)
				continue
			}
			return &Error{File: s.Path, Field: fmt.Sprintf("Gtune.Metrics[%d] (%s).Expression", i, m.Name), Msg: fmt.Sprintf("%s: %v", quote(m.Expr.Source()), err)}
		}
		if _, ok := v.Float(); !ok {
			return &Error{File: s.Path, Field: fmt.Sprintf("Gtune.Metrics[%d] (%s).Expression", i, m.Name), Msg: fmt.Sprintf("%s is %s, not a number", quote(m.Expr.Source()), expr.Excerpt(v.String()))}
		}
		vals[m.Name] = v
	}
	return nil
}

type obsEnv struct {
	top  expr.MapEnv
	base expr.Env
}

func (l obsEnv) Lookup(name string) (expr.Value, bool) {
	if v, ok := l.top[name]; ok {
		return v, true
	}
	return l.base.Lookup(name)
}

// warnGlobalSize notes a GlobalSize that the derived grid overrides.
func (s *Spec) warnGlobalSize(cfg []expr.Value) {
	if !s.hasProblem || s.Raw.KernelSpecification.GlobalSize.X == "" {
		return
	}
	j, err := s.job(cfg, false)
	if err != nil {
		return
	}
	var g [3]int64
	for d := range 3 {
		if s.global[d] == nil {
			return
		}
		v, err := s.evalInt(cfg, "GlobalSize."+dimNames[d], s.global[d])
		if err != nil {
			return
		}
		g[d] = v
		if s.GlobalSizeType == "OpenCL" {
			div := int64(j.Block[d])
			if len(s.gridDiv[d]) > 0 {
				div = 1
				for _, b := range s.gridDiv[d] {
					x, err := s.evalInt(cfg, "GridDiv", b)
					if err != nil || x <= 0 {
						return
					}
					div *= x
				}
			}
			g[d] = (v + div - 1) / div
		}
	}
	if g == [3]int64{int64(j.Grid[0]), int64(j.Grid[1]), int64(j.Grid[2])} {
		return
	}
	s.Warnings = append(s.Warnings, fmt.Sprintf(
		"%s: KernelSpecification.GlobalSize is not used: with ProblemSize the grid is ceil(ProblemSize / GridDiv), as Kernel Tuner launches it (%d×%d×%d thread blocks for the first configuration, where GlobalSize with GlobalSizeType %s would give %d×%d×%d)",
		s.Path, j.Grid[0], j.Grid[1], j.Grid[2], s.GlobalSizeType, g[0], g[1], g[2]))
}

// GeometryLimits are a GPU's launch limits a configuration's geometry
// is checked against (device.Description's fields of the same names).
type GeometryLimits struct {
	Name                      string
	MaxThreadsPerBlock        int
	MaxBlockDims, MaxGridDims [3]int
	SharedMemoryPerBlockOptin int // bytes of dynamic shared memory a thread block may opt in to
}

// GeometryFit checks the thread block, grid and dynamic shared memory of
// the configurations of sp (all up to checkAll, an even sample beyond)
// against a GPU's launch limits, which the compiled kernel cannot change:
// a configuration over them can only fail to launch. It returns how
// many of those checked do not fit, of how many, and why the first one
// does not ("" when all fit). Errors: a spec expression's (as CheckJobs);
// ctx.Err() when ctx ends first.
func (s *Spec) GeometryFit(ctx context.Context, sp *space.Space, lim GeometryLimits) (over, checked int, first string, err error) {
	err = sampled(ctx, sp, func(cfg []expr.Value) error {
		j, err := s.job(cfg, false)
		if err != nil {
			return err
		}
		checked++
		if why := lim.why(j.Grid, j.Block, j.DynamicSharedBytes); why != "" {
			if over == 0 {
				first = fmt.Sprintf("configuration %s: %s", s.Key(cfg), why)
			}
			over++
		}
		return nil
	})
	if err != nil {
		return 0, 0, "", err
	}
	return over, checked, first, nil
}

// RegistersFit checks the simulated work of the configurations of sp
// (all up to checkAll, an even sample beyond) that declare it: fits says
// whether a thread block of threads threads, registers each
// (Gtune.Simulation Registers), can be resident on the GPU (its register
// file; package occupancy). It returns how many of those checked do not
// fit, of how many, and the first one that does not ("" when all fit);
// a spec without a Simulation section checks none. Errors: a spec
// expression's (as CheckJobs); ctx.Err() when ctx ends first.
func (s *Spec) RegistersFit(ctx context.Context, sp *space.Space, fits func(threads, registers int) bool) (over, checked int, first string, err error) {
	err = sampled(ctx, sp, func(cfg []expr.Value) error {
		j, err := s.job(cfg, false)
		if err != nil || j.Work == nil {
			return err
		}
		checked++
		threads := j.Block[0] * j.Block[1] * j.Block[2]
		if !fits(threads, j.Work.Registers) {
			if over == 0 {
				first = fmt.Sprintf("configuration %s: %d threads × %d registers", s.Key(cfg), threads, j.Work.Registers)
			}
			over++
		}
		return nil
	})
	if err != nil {
		return 0, 0, "", err
	}
	return over, checked, first, nil
}

// launchBounds finds __launch_bounds__(...) before a kernel's name
// and the opening bracket of its parameters.
var launchBounds = `__launch_bounds__\s*\(((?:[^()]|\([^()]*\))*)\)[^;{}()]*?\b`

// LaunchBounds gives the arguments of the kernel's __launch_bounds__
// qualifier as written in its source ("dim_m * dim_n"), "" where it has
// none or the source is not read. Under it the compiler caps each
// thread's registers so that a block of that many threads fits the
// register file, and spills what does not fit to local memory.
func (s *Spec) LaunchBounds() string {
	if s.Source == "" || s.KernelName == "" {
		return ""
	}
	re, err := regexp.Compile(launchBounds + regexp.QuoteMeta(s.KernelName) + `\s*\(`)
	if err != nil {
		return ""
	}
	m := re.FindStringSubmatch(s.Source)
	if m == nil {
		return ""
	}
	return strings.Join(strings.Fields(m[1]), " ")
}

// sampled calls check on the configurations of sp: all of them up to
// checkAll, an evenly spaced sample of checkAll beyond, looking at ctx
// every 4096. It stops at check's first error, or ctx.Err().
func sampled(ctx context.Context, sp *space.Space, check func(cfg []expr.Value) error) error {
	n := sp.Len()
	step := 1
	if n > checkAll {
		step = (n + checkAll - 1) / checkAll
	}
	for i := 0; i < n; i += step {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := check(sp.Values(i)); err != nil {
			return err
		}
	}
	return nil
}

// ReferenceFits says why the reference configuration (Gtune.Reference)
// cannot launch on a GPU of limits lim; "" when it can or there is none.
func (s *Spec) ReferenceFits(lim GeometryLimits) string {
	cfg, ok, err := s.ReferenceConfig()
	if err != nil || !ok {
		return ""
	}
	j, err := s.job(cfg, false)
	if err != nil {
		return ""
	}
	return lim.why(j.Grid, j.Block, j.DynamicSharedBytes)
}

// why says which limit a launch of grid, block and dynamic shared memory
// exceeds; "" when none (a zero limit is not checked).
func (lim GeometryLimits) why(grid, block [3]int, shared int) string {
	threads := block[0] * block[1] * block[2]
	if lim.MaxThreadsPerBlock > 0 && threads > lim.MaxThreadsPerBlock {
		return fmt.Sprintf("a thread block of %d threads (%dx%dx%d), the %s allows %d", threads, block[0], block[1], block[2], lim.Name, lim.MaxThreadsPerBlock)
	}
	axes := "xyz"
	for i := range 3 {
		if m := lim.MaxBlockDims[i]; m > 0 && block[i] > m {
			return fmt.Sprintf("a thread block of %d threads in %c, the %s allows %d", block[i], axes[i], lim.Name, m)
		}
		if m := lim.MaxGridDims[i]; m > 0 && grid[i] > m {
			return fmt.Sprintf("a grid of %d thread blocks in %c, the %s allows %d", grid[i], axes[i], lim.Name, m)
		}
	}
	if m := lim.SharedMemoryPerBlockOptin; m > 0 && shared > m {
		return fmt.Sprintf("%d bytes of dynamic shared memory per thread block, the %s allows %d", shared, lim.Name, m)
	}
	return ""
}
