package model

import (
	"math"
	"testing"

	"github.com/gtune/gtune/device"
)

func TestStaticGainFixedPoint(t *testing.T) {
	d, err := device.Lookup("k20c")
	if err != nil {
		t.Fatal(err)
	}
	m := K20PowerModel()
	m.StaticTempCoeff = 0.01
	a := Activity{Busy: 1, Compute: 0.2, Memory: 0.5}
	p, temp := m.BoardPower(d, 758, 2600, a)
	// The fixed point: static power at the steady temperature plus the
	// dynamic part (k = 0) equals the board power.
	m0 := m
	m0.StaticTempCoeff = 0
	p0, _ := m0.BoardPower(d, 758, 2600, a)
	t0 := m.SteadyTempC(d, d.IdlePowerW)
	static := d.IdlePowerW * (1 + 0.01*(temp-t0))
	if math.Abs(static+(p0-d.IdlePowerW)-p) > 1e-9 {
		t.Errorf("P = %.6f W, static %.6f W at %.3f °C + dynamic %.6f W = %.6f W", p, static, temp, p0-d.IdlePowerW, static+p0-d.IdlePowerW)
	}
	// 25 W · 0.01 · 26 °C / 225 W = 0.02889: gain 1/(1 − 0.02889).
	if g := m.StaticGain(d); math.Abs(g-1/(1-25*0.01*26/225.0)) > 1e-12 {
		t.Errorf("gain %v", g)
	}
}

func TestMemoryClockedTerm(t *testing.T) {
	d, err := device.Lookup("k20c")
	if err != nil {
		t.Fatal(err)
	}
	m := K20PowerModel()
	hi, _ := m.BoardPower(d, 614, 2600, Activity{})
	lo, _ := m.BoardPower(d, 614, 324, Activity{})
	// 0.257 · 200 W · (2600 − 324) / 2600 = 44.99 W.
	if want := 0.257 * 200 * (2600 - 324) / 2600.0; math.Abs(hi-lo-want) > 1e-9 {
		t.Errorf("memory clock 2600 → 324 MHz lowers idle by %.4f W, want %.4f W", hi-lo, want)
	}
	// H100: no memory-clock term (not separated from ClockedIdle).
	h, _ := device.Lookup("h100_sxm")
	dm := DefaultPowerModel()
	a, _ := dm.BoardPower(h, 1980, 2619, Activity{})
	b, _ := dm.BoardPower(h, 1980, 1593, Activity{})
	if a != b {
		t.Errorf("H100 idle %.2f W at 2619 MHz, %.2f W at 1593 MHz; want equal", a, b)
	}
}

func TestSMFill(t *testing.T) {
	for _, c := range []struct {
		blocks, perWave, sms int
		want                 float64
	}{
		{104, 104, 13, 1},                // one full wave
		{105, 104, 13, (1 + 1.0/13) / 2}, // one block in the second wave
		{6, 104, 13, 6.0 / 13},           // half the SMs idle
		{0, 104, 13, 0},
	} {
		if got := SMFill(c.blocks, c.perWave, c.sms); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SMFill(%d, %d, %d) = %v, want %v", c.blocks, c.perWave, c.sms, got, c.want)
		}
	}
}
