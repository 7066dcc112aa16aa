package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/store"
)

// Measured is one measured plan of a workload.
type Measured struct {
	RunID        int64
	EvaluationID int64
	Plan         *backend.Plan
	Problem      *backend.Problem
	Result       *backend.Result
	// Observations are the result's typed observations completed with
	// resources and run records (objective.Observations).
	Observations measure.Observations
	CompileMs    float64
}

// Measure runs the workload once as a plan on be and stores it in db as a
// run of strategy "measure" with one evaluation (typed observations and
// launches included): the problem is prepared, reference outputs
// computed where verification needs them, every launch compiled, and the
// plan measured with req. A configuration that fails (compile, launch,
// verification) is stored with its status and returned without error;
// errors are a backend that cannot go on, a workload whose configuration
// does not evaluate, or the database.
func (w *Workload) Measure(ctx context.Context, be backend.Backend, db *store.DB, req measure.Request, timeout time.Duration, version string) (m *Measured, err error) {
	prob, plan, err := w.Plan(req, timeout)
	if err != nil {
		return nil, err
	}
	dev := be.Device()
	run := &store.Run{
		SpecHash: w.Hash(), SpecPath: w.Paths(), Kernel: w.Names(), Objective: "time", Strategy: "measure",
		DeviceName: dev.Name, DeviceUUID: dev.UUID, Driver: dev.Driver, Backend: dev.Backend, GtuneVersion: version,
		Settings: map[string]any{"launches": len(w.Launches), "streams": plan.Streams(), "energy": req.Energy, "iterations": req.Iterations},
	}
	if err := db.BeginRun(run); err != nil {
		return nil, err
	}
	m = &Measured{RunID: run.ID, Plan: plan, Problem: prob}
	status := store.RunFailed
	defer func() {
		if e := db.EndRun(run.ID, status); e != nil && err == nil {
			m, err = nil, e
		}
	}()
	needRef := NeedsReference(prob)
	if needRef {
		dir, err := os.MkdirTemp("", "gtune-reference-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := ReferenceDirs(prob, dir); err != nil {
			return nil, err
		}
	}
	if err := be.Prepare(ctx, prob); err != nil {
		return nil, fmt.Errorf("preparing the kernel arguments: %w", err)
	}
	if needRef {
		if err := w.Reference(ctx, be, prob); err != nil {
			return nil, err
		}
	}
	ev := &store.Evaluation{RunID: run.ID, Key: plan.Key, Params: w.Params(), StartedAt: time.Now()}
	if err := Compile(ctx, be, plan); err != nil {
		var ce *backend.CompileError
		if !errors.As(err, &ce) {
			return nil, err
		}
		ev.Status, ev.Reason = string(backend.StatusCompileFailed), err.Error()
		m.Result = &backend.Result{Status: backend.StatusCompileFailed, Reason: err.Error()}
	} else {
		m.CompileMs = CompileMs(plan)
		res, err := be.Run(ctx, plan)
		if err != nil {
			return nil, err
		}
		m.Result = res
		ev.Status, ev.Reason = string(res.Status), res.Reason
		ev.TimesMs, ev.MaxError, ev.BenchmarkMs, ev.CompileMs = res.TimesMs, res.MaxError, res.BenchmarkMs, m.CompileMs
		for i, l := range res.Launches {
			pl := plan.Launches[i]
			ev.Launches = append(ev.Launches, store.Launch{
				Kernel: prob.Kernels[pl.Job.Kernel].KernelName, Key: pl.Job.Key, Stream: pl.Stream,
				Registers: l.Registers, SharedStaticBytes: l.SharedStaticBytes, LocalBytes: l.LocalBytes,
				MaxThreadsPerBlock: l.MaxThreadsPerBlock, TimesMs: l.TimesMs,
			})
		}
		if res.Status == backend.StatusValid {
			m.Observations = objective.Observations(res, m.CompileMs, be.Device().Backend)
			ev.Typed, ev.Observations = m.Observations, m.Observations.Plan()
			if t, ok := m.Observations.Get("time"); ok {
				ev.Objective = &t
			}
		}
	}
	ev.FinishedAt = time.Now()
	if err := db.Add(ev); err != nil {
		return nil, err
	}
	m.EvaluationID = ev.ID
	status = store.RunDone
	return m, nil
}
