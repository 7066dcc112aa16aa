package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

func TestStaticGainFixedPoint(t *testing.T) {
	d, err := device.Lookup("k20c")
	if err != nil {
		t.Fatal(err)
	}
	m := K20PowerModel()
	m.StaticTempCoeff = 0.01
	a := activity{busy: 1, compute: 0.2, memory: 0.5}
	p, temp := m.boardPower(d, 758, 2600, a)
	// The fixed point: static power at the steady temperature plus the
	// dynamic part (k = 0) equals the board power.
	m0 := m
	m0.StaticTempCoeff = 0
	p0, _ := m0.boardPower(d, 758, 2600, a)
	t0 := m.steadyTempC(d, d.IdlePowerW)
	static := d.IdlePowerW * (1 + 0.01*(temp-t0))
	if math.Abs(static+(p0-d.IdlePowerW)-p) > 1e-9 {
		t.Errorf("P = %.6f W, static %.6f W at %.3f °C + dynamic %.6f W = %.6f W", p, static, temp, p0-d.IdlePowerW, static+p0-d.IdlePowerW)
	}
	// 25 W · 0.01 · 26 °C / 225 W = 0.02889: gain 1/(1 − 0.02889).
	if g := m.staticGain(d); math.Abs(g-1/(1-25*0.01*26/225.0)) > 1e-12 {
		t.Errorf("gain %v", g)
	}
}

func TestMemoryClockedTerm(t *testing.T) {
	d, err := device.Lookup("k20c")
	if err != nil {
		t.Fatal(err)
	}
	m := K20PowerModel()
	hi, _ := m.boardPower(d, 614, 2600, activity{})
	lo, _ := m.boardPower(d, 614, 324, activity{})
	// 0.257 · 200 W · (2600 − 324) / 2600 = 44.99 W.
	if want := 0.257 * 200 * (2600 - 324) / 2600.0; math.Abs(hi-lo-want) > 1e-9 {
		t.Errorf("memory clock 2600 → 324 MHz lowers idle by %.4f W, want %.4f W", hi-lo, want)
	}
	// H100: no memory-clock term (not separated from ClockedIdle).
	h, _ := device.Lookup("h100_sxm")
	dm := DefaultPowerModel()
	a, _ := dm.boardPower(h, 1980, 2619, activity{})
	b, _ := dm.boardPower(h, 1980, 1593, activity{})
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
		if got := smFill(c.blocks, c.perWave, c.sms); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("smFill(%d, %d, %d) = %v, want %v", c.blocks, c.perWave, c.sms, got, c.want)
		}
	}
}

// TestSettingsClockTable: the SM clock is resolved among the clocks
// supported at the memory clock asked for.
func TestSettingsClockTable(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	dc := *d
	dc.ClockTables = []device.ClockTable{{MemoryClockMHz: 2619, CoreClocksMHz: d.CoreClocksMHz}, {MemoryClockMHz: 1593, CoreClocksMHz: []int{1200, 1000, 800}}}
	s := New(&dc, Options{Noise: -1})
	w := &backend.Work{Bytes: 1e9, Registers: 32}
	j := &backend.Job{Key: "x", Grid: [3]int{132 * 8, 1, 1}, Block: [3]int{256, 1, 1}}
	set := &backend.Settings{MemClockMHz: 1593}
	p, err := s.predict(w, j, set)
	if err != nil || p.SMClockMHz != 1200 || p.MemClockMHz != 1593 {
		t.Errorf("memory 1593 MHz alone: %d/%d MHz, %v; want 1200/1593", p.SMClockMHz, p.MemClockMHz, err)
	}
	set.CoreClockMHz = 950
	if p, err = s.predict(w, j, set); err != nil || p.SMClockMHz != 1000 {
		t.Errorf("SM 950 at memory 1593 MHz: %d MHz, %v; want 1000", p.SMClockMHz, err)
	}
	set.CoreClockMHz = 1980
	if _, err = s.predict(w, j, set); err == nil || !strings.Contains(err.Error(), "SM clock at memory clock 1593 MHz 1980 MHz outside the supported 800–1200 MHz") {
		t.Errorf("SM 1980 at memory 1593 MHz: %v", err)
	}
}
