package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// A kernel with SMEM floats of static shared memory.
const sharedSource = `
extern "C" __global__ void stage(float* out) {
    __shared__ float tile[SMEM];
    tile[threadIdx.x % SMEM] = threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % SMEM];
}
`

// Resources reads, without a launch, exactly what Run reads before
// launching: static shared memory 4·SMEM bytes, and the same registers,
// local memory and thread-block limit. It needs a prepared problem only
// for Compile (one without arguments will do), and a binary the driver
// cannot load is an error naming the configuration that leaves the
// worker usable. Runs only with GTUNE_CUDA_TEST=1.
func TestIntegrationResources(t *testing.T) {
	ctx, b := openGPU(t)
	prob := backend.Single(backend.Kernel{KernelName: "stage", Source: sharedSource, SourceName: "stage.cu", Language: "CUDA"})
	if err := b.Prepare(ctx, prob); err != nil {
		t.Fatal(err)
	}
	jobOf := func(smem int) *tjob {
		return &tjob{Job: &backend.Job{Key: fmt.Sprint(smem), Defines: []backend.Define{{Name: "SMEM", Value: fmt.Sprint(smem)}}, Grid: [3]int{4, 1, 1}, Block: [3]int{256, 1, 1}}, Iterations: 3}
	}
	bins := map[int]*backend.Binary{}
	got := map[int]backend.Resources{}
	for _, smem := range []int{32, 1024, 8192} {
		j := jobOf(smem)
		bin, err := b.Compile(ctx, j.Job)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Resources(ctx, j.Job, bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("SMEM %d: %+v", smem, r)
		if r.SharedStaticBytes != 4*smem || r.Registers <= 0 || r.MaxThreadsPerBlock <= 0 {
			t.Errorf("SMEM %d: %+v, want %d bytes of static shared memory", smem, r, 4*smem)
		}
		bins[smem], got[smem] = bin, r
	}
	// Run against the full problem: the same attributes.
	full := prob.Kernels[0]
	full.Args = []backend.Arg{{Name: "out", Type: "float", Kind: backend.ArgVector, Count: 1024, Fill: backend.Fill{Type: "Constant"}, Output: true}}
	if err := b.Prepare(ctx, backend.Single(full)); err != nil {
		t.Fatal(err)
	}
	for smem, bin := range bins {
		res, err := runJob(ctx, b, jobOf(smem), bin)
		if err != nil || res.Status != backend.StatusValid {
			t.Fatalf("SMEM %d: %+v, %v", smem, res, err)
		}
		run := backend.Resources{Registers: res.Registers, SharedStaticBytes: res.SharedStaticBytes, LocalBytes: res.LocalBytes, MaxThreadsPerBlock: res.MaxThreadsPerBlock}
		if run != got[smem] {
			t.Errorf("SMEM %d: Resources %+v, Run %+v", smem, got[smem], run)
		}
	}
	bad := &backend.Binary{Image: append([]byte(nil), bins[32].Image[:len(bins[32].Image)/2]...)}
	if _, err := b.Resources(ctx, jobOf(7).Job, bad); err == nil || !strings.Contains(err.Error(), "configuration 7: ") {
		t.Errorf("truncated image: %v", err)
	}
	if r, err := b.Resources(ctx, jobOf(32).Job, bins[32]); err != nil || r != got[32] {
		t.Errorf("after a failure: %+v, %v", r, err)
	}
}
