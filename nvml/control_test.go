package nvml

import (
	"errors"
	"os"
	"testing"

	"github.com/ebitengine/purego"
)

// Bound against a library without NVML's control functions (libc), every
// setter answers NVML_ERROR_FUNCTION_NOT_FOUND by name instead of
// crashing, and Missing lists all of them.
func TestControlSymbolsAreChecked(t *testing.T) {
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
			break
		}
	}
	if libc == "" {
		t.Skip("no libc.so.6 at a known path")
	}
	h, err := purego.Dlopen(libc, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	l := &Lib{path: libc, handle: h, missing: map[string]bool{}}
	c := Device{lib: l, h: 1}.Control()
	if got := len(c.Missing()); got != 10 {
		t.Fatalf("Missing() = %v, want all 10 control functions", c.Missing())
	}
	for name, err := range map[string]error{
		fnSetGpuLocked:   c.SetGpuLockedClocks(1410, 1410),
		fnResetGpuLocked: c.ResetGpuLockedClocks(),
		fnSetMemLocked:   c.SetMemoryLockedClocks(1593, 1593),
		fnResetMemLocked: c.ResetMemoryLockedClocks(),
		fnSetAppClocks:   c.SetApplicationsClocks(2619, 1410),
		fnResetAppClocks: c.ResetApplicationsClocks(),
		fnSetPowerLimit:  c.SetPowerManagementLimitMW(300000),
	} {
		var e *Error
		if !errors.As(err, &e) || e.Func != name || !errors.Is(err, ErrorFunctionNotFound) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := c.PowerManagementLimitMW(); !errors.Is(err, ErrorFunctionNotFound) {
		t.Errorf("PowerManagementLimitMW: %v", err)
	}
	if c2 := (Device{lib: l, h: 2}).Control(); c2.c != c.c {
		t.Error("control symbols bound twice for one library")
	}
}
