// Package probe measures a GPU's device profile (model.Profile) with
// microbenchmarks, as performance-projection-heterogeneous-gpus.md
// section IV-B characterises each device once, offline: instruction
// throughput per class (FP32, FP64, 32-bit integer multiply-add, special
// functions), global-memory throughput of coalesced loads (float4 and
// float), stores and copies and of scattered loads, and conflict-free
// shared-memory loads, at occupancies from one thread block per SM to
// full, shared-memory throughput with and without bank conflicts, L2, and
// the time of an empty launch. The kernels (probe.cu) are compiled and run
// through gtune's own backend like any tuned kernel, so the same code
// probes a real GPU and the simulated one (whose profile then says what
// its model answers).
package probe

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/model"
)

//go:embed probe.cu
var source string

// Source is the microbenchmarks' CUDA source.
func Source() string { return source }

// Options configure Run.
type Options struct {
	// Iterations is the number of timed runs of each microbenchmark
	// (default 10); the median is taken.
	Iterations int
	// Log receives a line per microbenchmark (nil: none).
	Log io.Writer
	// Now stamps the profile (default time.Now).
	Now func() time.Time
	// Power also measures the board's power (one energy window each) at
	// eight operating points (runner.power) and fits the power model to
	// six of them (Profile.PowerReadings, Profile.PowerFit).
	Power bool
}

// The microbenchmarks' sizes. Arithmetic: ITERS × UNROLL × CHAINS
// operations per thread (probe.cu). Memory: buffers of dramBytes (an
// eighth of the GPU's memory at most) and at least four times the L2, so
// that loads come from DRAM; the L2 benchmark reads a quarter of the L2
// REPEAT times. Each runs for 0.2–10 ms on an H100, long against the
// time of an empty launch (8 µs measured there), which is subtracted.
const (
	iters, unroll, chains = 512, 16, 8
	dramBytes             = 1 << 30
	l2Repeat              = 128
	registersGuess        = 32 // for the simulated GPU's Work
)

// bench is one microbenchmark run: a kernel of the problem, its defines
// and geometry, the simulated work, and what its time is turned into.
type bench struct {
	name string
	// energy also measures the board's power while the kernel runs back
	// to back (one energy window).
	energy  bool
	kernel  int
	defines map[string]int
	grid    int
	block   int
	work    backend.Work
	// amount is what the run does (operations or bytes); the result is
	// amount / time.
	amount float64
}

// Run measures the device profile of be's GPU: each microbenchmark once
// (after one untimed run, measure's warm-up), Options.Iterations timed
// runs, the median time. The profile's Source is "measured", or
// "simulated" for the simulated GPU. Errors: the backend's (a GPU that
// cannot prepare the buffers, a failed compilation), or a microbenchmark
// that did not run (named).
func Run(ctx context.Context, be backend.Backend, o Options) (model.Profile, error) {
	if o.Iterations <= 0 {
		o.Iterations = 10
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	d := be.Device()
	fillDefaults(&d)
	prob, n := problem(&d)
	if err := be.Prepare(ctx, prob); err != nil {
		return model.Profile{}, fmt.Errorf("probe: preparing the microbenchmarks' buffers: %w", err)
	}
	p := model.Profile{Device: d.ID, Name: d.Name, UUID: d.Local.UUID, Driver: d.Local.Driver, Source: "measured",
		Date: o.Now().UTC().Format(time.RFC3339)}
	if backend.TraitsOf(be).Modelled {
		p.Source = "simulated"
	}
	full := d.SMs * (d.MaxThreadsPerSM / model.ProbeBlockSize)
	threads := float64(full * model.ProbeBlockSize)
	ops := threads * iters * unroll * chains
	arith := []struct {
		name   string
		kernel int
		work   backend.Work
		amount float64
		into   *float64
	}{
		{"fp32", kFP32, backend.Work{Flops: 2 * ops}, 2 * ops, &p.FP32GFLOPS},
		{"fp64", kFP64, backend.Work{FP64Flops: 2 * ops}, 2 * ops, &p.FP64GFLOPS},
		{"int32", kInt, backend.Work{IntOps: ops}, ops, &p.Int32GOPS},
		{"sfu", kSFU, backend.Work{SFUOps: ops}, ops, &p.SFUGOPS},
	}
	r := runner{ctx: ctx, be: be, o: o}
	// The empty launch first: its time (launch and event timing, no
	// work) is taken off every other microbenchmark's. It is measured
	// twice and the second kept: on a fresh H100 the first came out long
	// enough to put FP32 at 1.05 of its peak once subtracted.
	var empty float64
	for range 2 {
		var err error
		if empty, _, err = r.time(bench{name: "empty launch", kernel: kEmpty, grid: 1, block: 32, work: backend.Work{}}); err != nil {
			return p, err
		}
	}
	p.LaunchOverheadUs = empty * 1e3
	r.emptyMs = empty
	// Block scheduling: 2048 empty 32-thread blocks per SM, what each
	// costs an SM past the launch (model.Profile.BlockNs).
	const blocksPerSM = 2048
	t, _, err := r.time(bench{name: "thread blocks", kernel: kEmpty, grid: d.SMs * blocksPerSM, block: 32, work: backend.Work{}})
	if err != nil {
		return p, err
	}
	p.BlockNs = max(t-empty, 0) * 1e6 / blocksPerSM
	for _, a := range arith {
		b := bench{name: a.name, kernel: a.kernel, defines: map[string]int{"ITERS": iters}, grid: full, block: model.ProbeBlockSize, work: a.work, amount: a.amount}
		v, obs, err := r.rate(b)
		if err != nil {
			return p, err
		}
		*a.into = v / 1e9
		p.SMClockMHz, p.MemClockMHz = max(p.SMClockMHz, obs.sm), max(p.MemClockMHz, obs.mem)
	}
	sharedBytes := threads * iters * unroll * 4
	var conflictFree, conflicted float64
	for _, stride := range []int{1, 32} {
		w := backend.Work{SharedBytes: sharedBytes, SharedMemory: 4096, SharedConflict: 1}
		if stride == 32 {
			w.SharedConflict = 32
		}
		b := bench{name: fmt.Sprintf("shared stride %d", stride), kernel: kShared, defines: map[string]int{"ITERS": iters, "STRIDE": stride},
			grid: full, block: model.ProbeBlockSize, work: w, amount: sharedBytes}
		v, _, err := r.rate(b)
		if err != nil {
			return p, err
		}
		if stride == 1 {
			conflictFree = v
		} else {
			conflicted = v
		}
	}
	p.SharedGBs = conflictFree / 1e9
	if conflicted > 0 {
		p.BankConflictSlowdown = conflictFree / conflicted
	}
	occupancies := model.ProbeBlocksPerSM(&d)
	for _, bps := range occupancies {
		grid := d.SMs * bps
		pt := model.MemoryPoint{BlocksPerSM: bps, Occupancy: model.OccupancyOf(&d, bps)}
		for _, m := range []struct {
			name   string
			kernel int
			bytes  float64
			into   *float64
		}{
			{"read", kRead, float64(n.dram) * 16, &pt.ReadGBs},
			{"write", kWrite, float64(n.dram) * 16, &pt.WriteGBs},
			{"strided", kStrided, float64(n.dram*4) / 8 * 32, &pt.StridedGBs},
			{"copy", kCopy, float64(n.dram) * 16 * 2, &pt.CopyGBs},
			{"read 4-byte", kRead32, float64(n.dram) * 16, &pt.Read4GBs},
		} {
			b := bench{name: fmt.Sprintf("%s, %d blocks per SM", m.name, bps), kernel: m.kernel, grid: grid, block: model.ProbeBlockSize,
				work: backend.Work{Bytes: m.bytes}, amount: m.bytes}
			v, _, err := r.rate(b)
			if err != nil {
				return p, err
			}
			*m.into = v / 1e9
		}
		// Shared memory at this occupancy too: the conflict-free loads of
		// the shared benchmark on this grid (section IV-B profiles local
		// memory at full occupancy only; issue 49). The full grid's was
		// measured above.
		pt.SharedGBs = p.SharedGBs
		if grid != full {
			amount := sharedBytes * float64(grid) / float64(full)
			v, _, err := r.rate(bench{name: fmt.Sprintf("shared, %d blocks per SM", bps), kernel: kShared, defines: map[string]int{"ITERS": iters, "STRIDE": 1},
				grid: grid, block: model.ProbeBlockSize, work: backend.Work{SharedBytes: amount, SharedMemory: 4096, SharedConflict: 1}, amount: amount})
			if err != nil {
				return p, err
			}
			pt.SharedGBs = v / 1e9
		}
		p.Memory = append(p.Memory, pt)
	}
	l2Bytes := float64(n.l2) * 16 * l2Repeat
	v, _, err := r.rate(bench{name: "l2", kernel: kL2, defines: map[string]int{"REPEAT": l2Repeat}, grid: full, block: model.ProbeBlockSize,
		work: backend.Work{Bytes: l2Bytes}, amount: l2Bytes})
	if err != nil {
		return p, err
	}
	p.L2GBs = v / 1e9
	if o.Power {
		if err := r.power(&d, &p, full, n); err != nil {
			return p, err
		}
	}
	return p, nil
}

// PowerCheck is the name of a reading probe holds out of the power fit
// to check it: FP32 FMAs of register operands in one dependent chain a
// thread, one 256-thread block an SM, so that every SM is busy but issues
// a fraction of its peak (as Kernel Tuner's synthetic energy kernel
// does). The other is "dram copy": loads and stores at once.
const PowerCheck = "fp32, one chain"

// power measures the board's power at the operating points that separate
// the power model's terms (one energy window each, back-to-back
// launches; PowerModel): one 32-thread block sleeping (the clocked GPU,
// one SM busy: ClockedIdle), every SM holding sleeping warps (Busy), FP32
// FMAs of register operands at full occupancy (Compute: probe_fp32r, not
// the immediates of the throughput benchmark, which on an H100 draw half
// the power a FLOP that GEMM's FMAs do: BENCHMARKS.md, "A power model
// fitted to the probe"), conflict-free shared-memory loads (OnChip), DRAM
// loads (Memory) and stores (MemoryWrite) at full occupancy, and two
// held out to check the fit (PowerReading.Check): PowerCheck and a copy. Each
// reading's activity is its measured rate over the peak at the clock it
// ran at (FP32 and shared memory) or over the bandwidth (DRAM); an add
// per float loaded counts as FP32 issue. The power model is then fitted
// to all but the checks, starting from model.PowerModelFor(d) (one clock:
// the voltage curve stays the prior's), into p.PowerFit. Errors: a
// reading that did not run (named), or a fit that failed.
func (r runner) power(d *device.Description, p *model.Profile, full int, n sizes) error {
	threads := float64(full * model.ProbeBlockSize)
	// sleeps of 1 µs: 4 ms a launch. checkIters: one 256-thread block
	// an SM, one chain a thread, 2 warps a scheduler against a 4-cycle
	// FMA latency, about half the issue rate for about 1 ms.
	const sleeps, checkIters = 4096, 64 * iters
	ops1 := threads * iters * unroll
	shared := threads * iters * unroll * 4
	dram := float64(n.dram) * 16
	fmax := float64(d.MaxCoreClockMHz())
	for _, c := range []struct {
		name                         string
		kernel, grid, block          int
		defines                      map[string]int
		flops, bytes, writes, shared float64
		busy                         float64
		check                        bool
	}{
		{"one block sleeping", kBusy, 1, 32, map[string]int{"ITERS": sleeps}, 0, 0, 0, 0, 1 / float64(d.SMs), false},
		{"SMs sleeping", kBusy, full, model.ProbeBlockSize, map[string]int{"ITERS": sleeps}, 0, 0, 0, 0, 1, false},
		{"fp32", kFP32R, full, model.ProbeBlockSize, map[string]int{"ITERS": iters}, 2 * ops1 * chains, 0, 0, 0, 1, false},
		{"shared loads", kShared, full, model.ProbeBlockSize, map[string]int{"ITERS": iters, "STRIDE": 1}, shared / 4, 0, 0, shared, 1, false},
		{"dram reads", kRead, full, model.ProbeBlockSize, nil, dram / 4, dram, 0, 0, 1, false},
		{"dram writes", kWrite, full, model.ProbeBlockSize, nil, 0, dram, dram, 0, 1, false},
		{PowerCheck, kFP32R, d.SMs, model.ProbeBlockSize, map[string]int{"ITERS": checkIters, "CHAINS": 1}, 2 * float64(d.SMs*model.ProbeBlockSize) * checkIters * unroll, 0, 0, 0, 1, true},
		{"dram copy", kCopy, full, model.ProbeBlockSize, nil, 0, 2 * dram, dram, 0, 1, true},
	} {
		w := backend.Work{Flops: c.flops, Bytes: c.bytes, WriteBytes: c.writes, SharedBytes: c.shared, SharedConflict: 1}
		if c.kernel == kShared {
			w.SharedMemory = 4096
		}
		if c.kernel == kBusy {
			// The simulated GPU's stand-in for sleeping: an FP32
			// operation a sleep at a thousandth of the rate.
			w.Flops, w.Efficiency = float64(c.grid*c.block)*sleeps, 1e-3
		}
		ms, obs, err := r.time(bench{name: "power: " + c.name, kernel: c.kernel, defines: c.defines, grid: c.grid, block: c.block, work: w, energy: true})
		if err != nil {
			return err
		}
		if !(obs.powerW > 0) {
			return fmt.Errorf("probe: power: %s: no power was observed", c.name)
		}
		if ms > 2*r.emptyMs {
			ms -= r.emptyMs
		}
		sm, mem := obs.sm, obs.mem
		if sm <= 0 {
			sm = fmax
		}
		if mem <= 0 {
			mem = float64(d.MemoryClockMHz)
		}
		t := ms / 1e3
		a := model.Activity{Busy: c.busy}
		if d.PeakFP32GFLOPS > 0 {
			a.Compute = min(1, c.flops/(t*d.PeakFP32GFLOPS*1e9*sm/fmax))
		}
		if d.MemoryBandwidthGBs > 0 {
			a.Memory = min(1, c.bytes/(t*d.MemoryBandwidthGBs*1e9))
			a.MemoryWrite = min(a.Memory, c.writes/(t*d.MemoryBandwidthGBs*1e9))
		}
		a.Shared = min(1, c.shared/(t*model.SharedPeakGBs(d, sm)*1e9))
		p.PowerReadings = append(p.PowerReadings, model.PowerReading{Name: c.name, SMClockMHz: sm, MemClockMHz: mem, Activity: a, PowerW: obs.powerW, Check: c.check})
		switch c.name {
		case "fp32":
			p.FP32PowerW, p.IdlePowerW = obs.powerW, obs.idleW
		case "dram reads":
			p.DRAMPowerW = obs.powerW
		}
	}
	fit, err := model.FitPowerModel(d, p.PowerReadings, model.PowerModelFor(d))
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	p.PowerFit = &fit
	return nil
}

// The problem's kernels, in order.
const (
	kFP32 = iota
	kFP64
	kInt
	kSFU
	kRead
	kWrite
	kStrided
	kShared
	kL2
	kEmpty
	kCopy
	kRead32
	kBusy
	kFP32R
)

// sizes are the element counts of the memory buffers: float4s read from
// and written to DRAM, and float4s of the L2 working set.
type sizes struct{ dram, l2 int64 }

// sizesOf are the memory microbenchmarks' buffer sizes on d: six buffers
// of the DRAM size (read, write, scattered, the copy's two, 4-byte read)
// take at most 6/16 of its memory.
func sizesOf(d *device.Description) sizes {
	dram := max(int64(dramBytes), 4*d.L2Bytes)
	if d.MemoryBytes > 0 {
		dram = min(dram, d.MemoryBytes/16)
	}
	return sizes{dram / 16, max(d.L2Bytes/4, 1<<20) / 16}
}

// problem is the microbenchmarks as one problem, a kernel each with its
// own buffers.
func problem(d *device.Description) (*backend.Problem, sizes) {
	n := sizesOf(d)
	dram, l2 := n.dram, n.l2
	threads := int64(d.SMs * d.MaxThreadsPerSM)
	vec := func(name, typ string, count int64) backend.Arg {
		return backend.Arg{Name: name, Type: typ, Kind: backend.ArgVector, Count: count, Fill: backend.Fill{Type: "Constant"}}
	}
	scalar := func(name string, v int64) backend.Arg {
		return backend.Arg{Name: name, Type: "int64", Kind: backend.ArgScalar, Scalar: float64(v)}
	}
	k := func(name string, args ...backend.Arg) backend.Kernel {
		return backend.Kernel{KernelName: name, Source: source, SourceName: "probe.cu", Language: "CUDA", Args: args}
	}
	return &backend.Problem{Kernels: []backend.Kernel{
		kFP32:    k("probe_fp32", vec("out", "float", threads)),
		kFP64:    k("probe_fp64", vec("out", "double", threads)),
		kInt:     k("probe_int", vec("out", "int32", threads)),
		kSFU:     k("probe_sfu", vec("out", "float", threads)),
		kRead:    k("probe_read", vec("in", "float4", dram), vec("out", "float", 1), scalar("n", dram)),
		kWrite:   k("probe_write", vec("out", "float4", dram), scalar("n", dram)),
		kStrided: k("probe_strided", vec("in", "float", dram*4), vec("out", "float", 1), scalar("n", dram*4)),
		kShared:  k("probe_shared", vec("out", "float", threads)),
		kL2:      k("probe_l2", vec("in", "float4", l2), vec("out", "float", 1), scalar("n", l2)),
		kEmpty:   k("probe_empty"),
		kCopy:    k("probe_copy", vec("in", "float4", dram), vec("out", "float4", dram), scalar("n", dram)),
		kRead32:  k("probe_read32", vec("in", "float", dram*4), vec("out", "float", 1), scalar("n", dram*4)),
		kBusy:    k("probe_busy", vec("out", "float", 1)),
		kFP32R:   k("probe_fp32r", vec("out", "float", threads)),
	}, Energy: true}, sizes{dram, l2} // the probe reads power too
}

// fillDefaults gives a GPU the device database does not know the limits
// the microbenchmarks are sized by (those of every NVIDIA GPU since
// compute capability 7.5 at least).
func fillDefaults(d *device.Description) {
	if d.SMs <= 0 {
		d.SMs = max(d.Local.SMs, 1)
	}
	if d.MaxThreadsPerSM <= 0 {
		d.MaxThreadsPerSM = 1024
	}
	if d.WarpSize <= 0 {
		d.WarpSize = 32
	}
	if d.MaxWarpsPerSM <= 0 {
		d.MaxWarpsPerSM = d.MaxThreadsPerSM / d.WarpSize
	}
	if d.ID == "" {
		d.ID = strings.ToLower(strings.Join(strings.Fields(d.Name), "_"))
	}
}

// runner runs microbenchmarks on one backend.
type runner struct {
	ctx context.Context
	be  backend.Backend
	o   Options
	// emptyMs is the time of an empty launch, taken off the times rate
	// divides by (0 until measured).
	emptyMs float64
}

// clocks are the SM and memory clocks a run observed (MHz; 0 unknown),
// and with bench.energy the board's mean and idle power (W; 0 unknown).
type clocks struct{ sm, mem, powerW, idleW float64 }

// rate runs b and gives its amount per second, over its time less an
// empty launch's.
func (r runner) rate(b bench) (float64, clocks, error) {
	ms, c, err := r.time(b)
	if err != nil {
		return 0, c, err
	}
	if ms > 2*r.emptyMs {
		ms -= r.emptyMs
	}
	return b.amount / (ms / 1e3), c, nil
}

// time runs b and gives its median time, ms.
func (r runner) time(b bench) (float64, clocks, error) {
	j := &backend.Job{Kernel: b.kernel, Key: b.name, Grid: [3]int{b.grid, 1, 1}, Block: [3]int{b.block, 1, 1}}
	for _, name := range []string{"ITERS", "STRIDE", "REPEAT", "CHAINS"} {
		if v, ok := b.defines[name]; ok {
			j.Defines = append(j.Defines, backend.Define{Name: name, Value: strconv.Itoa(v)})
		}
	}
	w := b.work
	w.Registers = registersGuess
	if w.Efficiency == 0 {
		w.Efficiency = 1
	}
	j.Work = &w
	bin, err := r.be.Compile(r.ctx, j)
	if err != nil {
		return 0, clocks{}, fmt.Errorf("probe: %s: %w", b.name, err)
	}
	req := measure.Request{Iterations: r.o.Iterations, Observers: []string{"clocks"}}
	if b.energy {
		req = measure.Request{Iterations: r.o.Iterations, Energy: true}
	}
	plan := backend.SingleLaunch(j, bin, nil, req, 0)
	res, err := r.be.Run(r.ctx, plan)
	if err != nil {
		return 0, clocks{}, fmt.Errorf("probe: %s: %w", b.name, err)
	}
	if res.Status != backend.StatusValid {
		return 0, clocks{}, fmt.Errorf("probe: %s: %s: %s", b.name, res.Status, res.Reason)
	}
	ms, ok := res.Observations.Get("time_median")
	if !ok {
		ms, ok = res.Observations.Get("time")
	}
	if !ok || !(ms > 0) || math.IsInf(ms, 0) {
		return 0, clocks{}, errors.New("probe: " + b.name + ": no time was observed")
	}
	var c clocks
	c.sm, _ = res.Observations.Get("sm_clock")
	c.mem, _ = res.Observations.Get("mem_clock")
	c.powerW, _ = res.Observations.Get("power")
	c.idleW, _ = res.Observations.Get("idle_power")
	if r.o.Log != nil {
		line := fmt.Sprintf("probe: %-28s %10.4f ms", b.name, ms)
		if b.amount > 0 && ms > 2*r.emptyMs {
			line += fmt.Sprintf("  %12.1f G/s", b.amount/((ms-r.emptyMs)/1e3)/1e9)
		}
		fmt.Fprintln(r.o.Log, line)
	}
	return ms, c, nil
}
