package sim

import (
	"github.com/gtune/gtune/model"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/backendtest"
)

type (
	tjob    = backendtest.Job
	tresult = backendtest.Result
)

// run compiles and runs one job, failing the test on backend errors.
func run(t *testing.T, s *Sim, j *tjob) *tresult {
	t.Helper()
	b, err := s.Compile(ctx, j.Job)
	if err != nil {
		t.Fatalf("Compile(%s): %v", j.Key, err)
	}
	r, err := s.Run(ctx, j.Plan(b))
	if err != nil {
		t.Fatalf("Run(%s): %v", j.Key, err)
	}
	return backendtest.Wrap(r)
}

func predict(t *testing.T, s *Sim, j *tjob) model.Prediction {
	t.Helper()
	b, err := s.Compile(ctx, j.Job)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Predict(j.Job, b, j.Settings)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func job(key string, grid, block int, w backend.Work) *tjob {
	return &tjob{Job: &backend.Job{Key: key, Grid: [3]int{grid, 1, 1}, Block: [3]int{block, 1, 1}, Work: &w}, Iterations: 7}
}
