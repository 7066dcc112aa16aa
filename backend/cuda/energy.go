package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/nvml"
)

type sensors struct{ nd nvml.Device }

func (s sensors) EnergyMJ() (uint64, error) { return s.nd.TotalEnergyMJ() }

func (s sensors) TemperatureC() (float64, error) {
	v, err := s.nd.TemperatureC()
	return float64(v), err
}

func (s sensors) ClocksMHz() (float64, float64, error) {
	sm, err := s.nd.ClockMHz(nvml.ClockSM)
	if err != nil {
		return 0, 0, err
	}
	mem, err := s.nd.ClockMHz(nvml.ClockMem)
	return float64(sm), float64(mem), err
}

func (s sensors) ClockEventReasons() (uint64, error) { return s.nd.ClockEventReasons() }

func (s sensors) Throttle() (measure.ThrottleTimes, error) {
	p, err := s.nd.ViolationNs(nvml.PolicyPower)
	if err != nil {
		return measure.ThrottleTimes{}, err
	}
	th, err := s.nd.ViolationNs(nvml.PolicyThermal)
	if err != nil {
		return measure.ThrottleTimes{}, err
	}
	return measure.ThrottleTimes{Power: time.Duration(p), Thermal: time.Duration(th)}, nil
}

func (s sensors) PowerSamples(since time.Time) ([]measure.PowerSample, error) {
	var us uint64
	if !since.IsZero() && since.UnixMicro() > 0 {
		us = uint64(since.UnixMicro())
	}
	raw, err := s.nd.Samples(nvml.SamplesTotalPower, us)
	if err != nil {
		return nil, err
	}
	out := make([]measure.PowerSample, len(raw))
	for i, r := range raw {
		out[i] = measure.PowerSample{At: time.UnixMicro(int64(r.TimeUs)), W: r.Value / 1000}
	}
	return out, nil
}

func (s sensors) InstantPowerW() (float64, error) {
	v, err := s.nd.InstantPowerMW()
	return v / 1000, err
}

// load launches a kernel back to back for package measure: Pump keeps
// about queueAhead of work queued (from the per-launch estimate), in
// batches of about batchTime; events around the run give its GPU time.
//
// The estimate alone is open loop: a kernel at the power limit slows as
// the GPU heats (an H100 running cublasDgemm from 1980 MHz cold to
// 1770 MHz at 72 °C), so work queued by the cold estimate piles up, and
// over a 90 s warm-up the pile grew past the configuration's deadline
// (BENCHMARKS.md, "cuBLAS through purego"). An event recorded after each
// batch closes the loop: Pump queues nothing while maxBatchesAhead
// batches are still unfinished on the GPU.
type load struct {
	d        *driver
	launch   func() error
	est      time.Duration // per launch
	evs      [2]uintptr
	queued   time.Time // when the queued work should end
	launches int
	// marks are events recorded after each batch still unfinished as
	// far as Pump last looked, oldest first; spare are events to reuse.
	marks, spare []uintptr
}

// queueAhead rides out a polling thread that the scheduler delays while
// the compile pool keeps every other core busy: with 30 ms the GPU went
// idle now and then, and the idle gaps entered the energy per launch.
// maxBatchesAhead bounds the unfinished batches: twice queueAhead by the
// estimate, so the bound holds the queue only when the GPU has fallen
// behind the estimate.
const (
	queueAhead      = 50 * time.Millisecond
	batchTime       = 5 * time.Millisecond
	maxBatchesAhead = 2 * int(queueAhead/batchTime)
)

func newLoad(d *driver, launch func() error, estMs float64) (*load, error) {
	l := &load{d: d, launch: launch, est: time.Duration(math.Max(estMs, 0.001) * float64(time.Millisecond))}
	for i := range l.evs {
		if err := d.check("cuEventCreate", d.cuEventCreate(&l.evs[i], 0)); err != nil {
			l.destroy()
			return nil, err
		}
	}
	return l, nil
}

// Close releases the load's events (measure.Run closes a Load).
func (l *load) Close() error {
	l.destroy()
	return nil
}

func (l *load) destroy() {
	for _, e := range append(append(l.evs[:], l.marks...), l.spare...) {
		if e != 0 {
			l.d.cuEventDestroy(e)
		}
	}
	l.marks, l.spare = nil, nil
}

func (l *load) Start() error {
	l.launches = 0
	l.queued = time.Now()
	return l.d.check("cuEventRecord", l.d.cuEventRecord(l.evs[0], 0))
}

func (l *load) Pump() error {
	batch := max(1, int(batchTime/l.est))
	for time.Until(l.queued) < queueAhead {
		behind, err := l.behind()
		if err != nil || behind {
			return err
		}
		for range batch {
			if err := l.launch(); err != nil {
				return err
			}
		}
		l.launches += batch
		if err := l.mark(); err != nil {
			return err
		}
		if now := time.Now(); l.queued.Before(now) {
			l.queued = now
		}
		l.queued = l.queued.Add(time.Duration(batch) * l.est)
	}
	return nil
}

// behind drops the batches the GPU has finished and reports whether
// maxBatchesAhead are still unfinished (cuEventQuery: no wait).
func (l *load) behind() (bool, error) {
	for len(l.marks) > 0 {
		r := l.d.cuEventQuery(l.marks[0])
		if r == cuErrorNotReady {
			break
		}
		if err := l.d.check("cuEventQuery", r); err != nil {
			return false, err
		}
		l.spare = append(l.spare, l.marks[0])
		l.marks = l.marks[1:]
	}
	return len(l.marks) >= maxBatchesAhead, nil
}

// eventDisableTiming is CU_EVENT_DISABLE_TIMING: a mark is only queried.
const eventDisableTiming = 2

// mark records an event after the batch just queued.
func (l *load) mark() error {
	var e uintptr
	if n := len(l.spare); n > 0 {
		e, l.spare = l.spare[n-1], l.spare[:n-1]
	} else if err := l.d.check("cuEventCreate", l.d.cuEventCreate(&e, eventDisableTiming)); err != nil {
		return err
	}
	if err := l.d.check("cuEventRecord", l.d.cuEventRecord(e, 0)); err != nil {
		l.spare = append(l.spare, e)
		return err
	}
	l.marks = append(l.marks, e)
	return nil
}

func (l *load) Finish() (int, time.Duration, error) {
	d := l.d
	if err := d.check("cuEventRecord", d.cuEventRecord(l.evs[1], 0)); err != nil {
		return l.launches, 0, err
	}
	if err := d.check("cuEventSynchronize", d.cuEventSynchronize(l.evs[1])); err != nil {
		return l.launches, 0, err
	}
	var ms float32
	if err := d.check("cuEventElapsedTime", d.cuEventElapsedTime(&ms, l.evs[0], l.evs[1])); err != nil {
		return l.launches, 0, err
	}
	return l.launches, time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// burnSource is the sensor check's load: FMAs in a loop whose length sets
// the busy time.
const burnSource = `extern "C" __global__ void gtune_burn(float* out, unsigned int iters) {
  float a = threadIdx.x * 1e-3f, b = 0.999f;
  for (unsigned int i = 0; i < iters; ++i) { a = fmaf(a, b, 1e-3f); b = fmaf(b, 0.5f, a * 1e-6f); }
  if (a == 0.123f) out[blockIdx.x * blockDim.x + threadIdx.x] = b;
}
`

// pulse is the calibrated busy kernel of the sensor check.
type pulse struct {
	d       *driver
	fn      uintptr
	mod     uintptr
	out     uint64
	grid    uint32
	perMs   float64 // loop iterations per ms of GPU time
	pin     runtime.Pinner
	outArg  uint64
	iterArg uint32
	params  [2]unsafe.Pointer
}

func (w *worker) newPulse() (*pulse, error) {
	bin, err := Compile(context.Background(), CompileRequest{Source: burnSource, SourceName: "gtune_burn.cu", KernelName: "gtune_burn",
		ComputeMajor: w.info.ComputeMajor, ComputeMinor: w.info.ComputeMinor})
	if err != nil {
		return nil, fmt.Errorf("compiling the sensor-check kernel: %w", err)
	}
	format, lowered, payload, err := decodeImage(bin.Image)
	if err != nil {
		return nil, err
	}
	if format == formatPTX {
		payload = append(payload, 0)
	}
	d := w.d
	p := &pulse{d: d, grid: uint32(max(1, w.info.SMs) * 4)}
	if err := d.check("cuModuleLoadData", d.cuModuleLoadData(&p.mod, unsafe.Pointer(&payload[0]))); err != nil {
		return nil, err
	}
	runtime.KeepAlive(payload)
	if err := d.check("cuModuleGetFunction", d.cuModuleGetFunction(&p.fn, p.mod, lowered)); err != nil {
		p.close()
		return nil, err
	}
	if err := d.check("cuMemAlloc", d.cuMemAlloc(&p.out, uint64(p.grid)*256*4)); err != nil {
		p.close()
		return nil, err
	}
	p.outArg = p.out
	p.pin.Pin(p) // the parameters point into p
	p.params = [2]unsafe.Pointer{unsafe.Pointer(&p.outArg), unsafe.Pointer(&p.iterArg)}
	// Calibrate: time 1<<18 iterations, then scale.
	var ev [2]uintptr
	for i := range ev {
		if err := d.check("cuEventCreate", d.cuEventCreate(&ev[i], 0)); err != nil {
			p.close()
			return nil, err
		}
		defer d.cuEventDestroy(ev[i])
	}
	const n = 1 << 18
	for range 2 { // the first launch warms up
		d.cuEventRecord(ev[0], 0)
		if err := p.launch(n); err != nil {
			p.close()
			return nil, err
		}
		d.cuEventRecord(ev[1], 0)
		if err := d.check("cuEventSynchronize", d.cuEventSynchronize(ev[1])); err != nil {
			p.close()
			return nil, err
		}
	}
	var ms float32
	if err := d.check("cuEventElapsedTime", d.cuEventElapsedTime(&ms, ev[0], ev[1])); err != nil {
		p.close()
		return nil, err
	}
	p.perMs = n / math.Max(float64(ms), 1e-3)
	return p, nil
}

func (p *pulse) launch(iters uint32) error {
	p.iterArg = iters
	return p.d.check("cuLaunchKernel", p.d.cuLaunchKernel(p.fn, p.grid, 1, 1, 256, 1, 1, 0, 0, unsafe.Pointer(&p.params[0]), nil))
}

// Pulse queues about dur of GPU work and returns at once.
func (p *pulse) Pulse(dur time.Duration) error {
	it := math.Max(1, p.perMs*float64(dur)/float64(time.Millisecond))
	return p.launch(uint32(math.Min(it, math.MaxUint32)))
}

func (p *pulse) Sync() error { return p.d.check("cuCtxSynchronize", p.d.cuCtxSynchronize()) }

func (p *pulse) close() {
	if p.out != 0 {
		p.d.cuMemFree(p.out)
	}
	if p.mod != 0 {
		p.d.cuModuleUnload(p.mod)
	}
	p.pin.Unpin()
}

// sensorCheck runs measure.SensorCheck on this GPU with the calibrated
// busy kernel (the worker's opSensorCheck).
func (w *worker) sensorCheck(o measure.SensorCheckOptions) (*measure.SensorReport, error) {
	if !w.hasEnergy {
		return nil, errors.New("this GPU or driver has no NVML energy counter")
	}
	p, err := w.newPulse()
	if err != nil {
		return nil, err
	}
	defer p.close()
	r, err := measure.SensorCheck(measure.WallClock{}, sensors{w.nd}, p, o)
	if err != nil {
		return nil, err
	}
	r.Device = w.info.Name
	return r, nil
}

// SensorCheck measures the GPU's energy sensors in the worker (the parent
// never touches the GPU): see measure.SensorCheck. It needs no Prepare.
// Errors: the worker cannot start, the GPU has no energy counter, the
// sensor-check kernel does not compile, or the counter stops.
func (b *Backend) SensorCheck(ctx context.Context, o measure.SensorCheckOptions) (*measure.SensorReport, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("cuda: SensorCheck on a closed backend")
	}
	if b.w == nil {
		if err := b.restartLocked(ctx); err != nil {
			return nil, err
		}
	}
	rep, err := call(ctx, b.w, &request{Op: opSensorCheck, SensorCheck: &o}, 2*time.Minute, b.opts.Silence)
	if err != nil {
		b.w.Kill()
		b.w = nil
		return nil, fmt.Errorf("cuda: sensor check: %w", err)
	}
	if rep.Err != "" {
		if rep.Fatal {
			b.w.WaitExit(5 * time.Second)
			b.w = nil
		}
		return nil, fmt.Errorf("cuda: sensor check: %s", rep.Err)
	}
	return rep.Sensors, nil
}
