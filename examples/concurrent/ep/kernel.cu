// ep_gauss: an EP-like memory-bound kernel, in the spirit of the NAS
// Parallel Benchmarks' EP kernel, written for gtune. The input holds n
// uniform numbers in [0, 1), taken as n/2 pairs (u, v). Every pair becomes
// two Gaussian deviates by the Marsaglia polar method that EP uses:
//
//   x = 2u - 1, y = 2v - 1, t = x^2 + y^2
//   if 0 < t <= 1:  f = sqrt(-2 ln t / t),  out = (x f, y f)
//   else:           out = (0, 0)              (rejected pair)
//
// out[i] depends on in[i] and its partner only, so every configuration
// (block size, grid size, shared-memory staging) writes bit-identical
// outputs. 16 bytes move per pair for about 12 FP32 operations and three
// special-function operations (lg2, rcp, sqrt): memory-bound.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x   threads per thread block
//   blocks_per_sm  thread blocks per SM; the grid is blocks_per_sm*num_sms
//                  (the kernel reads the grid from gridDim, grid-stride)
//   shared_kib     KiB of dynamic shared memory per block; when > 0 the
//                  block copies each chunk of shared_kib KiB of input into
//                  it (coalesced float4 loads), then computes from it
// Problem size, passed in the spec's CompilerOptions:
//   n              number of input (and output) floats, a multiple of 4

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef shared_kib
#error "shared_kib must be defined (-Dshared_kib=...)"
#endif
#ifndef n
#error "n must be defined"
#endif
#if n % 4 != 0
#error "n must be a multiple of 4"
#endif

#define NV (n / 4)                          // float4 (two pairs) per array
#define SH_FLOATS (shared_kib * 1024 / 4)   // floats of dynamic shared memory
#define SH_VEC (SH_FLOATS / 4)              // float4 per chunk

// The polar transform of one pair, written once and used by both paths so
// that they compute the same values.
__device__ __forceinline__ float2 polar_pair(float u, float v)
{
    const float x = 2.0f * u - 1.0f;
    const float y = 2.0f * v - 1.0f;
    const float t = x * x + y * y;
    float f = 0.0f;
    if (t > 0.0f && t <= 1.0f)
        f = sqrtf(__fdividef(-2.0f * __logf(t), t));
    float2 r;
    r.x = x * f;
    r.y = y * f;
    return r;
}

__device__ __forceinline__ float4 polar4(float4 a)
{
    const float2 p = polar_pair(a.x, a.y);
    const float2 q = polar_pair(a.z, a.w);
    float4 r;
    r.x = p.x;
    r.y = p.y;
    r.z = q.x;
    r.w = q.y;
    return r;
}

extern "C" __global__ void __launch_bounds__(block_size_x)
ep_gauss(const float4 *__restrict__ in, float4 *__restrict__ out)
{
#if shared_kib == 0
    // Direct grid-stride loop, four independent float4 loads in flight per
    // thread so that a small grid still keeps enough bytes in flight.
    const long stride = (long)gridDim.x * block_size_x;
    long i = (long)blockIdx.x * block_size_x + threadIdx.x;
    for (; i + 3 * stride < NV; i += 4 * stride) {
        const float4 a0 = in[i];
        const float4 a1 = in[i + stride];
        const float4 a2 = in[i + 2 * stride];
        const float4 a3 = in[i + 3 * stride];
        out[i] = polar4(a0);
        out[i + stride] = polar4(a1);
        out[i + 2 * stride] = polar4(a2);
        out[i + 3 * stride] = polar4(a3);
    }
    for (; i < NV; i += stride)
        out[i] = polar4(in[i]);
#else
    // Staged: the block walks chunks of SH_VEC float4 (grid-stride over
    // chunks), copies a chunk into shared memory, then transforms it.
    extern __shared__ __align__(16) float buf[];
    float4 *const s = reinterpret_cast<float4 *>(buf);
    for (long c0 = (long)blockIdx.x * SH_VEC; c0 < NV; c0 += (long)gridDim.x * SH_VEC) {
        const int len = (int)(NV - c0 < SH_VEC ? NV - c0 : SH_VEC);
#pragma unroll 4
        for (int k = threadIdx.x; k < len; k += block_size_x)
            s[k] = in[c0 + k];
        __syncthreads();
#pragma unroll 4
        for (int k = threadIdx.x; k < len; k += block_size_x)
            out[c0 + k] = polar4(s[k]);
        __syncthreads();
    }
#endif
}
