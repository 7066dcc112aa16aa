package sim

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/nvml"
)

func TestControlFollowsNVMLRules(t *testing.T) {
	k20, _ := device.Lookup("k20c")
	c, err := NewControl(k20, ControlOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.State(); st.AppCoreMHz != 705 || st.AppMemMHz != 2600 || st.PowerLimitMW != 225000 {
		t.Fatalf("K20c default state %+v", st)
	}
	if err := c.SetGpuLockedClocks(640, 640); !errors.Is(err, nvml.ErrorNotSupported) {
		t.Fatalf("locked clocks on Kepler: %v", err)
	}
	if err := c.SetApplicationsClocks(2600, 700); !errors.Is(err, nvml.ErrorInvalidArgument) {
		t.Fatalf("unsupported pair: %v", err)
	}
	if err := c.SetPowerManagementLimitMW(149000); !errors.Is(err, nvml.ErrorInvalidArgument) {
		t.Fatalf("power limit below the constraints: %v", err)
	}
	if err := c.SetApplicationsClocks(2600, 614); err != nil {
		t.Fatal(err)
	}
	if f, _ := c.ClockMHz(nvml.ClockSM); f != 614 {
		t.Fatalf("SM clock %d after application clocks 614", f)
	}
	if err := c.ResetApplicationsClocks(); err != nil || c.State() != DefaultControlState(k20) {
		t.Fatalf("reset: %v %+v", err, c.State())
	}
	h100, _ := device.Lookup("h100_sxm")
	path := filepath.Join(t.TempDir(), "state.json")
	h, err := NewControl(h100, ControlOptions{StateFile: path})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.SupportedGraphicsClocksMHz(1593); len(got) != 110 || got[0] != 1980 || got[109] != 345 {
		t.Fatalf("H100 SM clocks at 1593 MHz: %d clocks", len(got))
	}
	if err := h.SetGpuLockedClocks(1500, 1400); !errors.Is(err, nvml.ErrorInvalidArgument) {
		t.Fatalf("min > max: %v", err)
	}
	if err := h.SetGpuLockedClocks(1410, 1410); err != nil {
		t.Fatal(err)
	}
	again, err := OpenControl(path)
	if err != nil {
		t.Fatal(err)
	}
	if core, _ := again.LockedClocksMHz(); core != [2]uint32{1410, 1410} {
		t.Fatalf("state file did not keep the locked clock: %v", core)
	}
	if _, err := NewControl(k20, ControlOptions{StateFile: path}); err == nil {
		t.Fatal("a K20c opened the H100's state file")
	}
}
