package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps the tests' compile cache in a folder of their own, never
// the user's.
func TestMain(m *testing.M) {
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
