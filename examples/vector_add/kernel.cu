// vector_add: c = a + b for n single-precision elements.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x     threads per thread block (x)
//   work_per_thread  elements each thread adds
//
// Thread block b covers the block_size_x*work_per_thread consecutive
// elements starting at b*block_size_x*work_per_thread; thread t handles
// elements t, t+block_size_x, t+2*block_size_x, ... of that range, so every
// pass of the unrolled loop is a coalesced access by the whole warp. The
// grid is ceil(n / (block_size_x*work_per_thread)) thread blocks (spec:
// GlobalSizeType OpenCL, GridDivX [block_size_x, work_per_thread]); the
// bounds check covers the last, partly filled thread block.

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef work_per_thread
#define work_per_thread 1
#endif

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    // int is enough: the largest index formed is below n + block_size_x*work_per_thread.
    const int base = blockIdx.x * (block_size_x * work_per_thread) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < work_per_thread; k++) {
        const int i = base + k * block_size_x;
        if (i < n) {
            c[i] = a[i] + b[i];
        }
    }
}
