package cuda

import (
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// fmaSource is a compute-bound kernel: a chain of FMAs per thread.
const fmaSource = `
extern "C" __global__ void fma_chain(float* out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 0.999f;
    for (int i = 0; i < iters; ++i) { a = fmaf(a, b, 1e-3f); b = fmaf(b, 0.5f, a * 1e-6f); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b;
}
`

// sinSource is another latency-bound kernel: a chain of __sinf (SFU).
const sinSource = `
extern "C" __global__ void sin_chain(float* out, int iters) {
    float a = threadIdx.x * 1e-3f;
    for (int i = 0; i < iters; ++i) { a = __sinf(a) + 1e-3f; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
`

// Two different kernels in one plan, each with its own arguments: a
// memory-bound vector_add (verified) on stream 0 and a compute-bound FMA
// chain on stream 1. Per-launch and whole-plan times come from events,
// the plan's energy from the NVML counter. Then two latency-bound kernels
// of 66 thread blocks each (half the H100's SMs): on two streams they
// run side by side, in well under the time of one after the other.
func TestPlanTwoKernelsTwoStreams(t *testing.T) {
	ctx, b := openGPU(t)
	const N = 1 << 26
	const FMA = 132 * 4 * 256
	prob := &backend.Problem{Kernels: []backend.Kernel{
		{KernelName: "vector_add", Source: vectorAddSource, SourceName: "vector_add.cu", Language: "CUDA",
			Args: []backend.Arg{
				{Name: "c", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: -1}, Output: true},
				{Name: "a", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: 1}},
				{Name: "b", Type: "float", Kind: backend.ArgVector, Count: N, Fill: backend.Fill{Type: "Constant", Value: 2}},
				{Name: "n", Type: "int32", Kind: backend.ArgScalar, Scalar: N},
			},
			Verification: &backend.Verification{Method: MethodSideBySide, Expected: map[string]backend.Fill{"c": {Type: "Constant", Value: 3}}}},
		{KernelName: "fma_chain", Source: fmaSource, SourceName: "fma.cu", Language: "CUDA",
			Args: []backend.Arg{
				{Name: "out", Type: "float", Kind: backend.ArgVector, Count: FMA, Fill: backend.Fill{Type: "Constant"}},
				{Name: "iters", Type: "int32", Kind: backend.ArgScalar, Scalar: 20000},
			}},
	}}
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	va := &backend.Job{Kernel: 0, Key: "256", Defines: defines(256), Grid: [3]int{N / 256, 1, 1}, Block: [3]int{256, 1, 1}}
	fm := &backend.Job{Kernel: 1, Key: "256", Grid: [3]int{FMA / 256, 1, 1}, Block: [3]int{256, 1, 1}}
	vb, err := b.Compile(ctx, va)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.Compile(ctx, fm)
	if err != nil {
		t.Fatal(err)
	}
	run := func(streams [2]int, energy bool) *backend.Result {
		t.Helper()
		plan := &backend.Plan{Key: "vector_add|fma", Launches: []backend.Launch{{Job: va, Binary: vb, Stream: streams[0]}, {Job: fm, Binary: fb, Stream: streams[1]}},
			Measure: measure.Request{Iterations: 20, Verify: true, Energy: energy}}
		r, err := b.Run(ctx, plan)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != backend.StatusValid || len(r.Launches) != 2 || len(r.TimesMs) != 20 {
			t.Fatalf("streams %v: %s %s (%d launches, %d times)", streams, r.Status, r.Reason, len(r.Launches), len(r.TimesMs))
		}
		return r
	}
	get := func(r *backend.Result, name string, launch int, unit, method string) float64 {
		t.Helper()
		for _, o := range r.Observations {
			if o.Name == name && o.Launch == launch {
				if o.Unit != unit || o.Method != method {
					t.Errorf("%s[%d] = %+v; want unit %s, method %s", name, launch, o, unit, method)
				}
				return o.Value
			}
		}
		t.Fatalf("%s[%d] missing", name, launch)
		return 0
	}
	two := run([2]int{0, 1}, true)
	one := run([2]int{0, 0}, false)
	p2, a2, b2 := get(two, "time", measure.PlanScope, "ms", "cuda-events"), get(two, "time", 0, "ms", "cuda-events"), get(two, "time", 1, "ms", "cuda-events")
	p1, a1, b1 := get(one, "time", measure.PlanScope, "ms", "cuda-events"), get(one, "time", 0, "ms", "cuda-events"), get(one, "time", 1, "ms", "cuda-events")
	t.Logf("two streams: plan %.4f ms, vector_add %.4f ms, fma_chain %.4f ms", p2, a2, b2)
	t.Logf("one stream:  plan %.4f ms, vector_add %.4f ms, fma_chain %.4f ms", p1, a1, b1)
	if p2 < 0.95*max(a2, b2) || p2 > 1.05*(a2+b2) {
		t.Errorf("two streams: plan %v ms outside [max, sum] of launches %v and %v ms", p2, a2, b2)
	}
	if p1 < 0.98*(a1+b1) {
		t.Errorf("one stream: plan %v ms shorter than its launches one after the other (%v + %v ms)", p1, a1, b1)
	}
	if b.dev.HasEnergyCounter {
		e := get(two, "energy", measure.PlanScope, "J", "nvml-energy-counter")
		w := get(two, "power", measure.PlanScope, "W", "nvml-energy-counter")
		t.Logf("two streams: %.4f J per run of the plan, %.1f W", e, w)
		if e <= 0 || w < 50 || w > 1.2*b.dev.PowerLimitW+50 {
			t.Errorf("implausible energy %v J, power %v W", e, w)
		}
	}
}

func TestPlanConcurrentHalves(t *testing.T) {
	ctx, b := openGPU(t)
	blocks := max(b.dev.SMs/2, 1)
	out := func() []backend.Arg {
		return []backend.Arg{
			{Name: "out", Type: "float", Kind: backend.ArgVector, Count: int64(blocks * 256), Fill: backend.Fill{Type: "Constant"}},
			{Name: "iters", Type: "int32", Kind: backend.ArgScalar, Scalar: 20000},
		}
	}
	prob := &backend.Problem{Kernels: []backend.Kernel{
		{KernelName: "fma_chain", Source: fmaSource, SourceName: "fma.cu", Language: "CUDA", Args: out()},
		{KernelName: "sin_chain", Source: sinSource, SourceName: "sin.cu", Language: "CUDA", Args: out()},
	}}
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	var ls []backend.Launch
	for k := range 2 {
		j := &backend.Job{Kernel: k, Key: "256", Grid: [3]int{blocks, 1, 1}, Block: [3]int{256, 1, 1}}
		bin, err := b.Compile(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, backend.Launch{Job: j, Binary: bin, Stream: k})
	}
	plan := func(streams ...int) (float64, []float64) {
		p := &backend.Plan{Key: "halves", Launches: append([]backend.Launch(nil), ls...), Measure: measure.Request{Iterations: 10}}
		for i := range p.Launches {
			p.Launches[i].Stream = streams[i]
		}
		r, err := b.Run(ctx, p)
		if err != nil || r.Status != backend.StatusValid {
			t.Fatalf("streams %v: %+v %v", streams, r, err)
		}
		pt, _ := r.Observations.Get("time")
		a, _ := r.Observations.GetLaunch("time", 0)
		c, _ := r.Observations.GetLaunch("time", 1)
		return pt, []float64{a, c}
	}
	two, l2 := plan(0, 1)
	one, l1 := plan(0, 0)
	t.Logf("%d blocks each: two streams plan %.4f ms (launches %.4f, %.4f); one stream %.4f ms (%.4f, %.4f)", blocks, two, l2[0], l2[1], one, l1[0], l1[1])
	if two > 0.75*one {
		t.Errorf("two streams %v ms, one stream %v ms: the halves did not run side by side", two, one)
	}
}
