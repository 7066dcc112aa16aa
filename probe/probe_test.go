package probe

import (
	"context"
	"math"
	"testing"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/model"
)

// The microbenchmarks on the simulated H100 recover the profile its model
// answers with (model.SpecProfile): instruction rates and shared memory
// within the cost of the launch and of whole waves, DRAM throughput at
// each occupancy as the model's latency hiding gives it, 32-way bank
// conflicts 32 times slower, the launch overhead the simulator charges.
// The power model is one under which no microbenchmark reaches the power
// limit: a capped clock would lower the rates (as it does on a GPU).
func TestProbeRecoversTheSimulatedProfile(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	cool := model.DefaultPowerModel()
	cool.Compute, cool.Memory = 0.2, 0.2
	be := sim.New(d, sim.Options{Noise: -1, Power: cool})
	defer be.Close()
	p, err := Run(context.Background(), be, Options{Power: true})
	if err != nil {
		t.Fatal(err)
	}
	want := model.SpecProfile(d)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got/want-1) > tol {
			t.Errorf("%s: %.4g, want %.4g (±%.0f %%)", what, got, want, 100*tol)
		}
	}
	if p.Source != "simulated" || p.Device != "h100_sxm" || p.SMClockMHz != 1980 {
		t.Errorf("profile of %s from %s at %v MHz", p.Device, p.Source, p.SMClockMHz)
	}
	near("FP32", p.FP32GFLOPS, want.FP32GFLOPS, 0.02)
	near("FP64", p.FP64GFLOPS, want.FP64GFLOPS, 0.02)
	near("INT32", p.Int32GOPS, want.Int32GOPS, 0.02)
	near("SFU", p.SFUGOPS, want.SFUGOPS, 0.02)
	near("shared", p.SharedGBs, want.SharedGBs, 0.02)
	near("bank conflicts", p.BankConflictSlowdown, 32, 0.02)
	near("launch overhead", p.LaunchOverheadUs, model.DefaultLaunchOverheadUs, 1e-9)
	// The power model fitted to the six readings is the simulator's:
	// each coefficient within 0.01 of the dynamic range (the rates'
	// rounding), and the held-out readings within 1 %.
	if len(p.PowerReadings) != 8 || p.PowerFit == nil {
		t.Fatalf("%d power readings, fit %v", len(p.PowerReadings), p.PowerFit)
	}
	got := p.PowerFit.Model
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"ClockedIdle", got.ClockedIdle, cool.ClockedIdle}, {"Busy", got.Busy, cool.Busy}, {"Compute", got.Compute, cool.Compute},
		{"OnChip", got.OnChip, cool.OnChip}, {"Memory", got.Memory, cool.Memory}} {
		if math.Abs(c.got-c.want) > 0.01 {
			t.Errorf("fitted %s %.4f, the simulator's %.4f", c.name, c.got, c.want)
		}
	}
	for _, r := range p.PowerReadings {
		if r.Check {
			w, _ := got.BoardPower(d, r.SMClockMHz, r.MemClockMHz, r.Activity)
			near("held-out reading's power", w, r.PowerW, 0.01)
		}
	}
	if len(p.Memory) != len(want.Memory) || len(p.Memory) != 4 {
		t.Fatalf("memory points %+v, want %+v", p.Memory, want.Memory)
	}
	for i, m := range p.Memory {
		w := want.Memory[i]
		if m.BlocksPerSM != w.BlocksPerSM || m.Occupancy != w.Occupancy {
			t.Errorf("point %d at %d blocks per SM (%.3f), want %d (%.3f)", i, m.BlocksPerSM, m.Occupancy, w.BlocksPerSM, w.Occupancy)
		}
		near("read", m.ReadGBs, w.ReadGBs, 0.02)
		near("write", m.WriteGBs, w.WriteGBs, 0.02)
		near("strided", m.StridedGBs, w.StridedGBs, 0.02)
		near("copy", m.CopyGBs, w.CopyGBs, 0.02)
		near("read 4-byte", m.Read4GBs, w.Read4GBs, 0.02)
		// The simulated GPU charges a wave of fewer resident blocks a
		// full wave's time (model.Predict), as for DRAM: shared memory in
		// proportion to the occupancy.
		near("shared", m.SharedGBs, want.SharedGBs*m.Occupancy, 0.02)
	}
}

// The power the probe reads on the simulated H100 is what the
// simulator's model (model.PowerModelFor: HopperPowerModel) gives each
// reading's clocks and activity, within 3 % at every operating point
// (the activities probe derives from its rates against the utilisations
// the simulator charged), and the profile's FP32 and DRAM powers are
// those readings'.
func TestProbePowerIsTheModels(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	be := sim.New(d, sim.Options{Noise: -1})
	defer be.Close()
	p, err := Run(context.Background(), be, Options{Power: true, Iterations: 3})
	if err != nil {
		t.Fatal(err)
	}
	pm := model.PowerModelFor(d)
	if len(p.PowerReadings) != 8 {
		t.Fatalf("%d power readings, want 8", len(p.PowerReadings))
	}
	for _, r := range p.PowerReadings {
		w, _ := pm.BoardPower(d, r.SMClockMHz, r.MemClockMHz, r.Activity)
		if math.Abs(w/r.PowerW-1) > 0.03 {
			t.Errorf("%s: probe read %.1f W; the model says %.1f W", r.Name, r.PowerW, w)
		}
		if (r.Name == "fp32" && r.PowerW != p.FP32PowerW) || (r.Name == "dram reads" && r.PowerW != p.DRAMPowerW) {
			t.Errorf("%s read %.1f W, the profile keeps FP32 %.1f W, DRAM %.1f W", r.Name, r.PowerW, p.FP32PowerW, p.DRAMPowerW)
		}
	}
}
