package cuda

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/nvml"
)

// EnergyMethod names how Run measures energy, for Energy.Method.
const EnergyMethod = "nvml-energy-counter"

// pollEvery is the energy-counter polling period. The counter moves in
// steps (every few to tens of ms, by driver and GPU); polling much faster
// than a step bounds the error in the instants we align to.
const pollEvery = 250 * time.Microsecond

// waitUpdate polls the energy counter until it differs from prev and
// returns the new value (mJ) and when it was seen.
func (w *worker) waitUpdate(prev uint64, limit time.Duration) (uint64, time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		v, err := w.nd.TotalEnergyMJ()
		now := time.Now()
		if err != nil {
			return 0, now, err
		}
		if v != prev {
			return v, now, nil
		}
		if now.After(deadline) {
			return 0, now, fmt.Errorf("energy counter did not change within %v", limit)
		}
		time.Sleep(pollEvery)
	}
}

// alignedRead waits for the next counter update, so the reading belongs
// to a known instant rather than anywhere within an update period.
func (w *worker) alignedRead() (uint64, time.Time, error) {
	v, err := w.nd.TotalEnergyMJ()
	if err != nil {
		return 0, time.Time{}, err
	}
	return w.waitUpdate(v, 2*time.Second)
}

// idlePower measures the GPU's power with nothing running, W: the
// counter difference between two aligned readings about 0.5 s apart.
// Used to subtract the idle tail after the energy window.
func (w *worker) idlePower() (float64, error) {
	if err := w.d.check("cuCtxSynchronize", w.d.cuCtxSynchronize()); err != nil {
		return 0, err
	}
	e0, t0, err := w.alignedRead()
	if err != nil {
		return 0, err
	}
	time.Sleep(500 * time.Millisecond)
	e1, t1, err := w.alignedRead()
	if err != nil {
		return 0, err
	}
	return float64(e1-e0) / 1000 / t1.Sub(t0).Seconds(), nil
}

// sampler reads clocks and clock-event reasons every 10 ms during an
// energy window from its own goroutine (NVML is thread-safe).
type sampler struct {
	stop    chan struct{}
	done    sync.WaitGroup
	smSum   float64
	memSum  float64
	n       int
	reasons uint64
}

func (w *worker) startSampler() *sampler {
	s := &sampler{stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			sm, err1 := w.nd.ClockMHz(nvml.ClockSM)
			mem, err2 := w.nd.ClockMHz(nvml.ClockMem)
			if err1 == nil && err2 == nil {
				s.smSum += float64(sm)
				s.memSum += float64(mem)
				s.n++
			}
			if r, err := w.nd.ClockEventReasons(); err == nil {
				s.reasons |= r
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) finish() {
	close(s.stop)
	s.done.Wait()
}

// energyWindow runs the kernel back to back for j.EnergyWindow and
// measures its energy with the NVML counter:
//
//  1. wait for a counter update (E0 at t0) and start launching at once;
//  2. launch in batches of about 50 ms (from the median launch time
//     estMs), keeping at most two batches queued, until the window has
//     elapsed; synchronise and note the end tEnd;
//  3. wait for the next counter update (E1 at t1);
//  4. energy = (E1 - E0) - idle power × (t1 - tEnd): the tail between the
//     end of the work and the update is idle and is taken out.
//
// cuErr is a CUDA failure (the configuration fails); eErr a sensor
// failure (the energy is unknown, the configuration stands).
func (w *worker) energyWindow(j *backend.Job, launch func() error, estMs float64) (e *backend.Energy, cuErr, eErr error) {
	d := w.d
	window := j.EnergyWindow
	if window <= 0 {
		window = time.Second
	}
	batch := int(math.Ceil(50 / estMs))
	batch = max(1, min(batch, 1_000_000))
	var evs [2]uintptr
	for i := range evs {
		if err := d.check("cuEventCreate", d.cuEventCreate(&evs[i], 0)); err != nil {
			return nil, err, nil
		}
	}
	defer func() {
		for _, ev := range evs {
			d.cuEventDestroy(ev)
		}
	}()
	if err := d.check("cuCtxSynchronize", d.cuCtxSynchronize()); err != nil {
		return nil, err, nil
	}
	e0, t0, err := w.alignedRead()
	if err != nil {
		return nil, nil, err
	}
	s := w.startSampler()
	launches := 0
	var runErr error
	for i := 0; ; i++ {
		for k := 0; k < batch; k++ {
			if err := launch(); err != nil {
				runErr = err
				break
			}
			launches++
		}
		if runErr != nil {
			break
		}
		if err := d.check("cuEventRecord", d.cuEventRecord(evs[i%2], 0)); err != nil {
			runErr = err
			break
		}
		if i > 0 {
			if err := d.check("cuEventSynchronize", d.cuEventSynchronize(evs[(i-1)%2])); err != nil {
				runErr = err
				break
			}
		}
		if time.Since(t0) >= window {
			break
		}
	}
	if runErr == nil {
		runErr = d.check("cuCtxSynchronize", d.cuCtxSynchronize())
	}
	tEnd := time.Now()
	s.finish()
	if runErr != nil {
		return nil, runErr, nil
	}
	eEnd, err := w.nd.TotalEnergyMJ()
	if err != nil {
		return nil, nil, err
	}
	e1, t1, err := w.waitUpdate(eEnd, 2*time.Second)
	if err != nil {
		return nil, nil, err
	}
	temp, _ := w.nd.TemperatureC()
	winS := tEnd.Sub(t0).Seconds()
	tail := t1.Sub(tEnd).Seconds()
	energy := float64(e1-e0)/1000 - w.idleW*tail
	out := &backend.Energy{
		WindowS:           winS,
		Launches:          launches,
		EnergyJ:           energy,
		EnergyPerLaunchJ:  energy / float64(max(launches, 1)),
		MeanPowerW:        energy / winS,
		TemperatureC:      float64(temp),
		ClockEventReasons: s.reasons,
		Method:            EnergyMethod,
	}
	if s.n > 0 {
		out.SMClockMHz = s.smSum / float64(s.n)
		out.MemClockMHz = s.memSum / float64(s.n)
	}
	return out, nil, nil
}
