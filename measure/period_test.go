package measure

import (
	"math"
	"testing"
	"time"
)

// stallClock is a fake clock whose sleeps now and then take much longer,
// as a worker's polling thread does when the CPU is busy compiling.
type stallClock struct {
	t     time.Time
	n     int
	every int           // every every-th sleep stalls
	stall time.Duration // by this much
}

func (c *stallClock) Now() time.Time { return c.t }
func (c *stallClock) Sleep(d time.Duration) {
	c.n++
	if c.every > 0 && c.n%c.every == 0 {
		d += c.stall
	}
	c.t = c.t.Add(d)
}

// gridSensors is an energy counter that updates exactly every 100 ms
// with a steady power; the other sensors are absent.
type gridSensors struct {
	c     *stallClock
	start time.Time
	watts float64
}

func (s gridSensors) EnergyMJ() (uint64, error) {
	k := s.c.t.Sub(s.start) / (100 * time.Millisecond)
	return uint64(1e6 + float64(k)*s.watts*100), nil // mJ per 100 ms = W × 100
}
func (gridSensors) TemperatureC() (float64, error)                { return 0, ErrNoSensor }
func (gridSensors) ClocksMHz() (float64, float64, error)          { return 0, 0, ErrNoSensor }
func (gridSensors) ClockEventReasons() (uint64, error)            { return 0, ErrNoSensor }
func (gridSensors) Throttle() (ThrottleTimes, error)              { return ThrottleTimes{}, ErrNoSensor }
func (gridSensors) PowerSamples(time.Time) ([]PowerSample, error) { return nil, ErrNoSensor }
func (gridSensors) InstantPowerW() (float64, error)               { return 0, ErrNoSensor }

// steadyLoad launches 1 ms kernels with no gaps.
type steadyLoad struct {
	c     *stallClock
	start time.Time
}

func (l *steadyLoad) Start() error { l.start = l.c.t; return nil }
func (l *steadyLoad) Pump() error  { return nil }
func (l *steadyLoad) Finish() (int, time.Duration, error) {
	busy := l.c.t.Sub(l.start)
	return int(busy / time.Millisecond), busy, nil
}

// A poll delayed by 17 ms every so often makes the trials' own CPU-timed
// spans wrong by several percent; the power from the pooled median gap
// stays at the counter's 500 W.
func TestTrialPowerInsensitiveToDetectionDelays(t *testing.T) {
	for _, every := range []int{0, 97, 131, 211} {
		c := &stallClock{t: time.Unix(1000, 3e6), every: every, stall: 17 * time.Millisecond}
		s := gridSensors{c: c, start: time.Unix(1000, 0), watts: 500}
		est := &PeriodEstimate{}
		// Idle gaps before the run, as the worker's Prepare records them.
		est.Add(0.1, 0.1003, 0.0998, 0.1, 0.1001)
		for run := 0; run < 3; run++ {
			r, err := RunProtocol(c, s, &steadyLoad{c: c}, 100, Protocol{Period: 100 * time.Millisecond, Poll: time.Millisecond, periods: est})
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range r.TrialPowerW {
				if math.Abs(w-500)/500 > 0.002 {
					t.Errorf("stall every %d, run %d: trial %d at %.2f W, want 500 ± 0.2 %%", every, run, i, w)
				}
			}
			// Energy per launch: 500 W × 1 ms.
			if math.Abs(r.EnergyPerLaunchJ-0.5)/0.5 > 0.002 {
				t.Errorf("stall every %d, run %d: %.5f J per launch, want 0.5", every, run, r.EnergyPerLaunchJ)
			}
		}
		if p, n := est.Period(); n < 10 || p != 100*time.Millisecond {
			t.Errorf("stall every %d: pooled period %v from %d gaps", every, p, n)
		}
	}
}

func TestPeriodEstimateKeepsRecentGaps(t *testing.T) {
	var e PeriodEstimate
	if p, n := e.Period(); p != 0 || n != 0 {
		t.Fatal("empty estimate")
	}
	for range maxGaps {
		e.Add(0.2)
	}
	e.Add(0.1, 0.1, 0.1)
	if p, n := e.Period(); p != 200*time.Millisecond || n != maxGaps {
		t.Errorf("%v from %d gaps", p, n)
	}
}
