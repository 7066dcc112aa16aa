package cuda

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the worker program, exactly as
// cmd/gtune does: Open re-executes os.Executable() with WorkerArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		WorkerMain()
	}
	os.Exit(m.Run())
}
