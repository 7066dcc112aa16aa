package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/plausibility"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/store"
)

// elapsed is the run's time so far: the wall clock, or Config.Clock.
func (r *run) elapsed() time.Duration {
	if r.c.Clock != nil {
		return r.c.Clock()
	}
	return time.Since(r.started)
}

// verify reports whether the run checks outputs.
func (r *run) verify() bool {
	for _, k := range r.problem.Kernels {
		if k.Verification != nil {
			return true
		}
	}
	return false
}

// finish flags outliers of an unverified run, ranks the outcomes and
// closes the run in the database with status.
func (r *run) finish(status string, err error) (*Summary, error) {
	r.stopPool.Do(func() { close(r.work) })
	if r.warm != nil {
		r.warm.cancel()
	}
	if r.recorded != nil {
		if e := r.tell(r.recorded.flush()); e != nil && err == nil {
			err, status = e, "failed"
		}
	}
	if e := r.flushReuse(); e != nil && err == nil {
		err, status = e, "failed"
	}
	sum := r.sum
	if sum.GPUs != nil {
		for i, sh := range r.ex.Shares() {
			g := &sum.GPUs[i]
			g.Evaluated, g.Busy, g.Dropped = sh.Evaluated, sh.Busy, sh.Dropped
		}
	}
	sum.Elapsed = r.elapsed()
	sum.Compiled, sum.CompileReused = int(r.compiled.Load()), int(r.compileReused.Load())
	sum.Time.Compile = time.Duration(r.compileWall.Load())
	if r.pool != nil {
		st := r.pool.Stats().Since(r.poolAtStart)
		sum.CompilePool = &st
	}
	if !r.verify() {
		if e := flagOutliers(r.c, r.sub.outlierFactor(), sum); e != nil && err == nil {
			err = e
		}
	}
	sortBest(sum)
	paretoFront(sum)
	if e := r.c.DB.EndRun(r.store.ID, status); e != nil && err == nil {
		err = e
	}
	if r.c.Progress != nil {
		r.c.Progress.Finish()
	}
	return sum, err
}

func (r *run) interrupted() (*Summary, error) {
	r.sum.Interrupted = true
	return r.finish("interrupted", nil)
}

// flagOutliers marks the valid outcomes of an unverified run that are far
// faster than their nearest measured neighbours (plausibility.Outliers),
// in the summary and in the database.
func flagOutliers(c Config, outlierFactor float64, sum *Summary) error {
	var pts []plausibility.Point
	var valid []*Evaluation
	for _, o := range sum.Evaluations {
		t, ok := o.Observations["time"]
		if !o.Valid() || !ok || o.Implausible != "" {
			continue
		}
		cfg := c.Space.Values(o.Index)
		vals := make([]int32, len(cfg))
		for k, v := range cfg {
			vals[k] = int32(slices.IndexFunc(c.Space.Params()[k].Values, v.Equal))
		}
		pts = append(pts, plausibility.Point{ID: len(valid), Values: vals, TimeMs: t})
		valid = append(valid, o)
	}
	for id, why := range plausibility.Outliers(pts, outlierFactor) {
		o := valid[id]
		flag(o, why)
		if o.evalID != 0 {
			if err := c.DB.Annotate(o.evalID, "implausible: "+why, implausibleKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// reuse turns a stored evaluation into an outcome. A valid evaluation that
// lacks the objective (say, energy was not measured then) is not reusable.
func reuse(c Config, idx int, e *store.Evaluation) (*Evaluation, bool) {
	o := &Evaluation{Index: idx, Key: e.Key, Params: e.Params, Status: backend.Status(e.Status), Reason: e.Reason,
		Observations: e.Observations, Metrics: e.Metrics, Reused: true, storedID: e.ID, GPU: e.GPU}
	if o.Valid() {
		v, ok := c.Objective.Value(e.Observations, e.Metrics)
		if !ok {
			return nil, false
		}
		o.Value = v
	}
	return o, true
}

func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func params(sp *space.Space, cfg []expr.Value) []store.Param {
	ps := sp.Params()
	out := make([]store.Param, len(ps))
	for i, p := range ps {
		out[i] = store.Param{Name: p.Name, Value: cfg[i].GoValue()}
	}
	return out
}

// paretoFront sets Summary.Front: the valid, plausible outcomes no other
// is better than in every objective at once (objective.ParetoFront),
// when the run has several objectives; an outcome missing one of them
// is left out.
func paretoFront(sum *Summary) {
	sum.Front = nil
	if len(sum.Objectives) < 2 {
		return
	}
	var pts []objective.Point
	var cands []*Evaluation
	for _, o := range sum.Evaluations {
		if !o.Valid() || o.Implausible != "" || o.Observations[implausibleKey] == 1 {
			continue
		}
		scores := make([]float64, len(sum.Objectives))
		ok := true
		for k, ob := range sum.Objectives {
			v, has := ob.Value(o.Observations, o.Metrics)
			ok = ok && has && !math.IsNaN(v)
			scores[k] = ob.Score(v)
		}
		if ok {
			pts = append(pts, objective.Point{ID: len(cands), Scores: scores})
			cands = append(cands, o)
		}
	}
	for _, id := range objective.ParetoFront(pts) {
		sum.Front = append(sum.Front, cands[id])
	}
}

// sortBest ranks the valid, plausible outcomes; implausible ones that
// would rank before the best are listed apart (Summary.Implausible).
func sortBest(sum *Summary) {
	var valid, flagged []*Evaluation
	for _, o := range sum.Evaluations {
		switch {
		case !o.Valid():
		case o.Implausible != "" || o.Observations[implausibleKey] == 1:
			flagged = append(flagged, o)
		default:
			valid = append(valid, o)
		}
	}
	better := func(a, b *Evaluation) bool { return sum.Objective.Score(a.Value) < sum.Objective.Score(b.Value) }
	sort.SliceStable(valid, func(i, j int) bool { return better(valid[i], valid[j]) })
	sort.SliceStable(flagged, func(i, j int) bool { return better(flagged[i], flagged[j]) })
	sum.Best = valid[:min(5, len(valid))]
	sum.Implausible = nil
	for _, o := range flagged {
		if len(valid) == 0 || better(o, valid[0]) {
			if o.Implausible == "" {
				o.Implausible = o.Reason
			}
			sum.Implausible = append(sum.Implausible, o)
		}
	}
}

// RunEach runs c on each GPU of gpus, all at once, a run of its own on
// each (what gtune measure --devices does): the runs share c's database
// and compile cache. It returns each GPU's summary, in gpus' order, and
// the runs' errors joined (a run that measured nothing is one; with
// several GPUs each names its GPU).
func RunEach(ctx context.Context, c Config, gpus []backend.Backend) ([]*Summary, error) {
	sums := make([]*Summary, len(gpus))
	errs := make([]error, len(gpus))
	var wg sync.WaitGroup
	for i, g := range gpus {
		wg.Go(func() {
			ci := c
			ci.Backend = g
			sums[i], errs[i] = Run(ctx, ci)
			if errs[i] == nil && (sums[i] == nil || len(sums[i].Evaluations) == 0) {
				errs[i] = errors.New("the configuration was not measured")
			}
			if errs[i] != nil && len(gpus) > 1 {
				errs[i] = fmt.Errorf("GPU %s: %w", g.Device().UUID, errs[i])
			}
		})
	}
	wg.Wait()
	return sums, errors.Join(errs...)
}
