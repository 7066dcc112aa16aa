package conformance_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCompare runs the Python tests of compare.py (standard library only;
// synthetic caches, and the recorded A100 caches of shared/ where present,
// compared with themselves). The tests of kt_run.py need numpy and the
// fetched third-party code: scripts/conformance/selftest.sh runs them.
func TestCompare(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: compare.py's tests need it")
	}
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests", "-p", "test_compare.py", "-v")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest test_compare.py: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\nOK") {
		t.Fatalf("unexpected unittest output:\n%s", out)
	}
	t.Logf("%s", out)
}
