package measure

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Thermal policies (Protocol.Thermal): how energies measured at different
// GPU temperatures are made comparable. A GPU's leakage power grows with
// its die temperature; on an H100 started cold the energy of one
// configuration rose about 0.24–0.3 % per °C while the GPU warmed from
// 44–54 °C to 52–62 °C over a run (BENCHMARKS.md "Energy from a cold
// start"), which was most of the run-to-run spread.
const (
	// ThermalNone keeps the short warm-up of the first plan
	// (WarmupSlope, WarmupWindow, WarmupMax) and reports energy as
	// measured.
	ThermalNone = "none"
	// ThermalSteady warms the GPU up at the first plan until it is at a
	// thermal steady state: the least-squares slope of its temperature
	// over the last SteadyWindow under SteadySlope, or SteadyMax.
	ThermalSteady = "steady"
	// ThermalModel fits the leakage slope (W per °C) on the first plan's
	// warm-up and reports each energy corrected to RefTempC
	// (ThermalFit.Correct); the measured value stays in
	// energy_uncorrected.
	ThermalModel = "model"
	// ThermalBoth is a steady warm-up and the correction.
	ThermalBoth = "steady+model"
)

// ThermalPolicies lists the policies in the order the help gives them.
var ThermalPolicies = []string{ThermalNone, ThermalSteady, ThermalModel, ThermalBoth, ThermalSettle}

// Steady-state warm-up (ThermalSteady). The window is long because NVML
// reports whole °C: over 15 s a slope of 0.03 °C/s is under half a degree.
const (
	SteadySlope  = 0.03 // °C/s
	SteadyWindow = 15 * time.Second
	SteadyMax    = 90 * time.Second
)

// DefaultRefTempC is the die temperature energies are corrected to under
// ThermalModel, °C: within the range of a tuning H100 (52–62 °C), so the
// correction stays an interpolation there.
const DefaultRefTempC = 60

// PriorLeakage is the leakage slope used where the warm-up spanned too
// few degrees to fit one: this fraction of the load's power per °C (the
// H100's measured 0.24 %/°C of energy, BENCHMARKS.md "Trustworthy
// energy"), stated in the fit as Prior.
const PriorLeakage = 0.0024

// minFitRangeC is the narrowest temperature range a fit is made over:
// with whole-degree readings, a narrower one has a slope of rounding.
const minFitRangeC = 3

// CheckThermal returns an error naming the policy when it is not one of
// ThermalPolicies ("" is ThermalNone).
func CheckThermal(p string) error {
	if p == "" {
		return nil
	}
	for _, q := range ThermalPolicies {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("thermal policy %q: must be one of %s", p, strings.Join(ThermalPolicies, ", "))
}

// steady and model report what policy p asks for.
func thermalSteady(p string) bool { return p == ThermalSteady || p == ThermalBoth }
func thermalModel(p string) bool  { return p == ThermalModel || p == ThermalBoth }

// ThermalFit is the leakage model of one GPU, fitted on a run: board
// power P = a + SlopeWPerC·T over the counter periods of the first plan's
// warm-up (a constant load whose temperature rises), by least squares.
type ThermalFit struct {
	SlopeWPerC float64 // W/°C
	RefC       float64 // energies are corrected to this die temperature, °C
	N          int     // counter periods fitted
	LowC       float64 // the warm-up's temperature range, °C
	HighC      float64
	LoadW      float64 // the load's mean power, W
	// Prior is set when the range was under minFitRangeC (a GPU already
	// warm) or the fitted slope was negative: SlopeWPerC is then
	// PriorLeakage × LoadW.
	Prior bool
}

// Factor is what an energy measured at mean power powerW and die
// temperature tempC is multiplied by to give the energy at RefC: the
// leakage difference SlopeWPerC·(tempC − RefC) taken out of the power
// (1 − ΔP/P). 1 for a non-positive power.
func (f ThermalFit) Factor(powerW, tempC float64) float64 {
	if powerW <= 0 {
		return 1
	}
	return 1 - f.SlopeWPerC*(tempC-f.RefC)/powerW
}

// fitThermal fits the leakage slope on a warm-up's counter periods: the
// power of each period (counter difference over the time between the
// updates seen) against the temperature read closest to its middle. The
// first skip periods are left out (the sensor's lag and the clock's
// ramp belong to the load's start, not to its temperature).
func fitThermal(periods []thermalPeriod, refC float64, skip int) ThermalFit {
	if skip < len(periods) {
		periods = periods[skip:]
	} else {
		periods = nil
	}
	f := ThermalFit{RefC: refC, N: len(periods)}
	if len(periods) == 0 {
		f.Prior = true
		return f
	}
	ts := make([]float64, len(periods))
	ps := make([]float64, len(periods))
	f.LowC, f.HighC = math.Inf(1), math.Inf(-1)
	for i, p := range periods {
		ts[i], ps[i] = p.tempC, p.powerW
		f.LowC, f.HighC = math.Min(f.LowC, p.tempC), math.Max(f.HighC, p.tempC)
		f.LoadW += p.powerW
	}
	f.LoadW /= float64(len(periods))
	f.SlopeWPerC = Slope(ts, ps)
	if f.HighC-f.LowC < minFitRangeC || f.SlopeWPerC < 0 || len(periods) < 8 {
		f.Prior = true
		f.SlopeWPerC = PriorLeakage * f.LoadW
	}
	return f
}

// thermalPeriod is one counter period of a warm-up.
type thermalPeriod struct {
	powerW, tempC float64
}
