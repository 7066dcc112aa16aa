package tuner

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/executor"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/plausibility"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// evaluated shapes a trial's outcome (or, with out.Err a compile error
// and no trial, a failed compilation) into the configuration's
// evaluation: observations, metrics, objective; and commits it to the
// database. Errors: the database's, and an outcome's error that is not
// the configuration's (a stale binary compiled afresh and still refused,
// the context's).
func (r *run) evaluated(p *pending, out executor.Outcome) (*Evaluation, error) {
	t0 := time.Now()
	c := r.c
	key := p.plan.Key
	o := &Evaluation{Index: p.index, Key: key, Params: params(c.Space, p.cfg), slot: out.Slot}
	ev := &store.Evaluation{
		RunID: r.store.ID, SpecHash: r.sub.hash(), DeviceUUID: r.sum.Device.UUID, Key: key,
		Params: o.Params, StartedAt: p.started,
	}
	if len(c.GPUs) > 0 {
		ev.GPU, o.GPU = out.GPU, out.GPU
	}
	if ce, ok := errors.AsType[*backend.CompileError](out.Err); ok {
		o.Status, o.Reason = backend.StatusCompileFailed, ce.Log
	} else if out.Err != nil {
		return nil, out.Err
	} else {
		ev.CompileMs = p.cr.compileMs
		r.measured(o, ev, p, out.Result, p.cr.compileMs)
		for i, l := range p.plan.Launches {
			if !c.DiscardPTX && l.Binary != nil && len(l.Binary.PTX) > 0 {
				ev.PTX = append(ev.PTX, store.KernelPTX{Launch: i, Kernel: r.problem.Kernels[l.Job.Kernel].KernelName, PTX: l.Binary.PTX})
			}
		}
	}
	if len(p.outs)+len(p.prior) > 1 {
		recs, m, values := r.repeatRecords(p)
		ev.Repeats = recs
		o.Repeats = values
		if o.Metrics == nil {
			o.Metrics = map[string]float64{}
		}
		for k, v := range m {
			o.Metrics[k] = v
		}
	}
	ev.Status, ev.Reason = string(o.Status), o.Reason
	ev.Observations, ev.Metrics = o.Observations, o.Metrics
	if o.Valid() {
		v := o.Value
		ev.Objective = &v
	}
	ev.FinishedAt = time.Now()
	// Framework time is the tuner's own work on this configuration
	// (metrics, objective, bookkeeping) on the wall clock. BenchmarkMs
	// cannot stand for the backend's part: the simulated GPU and a
	// replay report modelled or recorded benchmark times that are not
	// wall time here.
	framework := ev.FinishedAt.Sub(t0)
	ev.FrameworkMs = float64(framework.Microseconds()) / 1000
	r.sum.Time.Backend += p.runWall
	r.sum.Time.Framework += framework
	if err := c.DB.Add(ev); err != nil {
		return nil, err
	}
	o.evalID = ev.ID
	return o, nil
}

// staleBinaries gives the launches of a plan whose binary came from the
// compile cache's earlier contents and that the backend could not use
// (Result.BadBinaries, or a *backend.BinaryError of Run), and why; none
// when every such binary was used or came from this run's compilations.
func staleBinaries(cr compiled, res *backend.Result, err error) (launches []int, why string) {
	var bad []int
	if be, ok := errors.AsType[*backend.BinaryError](err); ok {
		bad, why = []int{be.Launch}, be.Error()
	} else if err == nil && res != nil {
		bad, why = res.BadBinaries, res.Reason
	}
	for _, i := range bad {
		if i >= 0 && i < len(cr.cacheKeys) && cr.cacheKeys[i] != "" {
			launches = append(launches, i)
		}
	}
	return launches, why
}

// recompile compiles again the launches of plan whose binaries from the
// compile cache the backend could not use (why), discarding the cache's
// entries (binaries.recompile), and puts the new binaries in the plan. It
// returns the compile time, ms. Errors: a compilation's.
func (r *run) recompile(plan *backend.Plan, cr compiled, launches []int, why string) (float64, error) {
	var ms float64
	for _, i := range launches {
		t0 := time.Now()
		bin, err := r.bins.recompile(r.ctx, r.c.Backend, r.c.CompileCache, cr.cacheKeys[i], plan.Launches[i].Job, why)
		r.compileWall.Add(int64(time.Since(t0)))
		if err != nil {
			return ms, err
		}
		r.compiled.Add(1)
		r.compileReused.Add(-1)
		plan.Launches[i].Binary = bin
		if i < len(cr.bins) {
			cr.bins[i] = bin // shared with the pending's: fill puts it in the plan again
		}
		ms += bin.CompileMs
	}
	return ms, nil
}

// measured fills the outcome and the evaluation from a backend's result:
// typed observations, metrics, plausibility and the objective.
func (r *run) measured(o *Evaluation, ev *store.Evaluation, p *pending, res *backend.Result, compileMs float64) {
	c := r.c
	o.Status, o.Reason, o.ArgumentMismatch = res.Status, res.Reason, res.ArgumentMismatch
	ev.TimesMs, ev.MaxError, ev.BenchmarkMs = res.TimesMs, res.MaxError, res.BenchmarkMs
	for i, l := range res.Launches {
		launch := p.plan.Launches[i]
		ev.Launches = append(ev.Launches, store.Launch{
			Kernel: r.problem.Kernels[launch.Job.Kernel].KernelName, Key: launch.Job.Key, Stream: launch.Stream,
			Registers: l.Registers, SharedStaticBytes: l.SharedStaticBytes, LocalBytes: l.LocalBytes,
			MaxThreadsPerBlock: l.MaxThreadsPerBlock, TimesMs: l.TimesMs,
		})
	}
	if len(res.Launches) > 0 {
		l := res.Launches[0]
		ev.Registers, ev.SharedStaticBytes, ev.LocalBytes = l.Registers, l.SharedStaticBytes, l.LocalBytes
	}
	if res.Status != backend.StatusValid {
		return
	}
	typed := objective.Observations(res, compileMs, r.sum.Device.Backend)
	ev.Typed, o.Typed = typed, typed
	o.Observations = typed.Plan()
	o.KernelTimes = kernelTimes(typed, p.plan, r.sub.members())
	m, merr := r.sub.metrics(o.Observations, p.cfg)
	o.Metrics = m
	if merr != nil {
		// Kept as a note: the configuration ran and verified.
		o.Reason = joinReasons(o.Reason, merr.Error())
	}
	if s := r.sub.spec(); s != nil {
		if why := checkPeaks(c, s, p.plan.Launches[0].Job, o, r.workingSet); why != "" {
			flag(o, why)
		}
	}
	abovePowerLimit(r.sum.Device.PowerLimitW, p.plan.Settings, o)
	if v, ok := c.Objective.Value(o.Observations, o.Metrics); ok {
		o.Value = v
	} else {
		o.Status, o.Reason = backend.StatusRuntimeFailed, joinReasons(fmt.Sprintf("objective %q was not observed", c.Objective.Name), o.Reason)
	}
}

// kernelTimes gives each kernel's time (ms) from its launch's typed
// observation "time"; nil for a single kernel.
func kernelTimes(typed measure.Observations, plan *backend.Plan, members int) []float64 {
	if members < 2 {
		return nil
	}
	out := make([]float64, members)
	for i := range out {
		out[i] = math.NaN()
	}
	for l, launch := range plan.Launches {
		if t, ok := typed.GetLaunch("time", l); ok && launch.Job.Kernel < members {
			out[launch.Job.Kernel] = t
		}
	}
	return out
}

// storedKernelTimes gives each kernel's time of a stored evaluation of a
// workload: the mean of its launch's times, the launches stored in issue
// order.
func (r *run) storedKernelTimes(idx int, e *store.Evaluation) []float64 {
	set, lay := r.sub.workloadSet()
	if set == nil || len(e.Launches) != len(set.Members) {
		return nil
	}
	w, err := set.Workload(lay, r.c.Space.Values(idx))
	if err != nil {
		return nil
	}
	out := make([]float64, len(e.Launches))
	for k, l := range e.Launches {
		out[w.Order[k]] = measure.Summarize(l.TimesMs).Mean
	}
	return out
}

// implausibleKey marks an implausible measurement among the observations
// (1), so that the flag is in the database and survives reuse.
const implausibleKey = "implausible"

// flag marks o implausible for why.
func flag(o *Evaluation, why string) {
	o.Implausible = why
	o.Reason = joinReasons(o.Reason, "implausible: "+why)
	if o.Observations == nil {
		o.Observations = map[string]float64{}
	}
	o.Observations[implausibleKey] = 1
}

// abovePowerLimit notes a mean power above the enforced power limit (the
// job's own nvml_pwr_limit, else the GPU's as found, deviceW), with why it can
// happen, and marks it in the observations (above_power_limit = 1): the
// GPU enforces its limit on an average over a longer time than one 100 ms
// counter period, and the counter and the limiter read different sensors,
// so a short measurement of a kernel run at the limit can land a few
// percent above it. The energy stands as measured.
func abovePowerLimit(deviceW float64, set *backend.Settings, o *Evaluation) {
	limit := deviceW
	if set != nil && set.PowerLimitW > 0 {
		limit = set.PowerLimitW
	}
	p, ok := o.Observations["power"]
	if !ok || limit <= 0 || p <= limit {
		return
	}
	o.Observations["above_power_limit"] = 1
	o.Reason = joinReasons(o.Reason, fmt.Sprintf("mean power %.0f W is above the enforced power limit of %.0f W (a limiter averages over longer than these trials and reads another sensor than the energy counter, and below its lowest SM clock it cannot hold the limit); the energy is as measured", p, limit))
}

// checkPeaks compares what a valid measurement implies with the GPU's
// peaks: throughput metrics (by unit, plausibility.RateOf) and the
// Gtune.Simulation FLOP and byte counts over the measured time.
func checkPeaks(c Config, s *spec.Spec, j *backend.Job, o *Evaluation, workingSet int64) string {
	var rates []plausibility.Rate
	for _, m := range s.Metrics {
		if v, ok := o.Metrics[m.Name]; ok {
			if r, ok := plausibility.RateOf(m.Name, m.Unit, v); ok {
				rates = append(rates, r)
			}
		}
	}
	if t := o.Observations["time"]; j.Work != nil && t > 0 {
		if j.Work.Flops > 0 {
			rates = append(rates, plausibility.Rate{Kind: plausibility.FLOPs, PerS: j.Work.Flops / (t / 1e3), From: "Gtune.Simulation.Flops over the time"})
		}
		if j.Work.Bytes > 0 {
			rates = append(rates, plausibility.Rate{Kind: plausibility.Bytes, PerS: j.Work.Bytes / (t / 1e3), From: "Gtune.Simulation.Bytes over the time"})
		}
	}
	return plausibility.CheckPeaks(rates, c.Peaks, workingSet)
}
