package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/model"
)

// The simulated GPU's sensors behave as measured (read-only) on an H100
// 80GB HBM3: the energy counter (whole mJ) moves once every 100 ms; the
// power-sample buffer holds one sample every 20 ms (the mean power of
// those 20 ms) for 2.4 s; the instantaneous power field is refreshed with
// the counter, every 100 ms, and holds the mean of only the last 20 ms, so
// a load pulsed at the refresh rate reads off by where its pulses fall.
// Each 20 ms of power carries the simulator's sensor noise. Everything
// runs on a simulated clock, and the energy observations of Run come from
// the same package-measure code that measures a real GPU.
const (
	counterPeriod = 100 * time.Millisecond
	sampleSpacing = 20 * time.Millisecond
	sampleDepth   = 120 // samples: 2.4 s
	// tempTau is the time constant of the simulated die temperature.
	tempTau = 1500 * time.Millisecond
)

// simEpoch is the simulated clock's origin (any fixed instant will do).
var simEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// simClock is a measure.Clock whose Sleep advances simulated time.
type simClock struct{ t time.Time }

func (c *simClock) Now() time.Time        { return c.t }
func (c *simClock) Sleep(d time.Duration) { c.t = c.t.Add(max(d, time.Microsecond)) }

type segment struct {
	from, to time.Time
	w        float64
}

// surface is a simulated NVML sensor surface (measure.Sensors).
type surface struct {
	clk    *simClock
	idleW  float64
	phase  time.Duration // counter updates at epoch + phase + k·period
	noise  func(slot int64) float64
	segs   []segment
	tempSS func(w float64) float64

	accT      time.Time
	accJ      float64
	slotJ     float64
	tempC     float64
	counterMJ uint64
	samples   []measure.PowerSample
	instantW  float64

	smMHz, memMHz float64
	reasons       uint64

	// th, when set, is the cold-started GPU's carried state: the die
	// (tempC) sits on a heat sink that warms slowly, and power has a
	// leakage term (ColdStart).
	th *thermalState
}

// newSurface starts a surface at simEpoch with the GPU idle at idleW and
// the die at tempC.
func newSurface(idleW, tempC float64, phase time.Duration, noise func(int64) float64, tempSS func(float64) float64) *surface {
	c := &simClock{t: simEpoch}
	return &surface{clk: c, idleW: idleW, phase: phase, noise: noise, tempSS: tempSS, accT: simEpoch, tempC: tempC, instantW: idleW}
}

func (s *surface) baseAt(t time.Time) float64 {
	for _, g := range s.segs {
		if !t.Before(g.from) && t.Before(g.to) {
			return g.w
		}
	}
	return s.idleW
}

// next returns the first boundary after t that is a multiple of step
// from origin.
func next(t, origin time.Time, step time.Duration) time.Time {
	k := t.Sub(origin)/step + 1
	return origin.Add(k * step)
}

// advance integrates the power up to to, recording samples, counter
// updates, the instantaneous field and the temperature on the way.
func (s *surface) advance(to time.Time) {
	for s.accT.Before(to) {
		end := to
		ns := next(s.accT, simEpoch, sampleSpacing)
		nu := next(s.accT, simEpoch.Add(s.phase), counterPeriod)
		end = minTime(end, ns, nu)
		for _, g := range s.segs {
			if g.from.After(s.accT) {
				end = minTime(end, g.from)
			}
			if g.to.After(s.accT) {
				end = minTime(end, g.to)
			}
		}
		slot := int64(s.accT.Sub(simEpoch) / sampleSpacing)
		base := s.baseAt(s.accT)
		w := base * (1 + s.noise(slot))
		dt := end.Sub(s.accT).Seconds()
		if s.th != nil {
			w += s.th.cfg.LeakageWPerC * (s.tempC - s.tempSS(base))
			s.th.step(s.tempSS, base, dt)
			s.tempC = s.th.dieC
		} else {
			s.tempC += (s.tempSS(w) - s.tempC) * (1 - math.Exp(-dt/tempTau.Seconds()))
		}
		s.accJ += w * dt
		s.slotJ += w * dt
		s.accT = end
		if end.Equal(ns) {
			s.samples = append(s.samples, measure.PowerSample{At: end, W: s.slotJ / sampleSpacing.Seconds()})
			if len(s.samples) > sampleDepth {
				s.samples = s.samples[len(s.samples)-sampleDepth:]
			}
			s.slotJ = 0
		}
		if end.Equal(nu) {
			s.counterMJ = uint64(math.Floor(s.accJ * 1000))
			if n := len(s.samples); n > 0 {
				s.instantW = s.samples[n-1].W
			}
		}
	}
	// Drop segments that ended.
	k := 0
	for _, g := range s.segs {
		if g.to.After(s.accT) {
			s.segs[k] = g
			k++
		}
	}
	s.segs = s.segs[:k]
}

func minTime(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.Before(t) {
			t = u
		}
	}
	return t
}

func (s *surface) now() { s.advance(s.clk.Now()) }

func (s *surface) EnergyMJ() (uint64, error) { s.now(); return s.counterMJ, nil }

func (s *surface) TemperatureC() (float64, error) { s.now(); return math.Floor(s.tempC), nil }

func (s *surface) ClocksMHz() (float64, float64, error) { return s.smMHz, s.memMHz, nil }

func (s *surface) ClockEventReasons() (uint64, error) { return s.reasons, nil }

func (s *surface) Throttle() (measure.ThrottleTimes, error) {
	return measure.ThrottleTimes{}, measure.ErrNoSensor
}

func (s *surface) PowerSamples(since time.Time) ([]measure.PowerSample, error) {
	s.now()
	var out []measure.PowerSample
	for _, p := range s.samples {
		if p.At.After(since) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *surface) InstantPowerW() (float64, error) { s.now(); return s.instantW, nil }

// step advances the heat sink and the die by dt seconds at board power
// w (without leakage: the temperature's target is the model's).
func (t *thermalState) step(tempSS func(float64) float64, w, dt float64) {
	amb := tempSS(0)
	rise := tempSS(w) - amb
	t.sinkC += (amb + t.cfg.SinkShare*rise - t.sinkC) * (1 - math.Exp(-dt/t.cfg.SinkTau.Seconds()))
	t.dieC += (t.sinkC + (1-t.cfg.SinkShare)*rise - t.dieC) * (1 - math.Exp(-dt/tempTau.Seconds()))
}

// simLoad runs a configuration back to back on the surface (measure.Load):
// the simulated GPU never runs dry between Start and Finish, and Finish
// completes the last launch.
type simLoad struct {
	s        *surface
	w        float64
	launchS  float64
	start    time.Time
	segIndex int
}

func (l *simLoad) Start() error {
	l.s.now()
	l.start = l.s.clk.Now()
	l.s.segs = append(l.s.segs, segment{from: l.start, to: l.start.Add(1000 * time.Hour), w: l.w})
	return nil
}

func (l *simLoad) Pump() error { return nil }

func (l *simLoad) Finish() (int, time.Duration, error) {
	el := l.s.clk.Now().Sub(l.start).Seconds()
	n := max(1, int(math.Ceil(el/l.launchS-1e-9)))
	busy := time.Duration(float64(n) * l.launchS * float64(time.Second))
	end := l.start.Add(busy)
	for i := range l.s.segs {
		if l.s.segs[i].from.Equal(l.start) {
			l.s.segs[i].to = end
		}
	}
	if end.After(l.s.clk.t) {
		l.s.clk.t = end
	}
	return n, busy, nil
}

// simPulse queues busy periods of power w (measure.PulseLoad).
type simPulse struct {
	s      *surface
	w      float64
	queued time.Time
}

func (p *simPulse) Pulse(d time.Duration) error {
	from := p.s.clk.Now()
	if p.queued.After(from) {
		from = p.queued
	}
	p.queued = from.Add(d)
	p.s.segs = append(p.s.segs, segment{from: from, to: p.queued, w: p.w})
	return nil
}

func (p *simPulse) Sync() error {
	if p.queued.After(p.s.clk.t) {
		p.s.clk.t = p.queued
	}
	return nil
}

// idlePowerW is the model's power with a context and no work at SM clock
// f and memory clock mem (MHz).
func (s *Sim) idlePowerW(f, mem int) float64 {
	w, _ := s.power.BoardPower(s.dev, float64(f), float64(mem), model.Activity{})
	return w + s.offsetW
}

func (s *Sim) newSurface(key string, idleW, tempC float64) *surface {
	noise := func(slot int64) float64 {
		if s.noise == 0 {
			return 0
		}
		return s.noise / 2 * s.normal(key, "sensor", int(slot))
	}
	h := s.normal(key, "phase", 0)
	phase := time.Duration((0.5 + 0.15*math.Max(-3, math.Min(3, h))) * float64(counterPeriod))
	tss := func(w float64) float64 { return s.power.SteadyTempC(s.dev, w) }
	return newSurface(idleW, tempC, phase, noise, tss)
}

// SensorCheck runs measure.SensorCheck on the simulated sensors, with a
// pulsed load at the power of FP32 work at the full SM clock (capped at
// the power limit), so it shows what the real check shows on a GPU.
func (s *Sim) SensorCheck(o measure.SensorCheckOptions) (*measure.SensorReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	d := s.dev
	if !d.HasPowerSensor {
		return nil, fmt.Errorf("sim: %s has no power sensor (as on the real board): there is nothing to check", d.Name)
	}
	idleW := s.idlePowerW(s.clockMHz, d.MemoryClockMHz)
	busyW, _ := s.power.BoardPower(d, float64(s.clockMHz), float64(d.MemoryClockMHz), model.Activity{Busy: 1, Compute: 0.75})
	busy := math.Min(busyW, s.powerLimitW)
	surf := s.newSurface("sensor-check", idleW, s.power.SteadyTempC(d, idleW))
	r, err := measure.SensorCheck(surf.clk, surf, &simPulse{s: surf, w: busy}, o)
	if err != nil {
		return nil, err
	}
	r.Device = "Simulated " + d.Name
	return r, nil
}
