package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// Plan.Settings set the clock, memory clock and power limit of one
// configuration on an otherwise unchanged simulator.
func TestPerJobSettings(t *testing.T) {
	s := newSim(t, "k20c", Options{Noise: -1})
	// Compute-bound at 13 SMs × 8 blocks × 4 waves; FP32 at half efficiency
	// keeps power below the 225 W limit at every clock.
	comp := func(key string, st *backend.Settings) *tjob {
		j := job(key, 13*8*4, 256, backend.Work{Flops: 1e11, Registers: 32, Efficiency: 0.5})
		j.Settings, j.Energy = st, true
		return j
	}
	fast := predict(t, s, comp("c", nil))
	slow := predict(t, s, comp("c", &backend.Settings{CoreClockMHz: 614}))
	if fast.SMClockMHz != 758 || slow.SMClockMHz != 614 || fast.PowerCapped || slow.PowerCapped {
		t.Fatalf("clocks %d and %d MHz (capped %v %v), want 758 and 614", fast.SMClockMHz, slow.SMClockMHz, fast.PowerCapped, slow.PowerCapped)
	}
	if r := slow.KernelMs / fast.KernelMs; math.Abs(r-758.0/614) > 1e-9 {
		t.Errorf("compute-bound time ratio 614/758 MHz = %v, want %v", r, 758.0/614)
	}
	if slow.PowerW >= fast.PowerW {
		t.Errorf("power at 614 MHz %v W not below 758 MHz %v W", slow.PowerW, fast.PowerW)
	}
	// The measured energy window reports the job's clock.
	r := run(t, s, comp("c", &backend.Settings{CoreClockMHz: 614}))
	if r.Status != backend.StatusValid || r.Energy.SMClockMHz != 614 || r.Energy.ClockEventReasons&reasonApplicationsClocksSetting == 0 {
		t.Errorf("run at 614 MHz: %s %+v", r.Status, r.Energy)
	}
	if s.Device().SMClockMHz != 758 {
		t.Errorf("a job's clock changed the simulator's: %d", s.Device().SMClockMHz)
	}
	// Nearest supported clock, the lower on a tie; outside the range the
	// configuration fails to launch.
	for _, c := range []struct {
		want, got int
	}{{700, 705}, {650, 640}, {653, 640}, {654, 666}, {758, 758}, {614, 614}} {
		if p := predict(t, s, comp("n", &backend.Settings{CoreClockMHz: c.want})); p.SMClockMHz != c.got {
			t.Errorf("%d MHz asked: %d, want %d", c.want, p.SMClockMHz, c.got)
		}
	}
	for _, c := range []struct {
		st   backend.Settings
		want string
	}{
		{backend.Settings{CoreClockMHz: 900}, "SM clock 900 MHz outside the supported 614–758 MHz of Tesla K20c"},
		{backend.Settings{CoreClockMHz: 300}, "SM clock 300 MHz outside"},
		{backend.Settings{MemClockMHz: 3000}, "memory clock 3000 MHz outside"},
		{backend.Settings{PowerLimitW: 100}, "power limit 100 W outside the supported 150–225 W"},
	} {
		r := run(t, s, comp("bad", &c.st))
		if r.Status != backend.StatusLaunchFailed || !strings.Contains(r.Reason, c.want) {
			t.Errorf("%+v: %s %q, want launch_failed %q", c.st, r.Status, r.Reason, c.want)
		}
	}
	// H100: the lower memory clock scales bandwidth, so a memory-bound
	// kernel takes 2619/1593 as long; a 400 W limit caps heavy FP32.
	h := newSim(t, "h100_sxm", Options{Noise: -1})
	mem := func(st *backend.Settings) *tjob {
		j := job("m", 132*8*4, 256, backend.Work{Bytes: 8 << 30, Registers: 32})
		j.Settings = st
		return j
	}
	a, b := predict(t, h, mem(nil)), predict(t, h, mem(&backend.Settings{MemClockMHz: 1593}))
	if r := b.KernelMs / a.KernelMs; math.Abs(r-2619.0/1593) > 1e-9 || b.MemClockMHz != 1593 || a.MemClockMHz != 2619 {
		t.Errorf("memory-bound at 1593 MHz: ratio %v, want %v (%d, %d MHz)", r, 2619.0/1593, a.MemClockMHz, b.MemClockMHz)
	}
	heavy := func(st *backend.Settings) *tjob {
		j := job("f", 132*8*4, 256, backend.Work{Flops: 1e13, Registers: 32})
		j.Settings = st
		return j
	}
	p := predict(t, h, heavy(&backend.Settings{PowerLimitW: 400}))
	if !p.PowerCapped || p.PowerW > 400 || p.PowerLimitW != 400 || p.SMClockMHz >= predict(t, h, heavy(nil)).SMClockMHz {
		t.Errorf("400 W limit: %+v", p)
	}
}
