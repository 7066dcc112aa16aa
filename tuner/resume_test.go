package tuner

import (
	"context"
	"testing"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/objective"
)

// cancelAt cancels a run's context once it has told n results: an
// interruption (SIGINT) at a known point.
type cancelAt struct {
	n      int
	cancel context.CancelFunc
}

func (c *cancelAt) Start(int) {}
func (c *cancelAt) Step(done int, _ *Evaluation) {
	if done >= c.n {
		c.cancel()
	}
}
func (c *cancelAt) Finish() {}

// A run interrupted after 30 results, resumed, and re-run: the database's
// account of each run (store.DB.RunEvaluations, which show, report and
// export read) holds what the run told, in its order, reused results
// included, and its best is the summary's.
func TestInterruptResumeRerunStoredAsTold(t *testing.T) {
	f := newFixture(t)
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	run := func(progress Progress, ctx context.Context) *Summary {
		be := sim.New(d, sim.Options{Seed: 7, Noise: 0.01})
		defer be.Close()
		sum, err := Run(ctx, Config{Subject: FromSpec(f.spec), Space: sp, Backend: be, DB: f.db, Objective: objective.FromSpec(f.spec),
			Strategy: "random_sample", Seed: 5, CompileWorkers: 2, Progress: progress})
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		return sum
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := run(&cancelAt{n: 30, cancel: cancel}, ctx)
	if !first.Interrupted || first.Evaluated < 30 || first.Evaluated >= validConfigs+compileFailing {
		t.Fatalf("interrupted run: interrupted %v, evaluated %d", first.Interrupted, first.Evaluated)
	}
	resumed := run(nil, context.Background())
	rerun := run(nil, context.Background())
	if resumed.Reused != first.Evaluated || rerun.Evaluated != 0 || rerun.Reused != len(resumed.Evaluations) {
		t.Fatalf("resume reused %d (first evaluated %d); re-run evaluated %d, reused %d of %d",
			resumed.Reused, first.Evaluated, rerun.Evaluated, rerun.Reused, len(resumed.Evaluations))
	}
	for _, sum := range []*Summary{first, resumed, rerun} {
		stored, err := f.db.RunEvaluations(sum.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != len(sum.Evaluations) {
			t.Fatalf("run %d: %d stored, %d told", sum.RunID, len(stored), len(sum.Evaluations))
		}
		fromOthers := 0
		for i, e := range stored {
			o := sum.Evaluations[i]
			if e.Key != o.Key || string(o.Status) != e.Status || (e.RunID != sum.RunID) != o.Reused {
				t.Fatalf("run %d, result %d: stored %s %s (run %d), told %s %s (reused %v)", sum.RunID, i, e.Key, e.Status, e.RunID, o.Key, o.Status, o.Reused)
			}
			if o.Valid() && (e.Objective == nil || *e.Objective != o.Value) {
				t.Fatalf("run %d, %s: stored objective %v, told %v", sum.RunID, e.Key, e.Objective, o.Value)
			}
			if e.RunID != sum.RunID {
				fromOthers++
			}
		}
		if fromOthers != sum.Reused {
			t.Errorf("run %d: %d stored from other runs, %d reused", sum.RunID, fromOthers, sum.Reused)
		}
	}
	if rerun.Best[0].Key != resumed.Best[0].Key {
		t.Errorf("re-run's best %s, the resumed run's %s", rerun.Best[0].Key, resumed.Best[0].Key)
	}
}
