// gtune's microbenchmarks (package probe): a device profile in the sense
// of performance-projection-heterogeneous-gpus.md section IV-B. Each
// kernel is compiled with NVRTC and run through gtune's backend like any
// tuned kernel. Arithmetic is written as inline PTX so that NVRTC can
// neither fold nor reassociate it: the instructions counted are the
// instructions run. Results are stored only under a condition that never
// holds, so that nothing is dead code.
#ifndef ITERS
#define ITERS 512
#endif
#ifndef REPEAT
#define REPEAT 4
#endif
#ifndef CHAINS
#define CHAINS 8
#endif
#define UNROLL 16

extern "C" __global__ void probe_fp32(float *out) {
    float a[CHAINS];
    for (int c = 0; c < CHAINS; c++) a[c] = threadIdx.x * 1e-7f + c;
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
#pragma unroll
            for (int c = 0; c < CHAINS; c++)
                asm volatile("fma.rn.f32 %0, %0, 0f3F7FFFEF, 0f33D6BF95;" : "+f"(a[c]));
        }
    }
    float s = 0;
    for (int c = 0; c < CHAINS; c++) s += a[c];
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// FP32 FMAs whose three operands are registers holding different values
// (a = b·x + a, x rotating over the chains), as a GEMM's inner loop issues
// them: the register-file reads and operand toggling that probe_fp32's
// immediates avoid.
extern "C" __global__ void probe_fp32r(float *out) {
    float a[CHAINS], b[CHAINS], x[CHAINS];
    for (int c = 0; c < CHAINS; c++) {
        a[c] = threadIdx.x * 1e-7f + c;
        b[c] = 0.9990f + (threadIdx.x ^ (c * 2654435761u)) * 1e-12f;
        x[c] = __int_as_float(0x3a800000 | ((threadIdx.x * 40503u + c * 9973u) & 0x7fffff));
    }
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
#pragma unroll
            for (int c = 0; c < CHAINS; c++)
                asm volatile("fma.rn.f32 %0, %1, %2, %0;" : "+f"(a[c]) : "f"(b[c]), "f"(x[(c + k) % CHAINS]));
        }
    }
    float s = 0;
    for (int c = 0; c < CHAINS; c++) s += a[c];
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void probe_fp64(double *out) {
    double a[CHAINS];
    for (int c = 0; c < CHAINS; c++) a[c] = threadIdx.x * 1e-7 + c;
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
#pragma unroll
            for (int c = 0; c < CHAINS; c++)
                asm volatile("fma.rn.f64 %0, %0, 0d3FEFFFFFDE7210BE, 0d3E7AD7F29ABCAF48;" : "+d"(a[c]));
        }
    }
    double s = 0;
    for (int c = 0; c < CHAINS; c++) s += a[c];
    if (s == -1.0) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void probe_int(int *out) {
    int a[CHAINS];
    int b = threadIdx.x | 1, d = blockIdx.x;
    for (int c = 0; c < CHAINS; c++) a[c] = threadIdx.x + c;
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
#pragma unroll
            for (int c = 0; c < CHAINS; c++)
                asm volatile("mad.lo.s32 %0, %0, %1, %2;" : "+r"(a[c]) : "r"(b), "r"(d));
        }
    }
    int s = 0;
    for (int c = 0; c < CHAINS; c++) s += a[c];
    if (s == -1) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void probe_sfu(float *out) {
    float a[CHAINS];
    for (int c = 0; c < CHAINS; c++) a[c] = threadIdx.x * 1e-3f + c;
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
#pragma unroll
            for (int c = 0; c < CHAINS; c++)
                asm volatile("sin.approx.f32 %0, %0;" : "+f"(a[c]));
        }
    }
    float s = 0;
    for (int c = 0; c < CHAINS; c++) s += a[c];
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Coalesced loads of n float4, each once, grid-stride.
extern "C" __global__ void probe_read(const float4 *__restrict__ in, float *out, long long n) {
    float4 acc = make_float4(0, 0, 0, 0);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float4 v = in[i];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    if (acc.x + acc.y + acc.z + acc.w == -1.0f) out[0] = acc.x;
}

// Coalesced stores of n float4, each once, grid-stride.
extern "C" __global__ void probe_write(float4 *out, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    float4 v = make_float4(threadIdx.x, 1, 2, 3);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = v;
}

// Coalesced loads of n floats, each once, grid-stride: the same loop as
// probe_read with a quarter of the bytes in flight per thread, as kernels
// that load one float a thread (vector_add, a stencil) have.
extern "C" __global__ void probe_read32(const float *__restrict__ in, float *out, long long n) {
    float acc = 0;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        acc += in[i];
    if (acc == -1.0f) out[0] = acc;
}

// Coalesced copy of n float4, each loaded once and stored once,
// grid-stride: loads and stores sharing the DRAM at once, as most kernels
// do (vector_add, a stencil), which the read and write microbenchmarks
// alone do not show.
extern "C" __global__ void probe_copy(const float4 *__restrict__ in, float4 *out, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = in[i];
}

// One float loaded from each 32-byte sector of n floats: a warp's loads
// touch 32 sectors, each used for 4 of its 32 bytes.
extern "C" __global__ void probe_strided(const float *__restrict__ in, float *out, long long n) {
    float acc = 0;
    long long sectors = n / 8, stride = (long long)gridDim.x * blockDim.x;
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < sectors; s += stride)
        acc += in[s * 8];
    if (acc == -1.0f) out[0] = acc;
}

// Shared-memory loads: STRIDE 1 is conflict-free (a warp reads 32
// consecutive words), STRIDE 32 puts every lane on one bank (32-way
// conflicts). Offsets are immediate; volatile keeps the loads in the loop.
#ifndef STRIDE
#define STRIDE 1
#endif
#define SHARED_FLOATS 1024
extern "C" __global__ void probe_shared(float *out) {
    __shared__ float s[SHARED_FLOATS];
    for (int i = threadIdx.x; i < SHARED_FLOATS; i += blockDim.x) s[i] = i;
    __syncthreads();
    int lane = threadIdx.x & 31;
    volatile float *p = s + lane * STRIDE;
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
        for (int k = 0; k < UNROLL; k += 4) {
            a0 += p[(k + 0) * (33 - STRIDE)];
            a1 += p[(k + 1) * (33 - STRIDE)];
            a2 += p[(k + 2) * (33 - STRIDE)];
            a3 += p[(k + 3) * (33 - STRIDE)];
        }
    }
    if (a0 + a1 + a2 + a3 == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = a0;
}

// Loads of n float4 REPEAT times over: a working set that L2 holds.
extern "C" __global__ void probe_l2(const float4 *__restrict__ in, float *out, long long n) {
    float4 acc = make_float4(0, 0, 0, 0);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int r = 0; r < REPEAT; r++)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            float4 v = in[i];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    if (acc.x + acc.y + acc.z + acc.w == -1.0f) out[0] = acc.x;
}

extern "C" __global__ void probe_empty() {}

// Resident warps that issue almost nothing: each thread sleeps ITERS
// times for about SLEEP_NS ns (PTX nanosleep, compute capability 7.0 on).
// The board's power over it is that of SMs holding blocks without
// issuing, the power model's Busy term; on one 32-thread block, that of
// a GPU at its running clock with one SM busy (ClockedIdle).
#ifndef SLEEP_NS
#define SLEEP_NS 1000
#endif
extern "C" __global__ void probe_busy(float *out) {
    for (int i = 0; i < ITERS; i++) asm volatile("nanosleep.u32 %0;" ::"n"(SLEEP_NS));
    if (threadIdx.x == 1u << 20) out[0] = 1.0f;
}
