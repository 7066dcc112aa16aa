package measure

import (
	"math"
	"sync"
)

// ThermalSettle measures from the start, after the short warm-up of
// ThermalNone, and says of each energy whether the GPU was at a thermal
// steady state when it was measured (observation thermal_steady, from
// the temperatures of every energy measurement so far on this GPU:
// HeatLog.Steady). The tuner then re-measures, once the GPU is steady,
// the configurations measured while it warmed that could still be the
// best (tuner's settle), so that the warm-up of ThermalSteady is spent
// measuring. A re-measurement asks for Protocol.Settle.
const ThermalSettle = "settle"

// HeatLog is the temperature history of one GPU's energy measurements
// (a Meter's): each reading at its place on an axis that counts the
// seconds of load the measurements ran (warm-ups, lead-ins, trials),
// so that it reads the same on a real GPU and on the simulator, whose
// clock restarts with every plan. The time between measurements (timed
// runs, compilations) is not on it: a slope over it is steeper than over
// the wall clock, which errs on the side of warming up longer.
type HeatLog struct {
	mu     sync.Mutex
	axisS  []float64
	tempC  []float64
	loaded float64 // seconds of load so far
}

// add records a reading at at seconds past the log's load so far.
func (h *HeatLog) add(at, tempC float64) {
	h.mu.Lock()
	h.axisS = append(h.axisS, h.loaded+at)
	h.tempC = append(h.tempC, tempC)
	h.mu.Unlock()
}

// advance adds a measurement's load, s, to the axis.
func (h *HeatLog) advance(s float64) {
	h.mu.Lock()
	h.loaded += s
	h.mu.Unlock()
}

// Steady says whether the GPU is at a thermal steady state after the
// load so far and extra seconds more (a warm-up in progress): the
// least-squares slope of the readings over the last window (s) of the
// axis is under slope (°C/s) in magnitude, with the readings spanning
// the whole window; or the log holds capS of load (ThermalSteady's
// SteadyMax: a GPU whose temperature still moves after that is as
// steady as it gets in a run).
func (h *HeatLog) Steady(extra, window, slope, capS float64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.loaded + extra
	if end >= capS {
		return true
	}
	n := len(h.axisS)
	if n < 2 || h.axisS[n-1]-h.axisS[0] < window {
		return false
	}
	k := n - 1
	for k > 0 && h.axisS[k-1] >= end-window {
		k--
	}
	if k > 0 {
		k-- // the reading just before the window anchors its start
	}
	return math.Abs(Slope(h.axisS[k:], h.tempC[k:])) < slope
}

// steadyNow is Steady with ThermalSteady's parameters.
func (h *HeatLog) steadyNow(extra float64) bool {
	return h.Steady(extra, SteadyWindow.Seconds(), SteadySlope, SteadyMax.Seconds())
}
