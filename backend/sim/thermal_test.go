package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// thermalRuns measures the same five configurations in three runs, each
// on a fresh simulated H100 started at another temperature (40, 48 and
// 55 °C: a cold machine, then warmer ones), under thermal policy policy,
// without sensor noise so that temperature is the only difference. It
// returns each configuration's energies (runs × configurations) and the
// first run's observations of its first configuration.
func thermalRuns(t *testing.T, policy string) ([][]float64, measure.Observations) {
	t.Helper()
	var out [][]float64
	var first measure.Observations
	for _, startC := range []float64{40, 48, 55} {
		s := newSim(t, "h100_sxm", Options{Seed: 5, Noise: -1, ColdStart: &ColdStart{StartC: startC, SinkTau: 20 * time.Second}})
		var row []float64
		for i := range 5 {
			j := job(fmt.Sprint("c", i), 132*8, 256, backend.Work{Flops: float64(1+i) * 4e10, Bytes: float64(5-i) * 4e8, Registers: 32})
			j.Energy = true
			j.Trials = &measure.Protocol{MaxTrials: 3, MinTrials: 3, Warmup: true, Thermal: policy}
			r := run(t, s, j)
			if r.Energy == nil {
				t.Fatalf("%s: no energy", policy)
			}
			if first == nil {
				first = r.Observations
			}
			row = append(row, r.Energy.EnergyPerLaunchJ)
		}
		out = append(out, row)
	}
	return out, first
}

// spread is the largest (max/min − 1) over configurations of energies
// runs × configurations.
func spread(e [][]float64) float64 {
	worst := 0.0
	for c := range e[0] {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range e {
			lo, hi = math.Min(lo, row[c]), math.Max(hi, row[c])
		}
		worst = math.Max(worst, hi/lo-1)
	}
	return worst
}

// A cold-started simulated GPU's energies drift with its temperature
// (leakage), as a cold H100's did; a steady warm-up and the fitted
// leakage correction bring three runs started at 40, 48 and 55 °C
// closer, the correction to within a quarter of the drift, and the fit
// finds the simulated leakage slope (1.2 W/°C).
func TestThermalPolicies(t *testing.T) {
	none, _ := thermalRuns(t, measure.ThermalNone)
	steady, _ := thermalRuns(t, measure.ThermalSteady)
	model, obs := thermalRuns(t, measure.ThermalModel)
	sn, ss, sm := spread(none), spread(steady), spread(model)
	t.Logf("spread over runs: none %.3f %%, steady %.3f %%, model %.3f %%", 100*sn, 100*ss, 100*sm)
	if sn < 0.01 {
		t.Fatalf("without a policy the runs agree to %.3f %%: the cold start has no effect", 100*sn)
	}
	// The correction takes out nearly all of it; a steady warm-up less
	// (its slope test stops on a heat sink still settling, and the runs'
	// sinks differ: 20 s here).
	if sm > sn/4 || ss >= sn*0.75 {
		t.Fatalf("spread none %.3f %%, steady %.3f %%, model %.3f %%: model should cut it to a quarter, steady by a quarter", 100*sn, 100*ss, 100*sm)
	}
	slope, ok := obs.Get("leakage_slope")
	prior, _ := obs.Get("leakage_prior")
	raw, _ := obs.Get("energy_uncorrected")
	ref, _ := obs.Get("temperature_ref")
	if !ok || prior != 0 || math.Abs(slope-1.2) > 0.3 || ref != measure.DefaultRefTempC || raw <= 0 {
		t.Fatalf("leakage slope %v W/°C (prior %v), energy as measured %v, reference %v °C", slope, prior, raw, ref)
	}
	// Corrected to 60 °C: the leakage difference taken out of the power.
	e, _ := obs.Get("energy")
	temp, _ := obs.Get("temperature")
	w, _ := obs.Get("power") // corrected too
	if want := -slope * (temp - 60) / (w + slope*(temp-60)); temp == 60 || math.Abs(e/raw-1-want) > 1e-9 {
		t.Fatalf("at %v °C: corrected %v J, measured %v J: %v, want %v", temp, e, raw, e/raw-1, want)
	}
}
