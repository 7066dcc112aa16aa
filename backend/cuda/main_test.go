package cuda

import (
	"context"
	"os"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/backendtest"
)

// TestMain lets the test binary serve as the worker program, exactly as
// cmd/gtune does: Open re-executes os.Executable() with WorkerArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		WorkerMain()
	}
	os.Exit(m.Run())
}

type tjob = backendtest.Job

// runJob runs a plan of one job and gathers its observations.
func runJob(ctx context.Context, b *Backend, j *tjob, bin *backend.Binary) (*backendtest.Result, error) {
	r, err := b.Run(ctx, j.Plan(bin))
	if r == nil {
		return nil, err
	}
	return backendtest.Wrap(r), err
}
