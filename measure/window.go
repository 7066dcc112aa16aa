package measure

import (
	"errors"
	"math"
	"time"
)

// WindowLength is the length of a counter window that keeps the counter's
// alignment error under target (a fraction, e.g. 0.01), a whole number of
// update periods:
//
//	T = period · max(minPeriods, ⌈2·edge / (target · period)⌉)
//
// Why: a counter window is a difference of two readings, each taken at an
// update instant that is known only to within edge (one poll plus one
// read's latency). At most edge of energy is misattributed at each end,
// so the relative error is ≤ 2·edge/T, and T ≥ 2·edge/target. Windows are
// whole update periods because the counter holds its value in between.
// Without alignment edge is a whole period, and the same formula gives
// Kernel Tuner's multi-second windows (2·100 ms / 1 % = 20 s). minPeriods
// is 1 for windows cut from one continuous run (the protocol's trials), 2
// for a stand-alone window, whose tail after the work must be corrected.
// A non-positive period, edge or target returns minPeriods·period
// (period 0: 0).
func WindowLength(period, edge time.Duration, target float64, minPeriods int) time.Duration {
	n := max(minPeriods, 1)
	if period > 0 && edge > 0 && target > 0 {
		k := int(math.Ceil(2 * edge.Seconds() / (target * period.Seconds())))
		n = max(n, k)
	}
	return time.Duration(n) * period
}

// Window is one energy window's observations (units in the field names).
type Window struct {
	Start, End       CounterReading // counter readings that delimit the window
	WorkEnd          time.Time      // the GPU finished (stand-alone window only)
	WindowS          float64        // seconds of work
	Launches         int
	BusyS            float64 // GPU time of the launches (events), s
	EnergyJ          float64 // energy of the work, J
	EnergyPerLaunchJ float64 // J
	MeanPowerW       float64 // EnergyJ / WindowS
	IdlePowerW       float64 // subtracted for DynamicEnergyJ
	DynamicEnergyJ   float64 // EnergyJ − IdlePowerW·WindowS, J
	Extras
}

// Extras are the side readings of a window.
type Extras struct {
	SMClockMHz, MemClockMHz float64 // mean of the readings taken
	TemperatureC            float64 // at the end
	Reasons                 uint64  // OR of the clock-event reasons seen
	PowerThrottleS          float64 // power-cap throttle time inside the window, s
	ThermalThrottleS        float64 // thermal throttle time inside the window, s
	Throttled               bool    // a slowdown reason or thermal throttle time was seen
	n                       int
	th0                     ThrottleTimes
	thOK                    bool
}

// extraEvery is how often clocks and reasons are read during a window.
const extraEvery = 10 * time.Millisecond

type extrasReader struct {
	s    Sensors
	c    Clock
	next time.Time
	e    Extras
}

func startExtras(c Clock, s Sensors) *extrasReader {
	r := &extrasReader{s: s, c: c}
	if t, err := s.Throttle(); err == nil {
		r.e.th0, r.e.thOK = t, true
	}
	r.poll()
	return r
}

func (r *extrasReader) poll() {
	now := r.c.Now()
	if now.Before(r.next) {
		return
	}
	r.next = now.Add(extraEvery)
	if sm, mem, err := r.s.ClocksMHz(); err == nil {
		r.e.SMClockMHz += sm
		r.e.MemClockMHz += mem
		r.e.n++
	}
	if m, err := r.s.ClockEventReasons(); err == nil {
		r.e.Reasons |= m
	}
}

func (r *extrasReader) finish() Extras {
	e := r.e
	if e.n > 0 {
		e.SMClockMHz /= float64(e.n)
		e.MemClockMHz /= float64(e.n)
	}
	if t, err := r.s.TemperatureC(); err == nil {
		e.TemperatureC = t
	}
	if e.thOK {
		if t, err := r.s.Throttle(); err == nil {
			e.PowerThrottleS = (t.Power - e.th0.Power).Seconds()
			e.ThermalThrottleS = (t.Thermal - e.th0.Thermal).Seconds()
		}
	}
	e.Throttled = e.Reasons&SlowdownReasons != 0 || e.ThermalThrottleS > 0
	return e
}

// ErrWork wraps a failure of the Load (the kernel), as opposed to a
// sensor failure: the configuration fails, not just its energy.
type ErrWork struct{ Err error }

func (e *ErrWork) Error() string { return e.Err.Error() }
func (e *ErrWork) Unwrap() error { return e.Err }

// CounterWindow measures one stand-alone counter window (the default
// method, as Kernel Tuner's but aligned):
//
//  1. synchronise (the caller has), wait for a counter update: E0 at t0;
//  2. run the load back to back until window has elapsed, synchronise: tEnd;
//  3. wait for the counter's next update: E1 at t1;
//  4. energy = (E1 − E0) − idleW·(t1 − tEnd): the idle tail between the
//     end of the work and the update is taken out;
//     energy per launch = energy / launches.
//
// Error model: the ends are known to ε = poll + read latency, giving
// ≤ 2ε/window; the tail correction adds |P_tail − idleW|·(t1 − tEnd) with
// t1 − tEnd < one period (the GPU's power decays to idle only over tens
// of ms). Measured on an H100 (100 ms updates): −2 % ± 1 % for 1 s,
// 0 ± 1.2 % for 3 s; see WindowLength for choosing window.
// A Load failure is an *ErrWork; other errors are sensor failures.
func CounterWindow(c Clock, s Sensors, l Load, window time.Duration, idleW float64, poll time.Duration) (*Window, error) {
	if window <= 0 {
		return nil, errors.New("measure: CounterWindow: window must be positive")
	}
	r0, err := AlignedRead(c, s, poll)
	if err != nil {
		return nil, err
	}
	ex := startExtras(c, s)
	if err := l.Start(); err != nil {
		return nil, &ErrWork{err}
	}
	for {
		if err := l.Pump(); err != nil {
			l.Finish()
			return nil, &ErrWork{err}
		}
		ex.poll()
		left := window - c.Now().Sub(r0.At)
		if left <= 0 {
			break
		}
		c.Sleep(min(poll, left))
	}
	n, busy, err := l.Finish()
	if err != nil {
		return nil, &ErrWork{err}
	}
	tEnd := c.Now()
	e := ex.finish()
	vEnd, err := s.EnergyMJ()
	if err != nil {
		return nil, err
	}
	r1, err := WaitUpdate(c, s, vEnd, poll, 2*time.Second)
	if err != nil {
		return nil, err
	}
	w := &Window{Start: r0, End: r1, WorkEnd: tEnd, Launches: n, BusyS: busy.Seconds(), IdlePowerW: idleW, Extras: e}
	w.WindowS = tEnd.Sub(r0.At).Seconds()
	w.EnergyJ = float64(r1.MJ-r0.MJ)/1000 - idleW*r1.At.Sub(tEnd).Seconds()
	w.fill()
	return w, nil
}

func (w *Window) fill() {
	w.EnergyPerLaunchJ = w.EnergyJ / float64(max(w.Launches, 1))
	if w.WindowS > 0 {
		w.MeanPowerW = w.EnergyJ / w.WindowS
	}
	w.DynamicEnergyJ = w.EnergyJ - w.IdlePowerW*w.WindowS
}
