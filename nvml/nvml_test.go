package nvml

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestCandidatesOrder(t *testing.T) {
	t.Setenv(EnvLibrary, "")
	want := []string{
		"libnvidia-ml.so.1",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
		"/usr/lib64/libnvidia-ml.so.1",
		"/usr/local/nvidia/lib64/libnvidia-ml.so.1",
		"/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
		"/usr/lib/wsl/lib/libnvidia-ml.so.1",
	}
	got := candidates()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("candidates = %q, want %q", got, want)
	}
	for _, c := range got {
		if strings.Contains(c, "stubs") {
			t.Fatalf("stubs directory must never be searched: %s", c)
		}
	}
	t.Setenv(EnvLibrary, "/opt/x/libnvidia-ml.so.1")
	if got := candidates(); len(got) != 1 || got[0] != "/opt/x/libnvidia-ml.so.1" {
		t.Fatalf("override: candidates = %q", got)
	}
}

func TestMissingLibraryMessage(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/dir/libnvidia-ml.so.1")
	_, err := load(candidates())
	want := "nvml: libnvidia-ml.so.1 not found (searched /nonexistent/dir/libnvidia-ml.so.1; set GTUNE_LIBNVML)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// A real shared library without NVML's symbols must be refused by name
// of the first required symbol, not crash later.
func TestMissingSymbolMessage(t *testing.T) {
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
	t.Setenv(EnvLibrary, libc)
	_, err := load(candidates())
	want := "nvml: symbol nvmlInit_v2 not found in " + libc + " (driver too old or not an NVML library)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestErrorCodes(t *testing.T) {
	var err error = &Error{Func: "nvmlDeviceGetPowerUsage", Code: ErrorNoPermission, Msg: "Insufficient Permissions"}
	if got, want := err.Error(), "nvml: nvmlDeviceGetPowerUsage: Insufficient Permissions (NVML_ERROR_NO_PERMISSION)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrorNoPermission) {
		t.Fatal("errors.Is(err, ErrorNoPermission) = false")
	}
	if errors.Is(err, ErrorNotSupported) {
		t.Fatal("errors.Is(err, ErrorNotSupported) = true")
	}
	var ne *Error
	if !errors.As(err, &ne) || ne.Code != 4 {
		t.Fatalf("errors.As: %v", ne)
	}
	if got := Return(3).String(); got != "NVML_ERROR_NOT_SUPPORTED" {
		t.Fatalf("Return(3) = %s", got)
	}
	if got := Return(77).String(); got != "NVML_ERROR_77" {
		t.Fatalf("Return(77) = %s", got)
	}
}

func TestReasonNames(t *testing.T) {
	cases := map[uint64]string{
		0:             "",
		ReasonGPUIdle: "gpu_idle",
		ReasonSWPowerCap | ReasonHWThermalSlowdown: "sw_power_cap|hw_thermal_slowdown",
		0x4 | 0x10000: "sw_power_cap|0x10000",
	}
	for mask, want := range cases {
		if got := ReasonNames(mask); got != want {
			t.Errorf("ReasonNames(%#x) = %q, want %q", mask, got, want)
		}
	}
}
