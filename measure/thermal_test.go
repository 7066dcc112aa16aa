package measure

import (
	"math"
	"strings"
	"testing"
)

// The leakage fit recovers a known slope from counter periods whose
// power follows the temperature, leaves out the first periods, and falls
// back to the stated prior where the range is too narrow or the slope
// negative.
func TestFitThermal(t *testing.T) {
	var ps []thermalPeriod
	ps = append(ps, thermalPeriod{powerW: 90, tempC: 40}, thermalPeriod{powerW: 700, tempC: 41}) // the load's start: skipped
	for i := range 20 {
		temp := 50 + float64(i/2)
		ps = append(ps, thermalPeriod{powerW: 500 + 1.8*(temp-50), tempC: temp})
	}
	f := fitThermal(ps, 60, 2)
	if f.Prior || f.N != 20 || math.Abs(f.SlopeWPerC-1.8) > 1e-9 || f.LowC != 50 || f.HighC != 59 || math.Abs(f.LoadW-508.1) > 1e-9 {
		t.Fatalf("fit %+v", f)
	}
	// At 55 °C and 500 W, corrected to 60 °C: 1.8·5 W more.
	if got := f.Factor(500, 55); math.Abs(got-(1+9.0/500)) > 1e-12 {
		t.Fatalf("factor %v", got)
	}
	narrow := fitThermal(ps[:8], 60, 2) // 50–52 °C
	if !narrow.Prior || math.Abs(narrow.SlopeWPerC-PriorLeakage*narrow.LoadW) > 1e-12 {
		t.Fatalf("narrow range: %+v", narrow)
	}
	var falling []thermalPeriod
	for i := range 20 {
		falling = append(falling, thermalPeriod{powerW: 500 - float64(i), tempC: 50 + float64(i)})
	}
	if f := fitThermal(falling, 60, 0); !f.Prior {
		t.Fatalf("a negative slope was kept: %+v", f)
	}
	if f := fitThermal(ps[:2], 60, 3); !f.Prior || f.N != 0 {
		t.Fatalf("nothing to fit: %+v", f)
	}
}

func TestCheckThermal(t *testing.T) {
	for _, p := range append([]string{""}, ThermalPolicies...) {
		if err := CheckThermal(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	err := CheckThermal("warm")
	if err == nil || !strings.Contains(err.Error(), `"warm"`) || !strings.Contains(err.Error(), "steady+model") {
		t.Fatalf("%v", err)
	}
}
