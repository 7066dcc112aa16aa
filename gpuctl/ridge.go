package gpuctl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// PowerSample is the mean power (W) of the synthetic kernel at an
// observed SM clock (MHz).
type PowerSample struct {
	ClockMHz float64
	PowerW   float64
}

// RidgeFit is the fitted power–frequency model
//
//	P(f) = StaticW + DynamicW · (f/1000) · V(f)²,   V(f) = 1 + VoltageSlope · max(0, f − RidgeMHz)
//
// (f in MHz): the voltage is flat up to the ridge (knee) frequency and
// rises linearly above it, as in Kernel Tuner's energy module
// (kernel_tuner/energy/energy.py: estimated_voltage, estimated_power,
// fit_power_frequency_model) and the CMOS law P ∝ f·V²
// (autotuning-energy-efficiency-power-capping.md eq. 2.3). Below the
// ridge energy per operation barely falls with the clock while time
// grows, above it power grows faster than speed: the energy-optimal
// clock of a compute-bound kernel lies near the ridge.
type RidgeFit struct {
	RidgeMHz     float64
	StaticW      float64
	DynamicW     float64 // W per GHz at V = 1
	VoltageSlope float64 // 1/MHz
	RMSW         float64 // root-mean-square residual, W
}

// Predict is the model's power at f MHz, W.
func (r RidgeFit) Predict(f float64) float64 {
	v := 1 + r.VoltageSlope*math.Max(0, f-r.RidgeMHz)
	return r.StaticW + r.DynamicW*f/1000*v*v
}

// linfit fits P = a + b·x by least squares and returns a, b and the sum
// of squared residuals.
func linfit(x, p []float64) (a, b, sse float64) {
	n := float64(len(x))
	var sx, sp, sxx, sxp float64
	for i := range x {
		sx += x[i]
		sp += p[i]
		sxx += x[i] * x[i]
		sxp += x[i] * p[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return sp / n, 0, math.Inf(1)
	}
	b = (n*sxp - sx*sp) / den
	a = (sp - b*sx) / n
	for i := range x {
		r := p[i] - a - b*x[i]
		sse += r * r
	}
	return a, b, sse
}

// FitRidge fits RidgeFit to samples (at least 4 distinct clocks): for
// every candidate ridge (each sampled clock but the two highest) the
// voltage slope is searched on a grid and refined by golden section, the
// static and dynamic terms by linear least squares; the candidate with
// the smallest squared error wins. Error: too few distinct clocks.
func FitRidge(samples []PowerSample) (RidgeFit, error) {
	s := slices.Clone(samples)
	sort.Slice(s, func(i, j int) bool { return s[i].ClockMHz < s[j].ClockMHz })
	var clocks []float64
	for _, x := range s {
		if len(clocks) == 0 || clocks[len(clocks)-1] != x.ClockMHz {
			clocks = append(clocks, x.ClockMHz)
		}
	}
	if len(clocks) < 4 {
		return RidgeFit{}, fmt.Errorf("gpuctl: fitting the ridge frequency needs at least 4 distinct clocks, got %d", len(clocks))
	}
	fmax := clocks[len(clocks)-1]
	p := make([]float64, len(s))
	x := make([]float64, len(s))
	for i := range s {
		p[i] = s[i].PowerW
	}
	eval := func(k, slope float64) (a, b, sse float64) {
		for i := range s {
			v := 1 + slope*math.Max(0, s[i].ClockMHz-k)
			x[i] = s[i].ClockMHz / 1000 * v * v
		}
		return linfit(x, p)
	}
	best := RidgeFit{RMSW: math.Inf(1)}
	bestSSE := math.Inf(1)
	for _, k := range clocks[:len(clocks)-2] {
		smax := 3 / (fmax - k)
		const grid = 200
		bs, bsse := 0.0, math.Inf(1)
		for g := 0; g <= grid; g++ {
			sl := smax * float64(g) / grid
			if _, b, sse := eval(k, sl); b >= 0 && sse < bsse {
				bs, bsse = sl, sse
			}
		}
		lo, hi := math.Max(0, bs-smax/grid), math.Min(smax, bs+smax/grid)
		const phi = 0.6180339887498949
		for range 60 {
			m1, m2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
			_, _, e1 := eval(k, m1)
			_, _, e2 := eval(k, m2)
			if e1 < e2 {
				hi = m2
			} else {
				lo = m1
			}
		}
		sl := (lo + hi) / 2
		a, b, sse := eval(k, sl)
		if _, _, e := eval(k, bs); e < sse {
			sl = bs
			a, b, sse = eval(k, sl)
		}
		if b >= 0 && sse < bestSSE {
			bestSSE = sse
			best = RidgeFit{RidgeMHz: k, StaticW: a, DynamicW: b, VoltageSlope: sl, RMSW: math.Sqrt(sse / float64(len(s)))}
		}
	}
	if math.IsInf(bestSSE, 1) {
		return best, errors.New("gpuctl: no ridge fit with a non-negative dynamic power")
	}
	return best, nil
}

// RidgeFraction is the window around the ridge frequency that --clock-range
// ridge keeps (Kernel Tuner's get_frequency_range_around_ridge default
// freq_range = 10 %).
const RidgeFraction = 0.10

// RidgeWindow keeps the clocks of table (descending) within ±frac of the
// ridge frequency, descending; when none falls inside, the one nearest to
// the ridge.
func RidgeWindow(table []int, ridgeMHz, frac float64) []int {
	var out []int
	for _, c := range table {
		if f := float64(c); f >= ridgeMHz*(1-frac) && f <= ridgeMHz*(1+frac) {
			out = append(out, c)
		}
	}
	if len(out) == 0 && len(table) > 0 {
		out = []int{nearest(table, int(math.Round(ridgeMHz)))}
	}
	return out
}

// SyntheticSource is the synthetic FP32 kernel whose power is measured
// for the ridge fit: nr_outer × nr_inner dependent FMAs per thread and one
// store, so it is compute-bound at every clock (as Kernel Tuner's
// fp32_kernel in kernel_tuner/energy/energy.py).
const SyntheticSource = `extern "C" __global__ void fp32_kernel(float *ptr) {
    float a = threadIdx.x * 1.0e-3f, b = 1.0001f, c = 1.0e-7f;
    for (int i = 0; i < nr_outer; i++) {
#pragma unroll
        for (int j = 0; j < nr_inner; j++) {
            a = a * b + c;
        }
    }
    ptr[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
`

// Synthetic kernel geometry (Kernel Tuner's: block_size_x 1024, nr_outer
// 64, nr_inner 1024, two thread blocks per SM).
const (
	synthBlock    = 1024
	synthOuter    = 64
	synthInner    = 1024
	synthBlocksSM = 2
)

// SyntheticProblem gives the synthetic kernel's problem and job for a GPU
// with sms SMs: block 1024 threads, 2 blocks per SM; Work describes it to
// the simulated GPU (2 FLOP per FMA, 4 bytes stored per thread).
func SyntheticProblem(sms int) (*backend.Problem, *backend.Job) {
	if sms <= 0 {
		sms = 1
	}
	grid := sms * synthBlocksSM
	threads := float64(grid * synthBlock)
	p := backend.Single(backend.Kernel{
		KernelName: "fp32_kernel", Source: SyntheticSource, SourceName: "fp32_kernel.cu", Language: "CUDA",
		Args: []backend.Arg{{Name: "ptr", Type: "float", Kind: backend.ArgVector, Count: int64(threads), Fill: backend.Fill{Type: "Constant"}}},
	})
	p.Energy = true // its power is what it is for
	j := &backend.Job{
		Key:     fmt.Sprintf("%d,%d,%d", synthBlock, synthOuter, synthInner),
		Defines: []backend.Define{{Name: "nr_outer", Value: fmt.Sprint(synthOuter)}, {Name: "nr_inner", Value: fmt.Sprint(synthInner)}},
		Grid:    [3]int{grid, 1, 1}, Block: [3]int{synthBlock, 1, 1},
		Work: &backend.Work{Flops: 2 * synthOuter * synthInner * threads, Bytes: 4 * threads, Registers: 32, Efficiency: 1},
	}
	return p, j
}

// syntheticMeasure is the measurement of the synthetic kernel: three timed
// runs and one energy window of 1 s, in the device state of set.
func syntheticMeasure(set *backend.Settings) measure.Request {
	return measure.Request{Iterations: 3, Energy: true, EnergyWindow: time.Second,
		StateKey: set.StateKey()}
}

// MeasurePowerCurve runs the synthetic kernel on be at each SM clock
// (Plan.Settings.CoreClockMHz; on a real GPU be must apply them: Wrap with
// a Session) and returns the observed clock and mean power of each run.
// Errors: the backend's, or a configuration that did not run.
func MeasurePowerCurve(ctx context.Context, be backend.Backend, clocks []int) ([]PowerSample, error) {
	p, j := SyntheticProblem(be.Device().SMs)
	if err := be.Prepare(ctx, p); err != nil {
		return nil, fmt.Errorf("gpuctl: synthetic kernel: %w", err)
	}
	bin, err := be.Compile(ctx, j)
	if err != nil {
		return nil, fmt.Errorf("gpuctl: synthetic kernel: %w", err)
	}
	var out []PowerSample
	for _, f := range clocks {
		set := &backend.Settings{CoreClockMHz: f}
		plan := backend.SingleLaunch(j, bin, set, syntheticMeasure(set), 0)
		plan.Key = fmt.Sprintf("%s,%d", j.Key, f)
		res, err := be.Run(ctx, plan)
		if err != nil {
			return nil, err
		}
		clock, okC := res.Observations.Get("sm_clock")
		power, okP := res.Observations.Get("power")
		if res.Status != backend.StatusValid || !okC || !okP {
			return nil, fmt.Errorf("gpuctl: synthetic kernel at %d MHz: %s %s", f, res.Status, res.Reason)
		}
		out = append(out, PowerSample{ClockMHz: clock, PowerW: power})
	}
	return out, nil
}
