package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	// A test that runs this binary as a child (a crash test killing it)
	// hands it its own folder, which the parent removes: a child that
	// made one of its own would leave it behind when killed.
	if strings.HasPrefix(filepath.Base(os.Getenv("GTUNE_COMPILE_CACHE")), testCachePrefix) {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", testCachePrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("GTUNE_COMPILE_CACHE", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testCachePrefix names the tests' compile-cache folders.
const testCachePrefix = "gtune-test-kernels-"
