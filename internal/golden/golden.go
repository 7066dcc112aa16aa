// Package golden compares a test's output with a golden file, or
// rewrites the file: the tests of the packages whose printed output is
// pinned (report, cmd/gtune) share it.
package golden

import (
	"bytes"
	"os"
	"testing"
)

// Check compares got with the file at path; with update it rewrites the
// file instead. A missing file fails the test with how to create it
// (howToUpdate, the go test command with -update).
func Check(t testing.TB, path string, got []byte, update bool, howToUpdate string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s writes it)", err, howToUpdate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
