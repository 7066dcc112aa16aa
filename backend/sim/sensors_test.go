package sim

import (
	"math"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

func quietSurface(idleW float64) *surface {
	return newSurface(idleW, 40, 37*time.Millisecond, func(int64) float64 { return 0 }, func(w float64) float64 { return 30 + w/20 })
}

// The counter window on the simulated sensor reproduces the simulated
// energy within its documented error, 2·poll/window (0.05 % for 1 s).
func TestCounterWindowOnSimulatedSensor(t *testing.T) {
	s := quietSurface(100)
	idle, err := measure.IdlePower(s.clk, s, 500*time.Millisecond, measure.DefaultPoll)
	if err != nil || math.Abs(idle.PowerW-100) > 0.01 || idle.Period != 100*time.Millisecond {
		t.Fatalf("idle %+v, %v", idle, err)
	}
	l := &simLoad{s: s, w: 400, launchS: 0.001}
	w, err := measure.CounterWindow(s.clk, s, l, time.Second, idle.PowerW, measure.DefaultPoll)
	if err != nil {
		t.Fatal(err)
	}
	want := 400 * 0.001 * float64(w.Launches) // J of the launches
	if w.Launches != 1000 || math.Abs(w.EnergyJ-want)/want > 2*measure.DefaultPoll.Seconds()/1 {
		t.Fatalf("window: %d launches, %.4f J, want %.4f J", w.Launches, w.EnergyJ, want)
	}
	if math.Abs(w.EnergyPerLaunchJ-0.4)/0.4 > 5e-4 || math.Abs(w.DynamicEnergyJ-300*w.WindowS)/(300*w.WindowS) > 1e-3 {
		t.Fatalf("per launch %.6f J, dynamic %.4f J", w.EnergyPerLaunchJ, w.DynamicEnergyJ)
	}
}

// The protocol on a steady simulated load: trials agree to the counter's
// 1 mJ step, stop early after MinTrials, and the sample buffer agrees.
func TestProtocolOnSimulatedSensor(t *testing.T) {
	s := quietSurface(100)
	l := &simLoad{s: s, w: 400, launchS: 0.002}
	r, err := measure.RunProtocol(s.clk, s, l, 100, measure.Protocol{Warmup: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.TrialEnergyJ) != 3 || !r.Energy.EarlyStopped || r.Energy.Unstable {
		t.Fatalf("trials %v stats %+v", r.TrialEnergyJ, r.Energy)
	}
	for _, e := range r.TrialEnergyJ {
		if math.Abs(e-0.8)/0.8 > 1e-3 {
			t.Fatalf("trial %.6f J, want 0.8 J", e)
		}
	}
	if math.Abs(r.MeanPowerW-400) > 0.5 || math.Abs(r.SampleEnergyJ-r.EnergyJ)/r.EnergyJ > 1e-3 {
		t.Fatalf("power %.2f W, sample buffer %.4f J vs counter %.4f J", r.MeanPowerW, r.SampleEnergyJ, r.EnergyJ)
	}
	// Warm-up ran until the temperature's slope fell under 0.25 °C/s.
	if !r.WarmupSteady || r.WarmupS < 1 || r.WarmupS > 5 {
		t.Fatalf("warm-up %.2f s steady %v", r.WarmupS, r.WarmupSteady)
	}
}

// The simulated sensors behave as the H100's: 100 ms counter, 20 ms
// samples 2.4 s deep, and the sample buffer within 1 % of the counter on
// a pulsed load.
func TestSimulatedSensorCheck(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Seed: 3})
	r, err := s.SensorCheck(measure.SensorCheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.CounterPeriodS-0.1) > 3e-4 || math.Abs(r.SampleSpacingS-0.02) > 1e-9 || r.SampleCount > 120 ||
		math.Abs(r.SampleErrorRel) > 0.01 || !r.InstantAvailable || r.PolledReadings == 0 || len(r.Advice) != 4 {
		t.Fatalf("report %+v", r)
	}
}

func TestSampleBufferDepth(t *testing.T) {
	s := quietSurface(100)
	s.clk.Sleep(3 * time.Second)
	got, _ := s.PowerSamples(time.Time{})
	if len(got) != 120 || got[119].At.Sub(got[0].At) != 2380*time.Millisecond || got[0].W != 100 {
		t.Fatalf("%d samples spanning %v", len(got), got[len(got)-1].At.Sub(got[0].At))
	}
}

func TestRunWithProtocol(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Seed: 5})
	j := job("p", 132*8, 256, backend.Work{Flops: 1e11, Bytes: 1e9, Registers: 32})
	j.Energy, j.Iterations = true, 7
	j.Trials = &measure.Protocol{MaxTrials: 5, MinTrials: 3, Target: 0.01, CVFlag: 0.02}
	r := run(t, s, j)
	e := r.Energy
	if e == nil || e.Method != "sim-energy-counter-trials" || len(e.TrialsJ) < 3 || len(e.TrialsJ) > 5 ||
		e.CILowJ > e.EnergyPerLaunchJ || e.CIHighJ < e.EnergyPerLaunchJ || e.GPUSeconds <= 0 || e.GPUSeconds > 1.5 {
		t.Fatalf("energy %+v", e)
	}
	// Determinism: the same sequence on a fresh simulated GPU gives the
	// same energy; a second measurement on the same GPU (idle power known,
	// the counter's period pooled, as on a real one) agrees within 1 %.
	r2 := run(t, s, j)
	if rel := math.Abs(r2.Energy.EnergyPerLaunchJ/e.EnergyPerLaunchJ - 1); rel > 0.01 {
		t.Fatalf("second measurement %v J vs %v J", r2.Energy.EnergyPerLaunchJ, e.EnergyPerLaunchJ)
	}
	if r3 := run(t, newSim(t, "h100_sxm", Options{Seed: 5}), j); r3.Energy.EnergyPerLaunchJ != e.EnergyPerLaunchJ {
		t.Fatalf("not deterministic: %v vs %v", r3.Energy.EnergyPerLaunchJ, e.EnergyPerLaunchJ)
	}
}
