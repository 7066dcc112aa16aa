package sim

import (
	"github.com/gtune/gtune/model"
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// Plan.Settings set the clock, memory clock and power limit of one
// configuration on an otherwise unchanged simulator.
func TestPerJobSettings(t *testing.T) {
	s := newSim(t, "k20c", Options{Noise: -1, AllowSettings: true})
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
	h := newSim(t, "h100_sxm", Options{Noise: -1, AllowSettings: true})
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

// A power limit slows the kernel it caps, and never makes it cheaper than
// the clock it runs at. Compute-bound on the H100 under 300 W: the SM
// clock steps down until the power fits, the time follows the clock, and
// the board draws no more than the limit. Memory-bound (vector_add's
// traffic) under 200 W: even the lowest SM clock draws more (DRAM traffic
// does not slow with the SM clock), so the kernel runs there, over the
// limit, and draws what it draws locked at that clock, not the limit:
// the same time, power and energy, flagged in its reason and its clock
// event reasons.
func TestPowerCapSlowsOrOverruns(t *testing.T) {
	h := newSim(t, "h100_sxm", Options{Noise: -1, AllowSettings: true})
	d := h.Description()
	lowest := model.SupportedCoreClocks(&d, d.MemoryClockMHz)
	low := lowest[len(lowest)-1]
	fp32 := func(st *backend.Settings) *tjob {
		j := job("fp32", 132*8*4, 256, backend.Work{Flops: 1e13, Registers: 32})
		j.Settings, j.Energy = st, true
		return j
	}
	free, capped := predict(t, h, fp32(nil)), predict(t, h, fp32(&backend.Settings{PowerLimitW: 300}))
	if !capped.PowerCapped || capped.OverLimit || capped.PowerW > 300 || capped.SMClockMHz >= free.SMClockMHz {
		t.Fatalf("compute-bound under 300 W: %+v (free: %d MHz, %.0f W)", capped, free.SMClockMHz, free.PowerW)
	}
	if r, want := capped.KernelMs/free.KernelMs, float64(free.SMClockMHz)/float64(capped.SMClockMHz); math.Abs(r-want) > 1e-9 {
		t.Errorf("compute-bound time under the cap ×%.4f, want the clock ratio ×%.4f", r, want)
	}
	r := run(t, h, fp32(&backend.Settings{PowerLimitW: 300}))
	if r.Energy.MeanPowerW > 300 || r.Energy.ClockEventReasons&reasonSwPowerCap == 0 || r.Reason != "" {
		t.Errorf("compute-bound run under 300 W: %.1f W, reasons %#x, %q", r.Energy.MeanPowerW, r.Energy.ClockEventReasons, r.Reason)
	}

	vadd := func(st *backend.Settings) *tjob {
		j := job("vadd", 1<<16, 256, backend.Work{Flops: 1 << 26, Bytes: 3 << 30, Registers: 12})
		j.Settings, j.Energy = st, true
		return j
	}
	full := predict(t, h, vadd(nil))
	under := predict(t, h, vadd(&backend.Settings{PowerLimitW: 200}))
	locked := predict(t, h, vadd(&backend.Settings{CoreClockMHz: low}))
	if !under.PowerCapped || !under.OverLimit || under.SMClockMHz != low || under.PowerW <= 200 {
		t.Fatalf("memory-bound under 200 W: %+v", under)
	}
	if under.PowerW != locked.PowerW || under.KernelMs != locked.KernelMs || math.Abs(under.KernelMs/full.KernelMs-1) > 0.01 {
		t.Errorf("memory-bound under 200 W: %.1f W, %.4f ms; locked at %d MHz: %.1f W, %.4f ms; free %.4f ms", under.PowerW, under.KernelMs, low, locked.PowerW, locked.KernelMs, full.KernelMs)
	}
	ru, rl := run(t, h, vadd(&backend.Settings{PowerLimitW: 200})), run(t, h, vadd(&backend.Settings{CoreClockMHz: low}))
	if ru.Energy.MeanPowerW <= 200 || math.Abs(ru.Energy.EnergyPerLaunchJ/rl.Energy.EnergyPerLaunchJ-1) > 1e-9 {
		t.Errorf("memory-bound run under 200 W: %.1f W, %.5g J per launch; locked at %d MHz: %.5g J", ru.Energy.MeanPowerW, ru.Energy.EnergyPerLaunchJ, low, rl.Energy.EnergyPerLaunchJ)
	}
	if ru.Energy.ClockEventReasons&reasonSwPowerCap == 0 || !strings.Contains(ru.Reason, "the power limit of 200 W was not met even at the lowest SM clock, 345 MHz") {
		t.Errorf("memory-bound run under 200 W not flagged: reasons %#x, %q", ru.Energy.ClockEventReasons, ru.Reason)
	}
}

// Without Options.AllowSettings a plan with GPU settings fails as on the
// CUDA backend opened without permission (backend.SettingsRefused); one
// without settings runs.
func TestSettingsNeedPermission(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Noise: -1})
	j := job("p", 132*8, 256, backend.Work{Flops: 1e9, Registers: 32})
	j.Settings = &backend.Settings{CoreClockMHz: 1410}
	if r := run(t, s, j); r.Status != backend.StatusLaunchFailed || r.Reason != backend.SettingsRefused {
		t.Errorf("settings without permission: %s %q", r.Status, r.Reason)
	}
	j.Settings = nil
	if r := run(t, s, j); r.Status != backend.StatusValid {
		t.Errorf("no settings: %s %q", r.Status, r.Reason)
	}
}
