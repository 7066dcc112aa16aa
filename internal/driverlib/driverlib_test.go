package driverlib

import (
	"testing"
)

// The override alone where it is set, else the loader and then each
// directory; a library nowhere is said with every place searched.
func TestCandidatesAndOpen(t *testing.T) {
	t.Setenv("GTUNE_TEST_LIB", "")
	c := Candidates("GTUNE_TEST_LIB", "libx.so.1")
	if len(c) != 1+len(Dirs) || c[0] != "libx.so.1" || c[1] != "/usr/lib/x86_64-linux-gnu/libx.so.1" {
		t.Errorf("candidates %q", c)
	}
	t.Setenv("GTUNE_TEST_LIB", "/opt/libx.so.1")
	if c := Candidates("GTUNE_TEST_LIB", "libx.so.1"); len(c) != 1 || c[0] != "/opt/libx.so.1" {
		t.Errorf("with the override: %q", c)
	}
	_, _, err := Open("x", "libx.so.1", "GTUNE_TEST_LIB", []string{"/nonexistent/libx.so.1"})
	if err == nil || err.Error() != "x: libx.so.1 not found (searched /nonexistent/libx.so.1; set GTUNE_TEST_LIB)" {
		t.Errorf("%v", err)
	}
	if d := Describe([]string{"libx.so.1", "/a/libx.so.1"}); d != "libx.so.1 through the dynamic loader, /a/libx.so.1" {
		t.Errorf("%q", d)
	}
}
