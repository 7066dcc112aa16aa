// Package shared finds the shared datasets beside the repository
// (../shared/datasets: recorded Kernel Tuner caches, benchmark_hub specs),
// which tests read where they are present and skip without, with one
// message.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// StampEnv names the environment variable that scripts/gotest sets to a
// digest of the datasets. Path reads it, so that Go's test cache, which
// does not track files outside the module, keys a test's result on it
// and runs the test again when the datasets appear or change.
const StampEnv = "GTUNE_SHARED_STAMP"

// Dir is the datasets folder: ../shared/datasets beside the module root
// (the folder holding go.mod, found from the working directory up); ""
// when no module root is found.
func Dir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "datasets")
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Path is the path of rel (slash-separated) in the datasets folder. A
// test that needs it is skipped where it is absent, with the message
// scripts/gotest counts: "needs the shared datasets (PATH): not beside
// the repository".
func Path(t testing.TB, rel string) string {
	t.Helper()
	_ = os.Getenv(StampEnv) // seen by the test cache: see StampEnv
	p := filepath.Join(Dir(), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("needs the shared datasets (%s): not beside the repository", p)
	}
	return p
}

// Need skips the test where any of paths (in the shared datasets) is
// absent, with Path's message; paths are used as given.
func Need(t testing.TB, paths ...string) {
	t.Helper()
	_ = os.Getenv(StampEnv) // seen by the test cache: see StampEnv
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs the shared datasets (%s): not beside the repository", p)
		}
	}
}
