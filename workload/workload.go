// Package workload composes several kernels — each a spec and one of its
// configurations — into one plan of launches that run together on one
// GPU: the unit of concurrent-kernel tuning
// (multi-kernel-autotuning-performance-energy.md, Algorithms 3 and 4) and
// of launch ordering (symbiotic-scheduling-concurrent-kernels.md). A
// workload of one kernel is the plan the tuner builds for a spec.
package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/spec"
)

// Launch is one kernel of a workload: a spec, one configuration of its
// search space (values in parameter order) and the stream it is issued
// on. Launches on one stream run in workload order; on different streams
// they may run concurrently.
type Launch struct {
	Spec   *spec.Spec
	Config []expr.Value
	Stream int
}

// Workload is kernels launched together: Launches in issue order, or in
// Order when it is set.
type Workload struct {
	Launches []Launch
	// Order is the issue order as indexes into Launches; nil: as listed.
	// The problem's kernels stay in Launches' order whatever the order
	// (Plan), so that plans of one workload in different orders share a
	// prepared problem.
	Order []int
	// Settings are GPU settings for the whole plan, on top of those the
	// launches' own parameters give (nil: none).
	Settings *backend.Settings
}

// issue is the issue order: Order, or Launches as listed.
func (w *Workload) issue() []int {
	if w.Order != nil {
		return w.Order
	}
	o := make([]int, len(w.Launches))
	for i := range o {
		o[i] = i
	}
	return o
}

// KeySeparator joins the launches' configuration keys into the plan's key.
const KeySeparator = "|"

// Key is the plan's configuration key: each launch's key (with its stream
// when the launches use several) joined by KeySeparator.
func (w *Workload) Key() string {
	keys := make([]string, len(w.Launches))
	for k, i := range w.issue() {
		l := w.Launches[i]
		keys[k] = l.Spec.Key(l.Config)
		if w.streams() > 1 {
			keys[k] += fmt.Sprintf("@s%d", l.Stream)
		}
	}
	return strings.Join(keys, KeySeparator)
}

func (w *Workload) streams() int {
	n := 1
	for _, l := range w.Launches {
		n = max(n, l.Stream+1)
	}
	return n
}

// Plan composes the workload: the problem (each launch's kernel, with
// its own arguments and verification, Kernels[i] for Launches[i]) and the
// plan of launches in issue order (Order), uncompiled (Binary is nil),
// measured with req. GPU settings come from the launches' tunable parameters
// nvml_gr_clock, nvml_mem_clock and nvml_pwr_limit: they set the one
// device state of the plan, so launches that ask for different values
// are an error. Errors: a launch's configuration that does not evaluate
// (spec.Spec.Plan), a negative stream, conflicting GPU settings.
func (w *Workload) Plan(req measure.Request, timeout time.Duration) (*backend.Problem, *backend.Plan, error) {
	if len(w.Launches) == 0 {
		return nil, nil, errors.New("workload: no launch")
	}
	if len(w.Order) != 0 && len(w.Order) != len(w.Launches) {
		return nil, nil, fmt.Errorf("workload: an order of %d launches for %d", len(w.Order), len(w.Launches))
	}
	prob := &backend.Problem{}
	plan := &backend.Plan{Key: w.Key(), Measure: req, Timeout: timeout}
	launches := make([]backend.Launch, len(w.Launches))
	for i, l := range w.Launches {
		if l.Stream < 0 {
			return nil, nil, fmt.Errorf("workload: launch %d (%s): negative stream %d", i, l.Spec.KernelName, l.Stream)
		}
		p, err := l.Spec.Problem()
		if err != nil {
			return nil, nil, err
		}
		one, err := l.Spec.Plan(l.Config)
		if err != nil {
			return nil, nil, fmt.Errorf("workload: launch %d (%s): %w", i, l.Spec.KernelName, err)
		}
		if err := mergeSettings(plan, one.Settings, i); err != nil {
			return nil, nil, err
		}
		j := one.Launches[0].Job
		j.Kernel = len(prob.Kernels)
		prob.Kernels = append(prob.Kernels, p.Kernels...)
		launches[i] = backend.Launch{Job: j, Stream: l.Stream}
	}
	if err := mergeSettings(plan, w.Settings, -1); err != nil {
		return nil, nil, err
	}
	for _, i := range w.issue() {
		plan.Launches = append(plan.Launches, launches[i])
	}
	plan.Measure.StateKey = plan.Settings.StateKey()
	return prob, plan, nil
}

func mergeSettings(plan *backend.Plan, s *backend.Settings, launch int) error {
	if s == nil {
		return nil
	}
	if plan.Settings == nil {
		c := *s
		plan.Settings = &c
		return nil
	}
	p := plan.Settings
	for _, f := range []struct {
		name     string
		have, is float64
	}{
		{backend.ParamCoreClock, float64(p.CoreClockMHz), float64(s.CoreClockMHz)},
		{backend.ParamMemClock, float64(p.MemClockMHz), float64(s.MemClockMHz)},
		{backend.ParamPowerLimit, p.PowerLimitW, s.PowerLimitW},
	} {
		if f.have != 0 && f.is != 0 && f.have != f.is {
			who := fmt.Sprintf("launch %d asks", launch)
			if launch < 0 {
				who = "the workload's settings ask"
			}
			return fmt.Errorf("workload: %s for %s %g, an earlier launch for %g: one GPU has one setting", who, f.name, f.is, f.have)
		}
	}
	if s.CoreClockMHz != 0 {
		p.CoreClockMHz = s.CoreClockMHz
	}
	if s.MemClockMHz != 0 {
		p.MemClockMHz = s.MemClockMHz
	}
	if s.PowerLimitW != 0 {
		p.PowerLimitW = s.PowerLimitW
	}
	return nil
}

// NeedsReference reports whether some kernel's outputs are checked
// against a reference configuration's (its verification has fewer
// expected contents than outputs).
func NeedsReference(p *backend.Problem) bool {
	for _, k := range p.Kernels {
		if kernelNeedsReference(k) {
			return true
		}
	}
	return false
}

func kernelNeedsReference(k backend.Kernel) bool {
	v := k.Verification
	if v == nil {
		return false
	}
	outputs := 0
	for _, a := range k.Args {
		if a.Output {
			outputs++
		}
	}
	return len(v.Expected) < outputs
}

// MarkReference makes every kernel of prob that verifies its outputs
// verify those without expected contents against the reference
// configuration's (backend.Verification.Reference). Call it before the
// backend prepares prob: the worker sets the verification up then.
func MarkReference(prob *backend.Problem) {
	for i := range prob.Kernels {
		if v := prob.Kernels[i].Verification; v != nil {
			v.Reference = true
		}
	}
}

// Reference computes the reference outputs of every kernel of prob that
// needs them: it runs the plan of each launch's reference configuration
// (spec.Spec.ReferenceConfig) once with SaveReference, on the same
// streams. be must be prepared with prob, marked (MarkReference).
// build compiles the plan (nil: Compile on be). Errors:
// a spec without a reference configuration, one that does not compile,
// or a reference plan that fails.
func (w *Workload) Reference(ctx context.Context, be backend.Backend, prob *backend.Problem, build func(context.Context, *backend.Plan) error) error {
	ref := &Workload{}
	for i, l := range w.Launches {
		cfg, ok, err := l.Spec.ReferenceConfig()
		if err != nil {
			return err
		}
		if !ok {
			if kernelNeedsReference(prob.Kernels[i]) {
				return fmt.Errorf("%s: outputs need a reference: give ReferenceArguments or Gtune.Reference.Configuration", l.Spec.Path)
			}
			// Its outputs are checked against expected contents: the
			// reference plan runs it only to keep the plan's shape.
			cfg = l.Config
		}
		ref.Launches = append(ref.Launches, Launch{Spec: l.Spec, Config: cfg, Stream: l.Stream})
	}
	_, plan, err := ref.Plan(measure.Request{Iterations: 1, SaveReference: true}, 0)
	if err != nil {
		return fmt.Errorf("reference configuration: %w", err)
	}
	if build == nil {
		build = func(ctx context.Context, plan *backend.Plan) error { return Compile(ctx, be, plan) }
	}
	if err := build(ctx, plan); err != nil {
		return fmt.Errorf("reference configuration: %w", err)
	}
	res, err := be.Run(ctx, plan)
	if err != nil {
		return fmt.Errorf("reference configuration %s: %w", plan.Key, err)
	}
	if res.Status != backend.StatusValid {
		return fmt.Errorf("reference configuration %s failed (%s): %s", plan.Key, res.Status, res.Reason)
	}
	return nil
}

// Compile compiles every launch of plan (concurrently: each is an
// independent NVRTC compilation) and sets its Binary. The error names
// the launch whose compilation failed (a *backend.CompileError inside).
func Compile(ctx context.Context, be backend.Backend, plan *backend.Plan) error {
	errs := make([]error, len(plan.Launches))
	done := make(chan int, len(plan.Launches))
	for i := range plan.Launches {
		go func() {
			l := &plan.Launches[i]
			l.Binary, errs[i] = be.Compile(ctx, l.Job)
			done <- i
		}()
	}
	for range plan.Launches {
		<-done
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("launch %d (configuration %s): %w", i, plan.Launches[i].Job.Key, err)
		}
	}
	return nil
}
