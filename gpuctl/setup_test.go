package gpuctl

import (
	"errors"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/spec"
)

// Preflight's refusals are input errors naming the option; a spec
// without GPU-setting parameters needs no permission on the simulator.
func TestPreflight(t *testing.T) {
	s, err := spec.LoadWith("../tuner/testdata/spec.json", spec.LoadOptions{NoSource: true})
	if err != nil {
		t.Fatal(err)
	}
	ok := Options{OnNoPerm: "stop", ClockRange: "all", PowerStep: 10}
	if err := Preflight(s, ok, true); err != nil {
		t.Fatalf("plain run: %v", err)
	}
	for _, c := range []struct {
		o         Options
		simulated bool
		want      string
	}{
		{Options{OnNoPerm: "ask", ClockRange: "all", PowerStep: 10}, true, `--on-no-permission "ask": want stop or drop`},
		{Options{OnNoPerm: "stop", ClockRange: "ridge", PowerStep: 10}, true, "--clock-range ridge narrows the nvml_gr_clock dimension, but the search space has none (use --gpu-settings g1 or g2, or declare nvml_gr_clock)"},
		{Options{OnNoPerm: "stop", ClockRange: "all", Strategy: "g4", PowerStep: 10}, true, `--gpu-settings "g4": want g1 (SM clock, memory clock, power limit), g2 (SM and memory clock) or g3 (power limit)`},
		{Options{OnNoPerm: "stop", ClockRange: "all", Strategy: "g3"}, true, "--clock-step must be ≥ 0 and --power-step > 0, got 0 MHz and 0 W"},
	} {
		err := Preflight(s, c.o, c.simulated)
		var ie *InputError
		if !errors.As(err, &ie) || err.Error() != c.want {
			t.Errorf("%+v: %v (input error %v), want %s", c.o, err, ie != nil, c.want)
		}
	}
	g3 := Options{OnNoPerm: "stop", ClockRange: "all", Strategy: "g3", PowerStep: 10}
	var ie *InputError
	// The simulated GPU asks for permission as a real one does.
	for _, simulated := range []bool{true, false} {
		if err := Preflight(s, g3, simulated); !errors.As(err, &ie) {
			t.Errorf("g3 without --allow-gpu-settings (simulated %v): %v", simulated, err)
		}
	}
	g3.Allow = true
	if err := Preflight(s, g3, true); err != nil {
		t.Errorf("g3 on the simulator with --allow-gpu-settings: %v", err)
	}
	g3.Allow = false
	g3.DryRun = true
	if err := Preflight(s, g3, false); err != nil {
		t.Errorf("g3 dry run: %v", err)
	}
}

func TestPowerLimitOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		w     float64
		ok    bool
	}{
		{"nvml_pwr_limit", 250.5, 250.5, true},
		{"nvml_pwr_limit", 300, 300, true},
		{"nvml_pwr_limit", int64(200), 200, true},
		{"nvml_pwr_limit", expr.Int(150), 150, true},
		{"nvml_pwr_limit", "high", 0, false},
		{"nvml_gr_clock", 1000, 0, false},
	} {
		if w, ok := PowerLimitOf(c.name, c.value); w != c.w || ok != c.ok {
			t.Errorf("PowerLimitOf(%s, %v) = %v, %v; want %v, %v", c.name, c.value, w, ok, c.w, c.ok)
		}
	}
}
