package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/backend/remote"
)

// TestMain keeps the tests' compile cache in a folder of their own, never
// the user's, and lets the test binary serve as a compile worker, as
// gtune does (compileproc starts os.Executable()), and as a remote GPU
// worker (tune --slurm starts os.Executable() under srun).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == compileproc.WorkerArg {
		compileproc.WorkerMain()
	}
	if len(os.Args) > 1 && os.Args[1] == remote.WorkerArg {
		os.Exit(remoteWorkerMain(os.Args[2:]))
	}
	dir, err := os.MkdirTemp("", "gtune-test-kernels-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("GTUNE_COMPILE_CACHE", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
