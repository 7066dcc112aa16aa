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

// openGPU opens device 0 for a GPU test, closed when the test ends; the
// test is skipped unless GTUNE_CUDA_TEST=1 (a machine with an NVIDIA
// GPU). It reads GPU state and changes none.
func openGPU(t *testing.T) (context.Context, *Backend) {
	t.Helper()
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	ctx := context.Background()
	b, err := Open(ctx, 0, Options{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return ctx, b
}
