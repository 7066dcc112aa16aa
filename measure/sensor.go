package measure

import (
	"errors"
	"fmt"
	"time"
)

// Clock is the time source a measurement runs on: the wall clock on a real
// GPU (WallClock), a simulated clock in backend/sim. Every method in this
// package reads time only through a Clock, so the same code measures a
// real and a simulated GPU.
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// WallClock is the real clock.
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// Sleep is time.Sleep.
func (WallClock) Sleep(d time.Duration) { time.Sleep(d) }

// PowerSample is one entry of a GPU's power-sample buffer: the power (W)
// the driver recorded at a CPU timestamp.
type PowerSample struct {
	At time.Time
	W  float64
}

// ThrottleTimes are cumulative times the clocks were held down, by cause
// (nvmlDeviceGetViolationStatus), since the driver loaded. Differences of
// two readings give the throttled time inside a window.
type ThrottleTimes struct {
	Power   time.Duration // NVML_PERF_POLICY_POWER
	Thermal time.Duration // NVML_PERF_POLICY_THERMAL
}

// Sensors is what the measurement methods read. EnergyMJ is required; the
// others may return ErrNoSensor (or any error), and the methods then go
// without that reading.
type Sensors interface {
	// EnergyMJ is the cumulative energy counter, mJ
	// (nvmlDeviceGetTotalEnergyConsumption). It moves in steps, once per
	// update period.
	EnergyMJ() (uint64, error)
	// TemperatureC is the GPU temperature, °C.
	TemperatureC() (float64, error)
	// ClocksMHz are the current SM and memory clocks, MHz.
	ClocksMHz() (sm, mem float64, err error)
	// ClockEventReasons is the NVML clock-event-reason mask now.
	ClockEventReasons() (uint64, error)
	// Throttle is the cumulative throttle time by cause.
	Throttle() (ThrottleTimes, error)
	// PowerSamples returns the buffered power samples taken after since
	// (nvmlDeviceGetSamples with NVML_TOTAL_POWER_SAMPLES), oldest first.
	PowerSamples(since time.Time) ([]PowerSample, error)
	// InstantPowerW is the polled instantaneous power, W
	// (NVML_FI_DEV_POWER_INSTANT).
	InstantPowerW() (float64, error)
}

// ErrNoSensor is returned by a Sensors method the GPU or driver lacks.
var ErrNoSensor = errors.New("sensor not available")

// Load is a kernel run back to back. Start begins; Pump, called every
// poll, keeps launches queued ahead of the GPU and returns promptly;
// Finish synchronises and reports the launches issued since Start and the
// GPU time they took (first launch start to last launch end). Start and
// Finish bracket each window; a Load is reused across windows.
type Load interface {
	Start() error
	Pump() error
	Finish() (launches int, busy time.Duration, err error)
}

// Reasons that mean the hardware or thermal protection slowed the clocks
// (nvmlClocksEventReason bits: HW slowdown, SW thermal, HW thermal, HW
// power brake). A window that saw one is flagged Throttled.
const SlowdownReasons uint64 = 0x8 | 0x20 | 0x40 | 0x80

// DefaultPoll is how often the counter is read while waiting for an
// update. The instant of an update is known to within one poll plus one
// read's latency; 250 µs keeps that well under 1 % of a 100 ms period.
const DefaultPoll = 250 * time.Microsecond

// CounterReading is a counter value (mJ) and the instant it was first seen.
type CounterReading struct {
	At time.Time
	MJ uint64
}

// WaitUpdate polls the counter every poll until it differs from prev and
// returns the new reading. Errors: a sensor error, or no change within
// limit.
func WaitUpdate(c Clock, s Sensors, prev uint64, poll, limit time.Duration) (CounterReading, error) {
	deadline := c.Now().Add(limit)
	for {
		v, err := s.EnergyMJ()
		now := c.Now()
		if err != nil {
			return CounterReading{}, err
		}
		if v != prev {
			return CounterReading{At: now, MJ: v}, nil
		}
		if now.After(deadline) {
			return CounterReading{}, fmt.Errorf("energy counter did not change within %v", limit)
		}
		c.Sleep(poll)
	}
}

// AlignedRead waits for the next counter update, so the reading belongs to
// a known instant rather than anywhere within an update period.
func AlignedRead(c Clock, s Sensors, poll time.Duration) (CounterReading, error) {
	v, err := s.EnergyMJ()
	if err != nil {
		return CounterReading{}, err
	}
	return WaitUpdate(c, s, v, poll, 2*time.Second)
}

// IdleResult is the idle power and the counter's update period seen while
// measuring it.
type IdleResult struct {
	PowerW  float64       // W
	Period  time.Duration // median gap between counter updates
	Updates int
	Gaps    []float64 // each gap between consecutive updates, s (for PeriodEstimate)
}

// IdlePower measures the power with nothing running, W: the counter
// difference between two aligned readings at least d apart, divided by
// the time between them. Every update on the way is recorded, so the
// update period comes for free. Error model: the two ends are known to
// one poll plus one read's latency (ε), so the relative error is at most
// 2ε/d (0.1 % for d = 0.5 s, ε = 250 µs) plus the counter's 1 mJ step/E.
func IdlePower(c Clock, s Sensors, d, poll time.Duration) (IdleResult, error) {
	r0, err := AlignedRead(c, s, poll)
	if err != nil {
		return IdleResult{}, err
	}
	last := r0
	var gaps []float64
	for last.At.Sub(r0.At) < d {
		r, err := WaitUpdate(c, s, last.MJ, poll, 2*time.Second)
		if err != nil {
			return IdleResult{}, err
		}
		gaps = append(gaps, r.At.Sub(last.At).Seconds())
		last = r
	}
	out := IdleResult{
		PowerW:  float64(last.MJ-r0.MJ) / 1000 / last.At.Sub(r0.At).Seconds(),
		Updates: len(gaps),
		Gaps:    gaps,
	}
	out.Period = time.Duration(Summarize(gaps).Median * float64(time.Second))
	return out, nil
}
