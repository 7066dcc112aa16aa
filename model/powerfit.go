package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/gtune/gtune/device"
	"gonum.org/v1/gonum/mat"
)

// PowerReading is one measured operating point of a board: the SM and
// memory clocks it ran at (MHz), what the launch kept busy (Activity,
// each a fraction in [0, 1]) and the mean board power over it (W). gtune
// probe --power measures eight (Profile.PowerReadings, two of them held
// out); a Kernel Tuner energy cache gives one a clock.
type PowerReading struct {
	Name        string   `json:"name"`
	SMClockMHz  float64  `json:"sm_clock_mhz"`
	MemClockMHz float64  `json:"mem_clock_mhz"`
	Activity    Activity `json:"activity"`
	PowerW      float64  `json:"power_w"`
	// Check marks a reading held out of the fit, to check it.
	Check bool `json:"check,omitempty"`
}

// PowerFit is a power model fitted to readings (FitPowerModel) and how
// well it fits them.
type PowerFit struct {
	Model PowerModel `json:"model"`
	// Fitted names the coefficients the readings determined ("ClockedIdle",
	// "Busy", "Compute", "OnChip", "Memory", "MemoryWrite", and "voltage curve" when the
	// readings span several SM clocks); the others are the prior's.
	Fitted []string `json:"fitted"`
	// Residuals are model ÷ measured − 1, one per reading, in order (the
	// held-out ones included).
	Residuals []float64 `json:"residuals"`
	// RMS is the root mean square of the fitted readings' residuals.
	RMS float64 `json:"rms"`
}

// The voltage curve's search grid (FitPowerModel): the knee as a fraction
// of the highest clock and the voltage below it as a fraction of the top
// voltage.
const (
	kneeLo, kneeHi, kneeStep = 0.30, 0.95, 0.005
	voltLo, voltHi, voltStep = 0.50, 0.95, 0.01
	// rcond: directions of the coefficients whose singular value is
	// below rcond times the largest are not determined by the readings
	// (collinear columns: one kernel's readings at several clocks, whose
	// FP32 issue varies by 0.5 %) and keep the prior's value, instead of
	// trading coefficients against each other on the readings' noise.
	rcond = 1e-2
)

// FitPowerModel fits the board power model (PowerModel.BoardPower, the
// equations at Prediction) of device d to measured readings, starting
// from prior.
//
// The model is linear in ClockedIdle, Busy, Compute, OnChip, Memory and
// MemoryWrite once the voltage curve s(f) is fixed: each reading gives
//
//	(P − IdlePowerW)/(D·g) − MemoryClocked·m/mmax
//	  = s(f)·(ClockedIdle + Busy·u_b + Compute·u_c + OnChip·u_s) + Memory·u_m + MemoryWrite·u_w
//
// with D = TDP − IdlePowerW and g the static gain. The coefficients are
// fitted by least squares on the relative residuals (model ÷ measured −
// 1), solved by a truncated SVD around prior: directions of the
// coefficients the readings do not determine (a column of zeros: no
// reading moved shared memory; nearly collinear columns: one kernel at
// several clocks) keep the prior's values, the change least. Where that
// solution has a negative coefficient, every subset of the coefficients
// is solved with the others at zero and the best non-negative one kept
// (six unknowns: 64 subsets). MemoryClocked, the temperature terms and
// VoltageExpo stay the prior's: probing does not vary the memory clock.
// Where the readings span SM clocks more than 15 % apart (three
// distinct clocks at least), the voltage curve's knee and the voltage
// below it are searched on a grid (knee 0.30–0.95 of the highest clock in
// steps of 0.005, voltage 0.50–0.95 in steps of 0.01) for the least RMS
// residual, as K20PowerModel was fitted; else the prior's curve is kept
// (one clock cannot tell the voltage curve from the coefficients).
//
// Readings marked Check are left out of the fit; Residuals has one for
// every reading all the same.
//
// Errors: no readings to fit, a reading with non-positive power or
// clock, or readings no non-negative model fits (every subset singular).
func FitPowerModel(d *device.Description, all []PowerReading, prior PowerModel) (PowerFit, error) {
	var readings []PowerReading
	for _, r := range all {
		if !r.Check {
			readings = append(readings, r)
		}
	}
	if len(readings) == 0 {
		return PowerFit{}, errors.New("power fit: no readings")
	}
	for i, r := range all {
		if !(r.PowerW > 0) || !(r.SMClockMHz > 0) {
			return PowerFit{}, fmt.Errorf("power fit: reading %d (%q): power %.1f W at %.0f MHz; both must be positive", i, r.Name, r.PowerW, r.SMClockMHz)
		}
	}
	lo, hi := math.Inf(1), 0.0
	clocks := map[float64]bool{}
	for _, r := range readings {
		lo, hi = math.Min(lo, r.SMClockMHz), math.Max(hi, r.SMClockMHz)
		clocks[math.Round(r.SMClockMHz)] = true
	}
	curve := hi > 1.15*lo && len(clocks) >= 3
	best := PowerFit{RMS: math.Inf(1)}
	try := func(m PowerModel) {
		fit, ok := fitLinear(d, readings, m)
		if ok && fit.RMS < best.RMS {
			best = fit
		}
	}
	if !curve {
		try(prior)
	} else {
		for kn := kneeLo; kn <= kneeHi+1e-9; kn += kneeStep {
			for v := voltLo; v <= voltHi+1e-9; v += voltStep {
				m := prior
				m.KneeFraction, m.MinVoltage = math.Round(kn*1e3)/1e3, math.Round(v*1e2)/1e2
				try(m)
			}
		}
	}
	if math.IsInf(best.RMS, 1) {
		return PowerFit{}, fmt.Errorf("power fit: no non-negative model fits the %d readings", len(readings))
	}
	if curve {
		best.Fitted = append(best.Fitted, "voltage curve")
	}
	best.Residuals = best.Residuals[:0]
	for _, r := range all {
		p, _ := best.Model.BoardPower(d, r.SMClockMHz, r.MemClockMHz, r.Activity)
		best.Residuals = append(best.Residuals, p/r.PowerW-1)
	}
	return best, nil
}

// powerTerms are the linear coefficients FitPowerModel fits, in order.
var powerTerms = [...]string{"ClockedIdle", "Busy", "Compute", "OnChip", "Memory", "MemoryWrite"}

func (m *PowerModel) term(i int) *float64 {
	return [...]*float64{&m.ClockedIdle, &m.Busy, &m.Compute, &m.OnChip, &m.Memory, &m.MemoryWrite}[i]
}

// fitLinear fits the linear coefficients of m (its voltage curve fixed)
// to the readings: non-negative least squares on relative residuals with
// the directions the readings do not determine held at m's own values.
// ok is false when no subset of coefficients gives a non-negative
// solution.
func fitLinear(d *device.Description, readings []PowerReading, m PowerModel) (PowerFit, bool) {
	const k = len(powerTerms)
	dyn := d.TDPW - d.IdlePowerW
	fmax := float64(d.MaxCoreClockMHz())
	mmax := float64(maxInt(d.MemoryClocksMHz, d.MemoryClockMHz))
	g := m.StaticGain(d)
	n := len(readings)
	x := mat.NewDense(n, k, nil)
	y := make([]float64, n)
	excited := [k]bool{}
	for i, r := range readings {
		s := m.ClockScale(r.SMClockMHz, fmax)
		a := r.Activity
		row := [k]float64{s, s * a.Busy, s * a.Compute, s * a.Shared, a.Memory, a.MemoryWrite}
		// Relative residuals: divide the row by the reading's power in
		// units of the dynamic range.
		w := dyn * g / r.PowerW
		for j, v := range row {
			x.Set(i, j, v*w)
			excited[j] = excited[j] || v != 0
		}
		y[i] = ((r.PowerW-d.IdlePowerW)/(dyn*g) - m.MemoryClocked*r.MemClockMHz/mmax) * w
	}
	var prior [k]float64
	for j := range k {
		prior[j] = *m.term(j)
	}
	// Every excited coefficient free first: where that solution is
	// non-negative it is the fit (the least squares, or, where the
	// readings leave directions undetermined, the least change from the
	// prior among them; a subset would trade the undetermined
	// coefficients on the readings' noise). Else the best non-negative
	// solution over the subsets (bestSubset). A coefficient no reading
	// excites keeps the prior's value: it does not enter the residuals.
	all := 0
	for j := range k {
		if excited[j] {
			all |= 1 << j
		}
	}
	bestBeta, ok := tsvdSolve(x, y, bits(all, k), prior)
	if !ok || !nonNegative(bestBeta) {
		if bestBeta, ok = bestSubset(x, y, all, prior); !ok {
			return PowerFit{}, false
		}
	}
	out := PowerFit{Model: m}
	for j := range k {
		if excited[j] {
			*out.Model.term(j) = bestBeta[j]
			out.Fitted = append(out.Fitted, powerTerms[j])
		}
	}
	var sq float64
	for _, r := range readings {
		p, _ := out.Model.BoardPower(d, r.SMClockMHz, r.MemClockMHz, r.Activity)
		res := p/r.PowerW - 1
		out.Residuals = append(out.Residuals, res)
		sq += res * res
	}
	out.RMS = math.Sqrt(sq / float64(n))
	return out, true
}

// bestSubset is the best non-negative solution with the coefficients of
// a subset of all (a bit mask) free and the others of all held at zero:
// the least residual, and of subsets fitting equally well the one
// changing the prior least (a vanishing distance from it, which a
// coefficient held at zero pays too). ok is false when none is
// non-negative.
func bestSubset(x *mat.Dense, y []float64, all int, prior [len(powerTerms)]float64) (best [len(powerTerms)]float64, ok bool) {
	const k = len(powerTerms)
	bestObj := math.Inf(1)
	for mask := all; ; mask = (mask - 1) & all {
		if beta, solved := tsvdSolve(x, y, bits(mask, k), prior); solved && nonNegative(beta) {
			var obj float64
			for i := range y {
				r := -y[i]
				for _, j := range bits(all, k) {
					r += x.At(i, j) * beta[j]
				}
				obj += r * r
			}
			for _, j := range bits(all, k) {
				obj += 1e-9 * (beta[j] - prior[j]) * (beta[j] - prior[j])
			}
			if obj < bestObj {
				bestObj, best, ok = obj, beta, true
			}
		}
		if mask == 0 {
			return best, ok
		}
	}
}

// bits lists the set bits of mask below k.
func bits(mask, k int) []int {
	var out []int
	for j := range k {
		if mask&(1<<j) != 0 {
			out = append(out, j)
		}
	}
	return out
}

func nonNegative(beta [len(powerTerms)]float64) bool {
	for _, b := range beta {
		if b < 0 {
			return false
		}
	}
	return true
}

// tsvdSolve solves min ‖X_F β_F − y‖² over the columns F (the others
// zero) for the change from prior, by a truncated singular value
// decomposition: directions with a singular value under rcond times the
// largest are left at the prior (the minimum-norm change). ok is false
// when the decomposition fails.
func tsvdSolve(x *mat.Dense, y []float64, free []int, prior [len(powerTerms)]float64) (beta [len(powerTerms)]float64, ok bool) {
	if len(free) == 0 {
		return beta, true
	}
	n, f := len(y), len(free)
	a := mat.NewDense(n, f, nil)
	r := mat.NewVecDense(n, nil)
	for i := range n {
		v := y[i]
		for p, j := range free {
			a.Set(i, p, x.At(i, j))
			v -= x.At(i, j) * prior[j]
		}
		r.SetVec(i, v)
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return beta, false
	}
	sv := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	delta := make([]float64, f)
	for c, s := range sv {
		if s <= rcond*sv[0] || s == 0 {
			continue
		}
		var proj float64
		for i := range n {
			proj += u.At(i, c) * r.AtVec(i)
		}
		for p := range f {
			delta[p] += v.At(p, c) * proj / s
		}
	}
	for p, j := range free {
		beta[j] = prior[j] + delta[p]
	}
	return beta, true
}
