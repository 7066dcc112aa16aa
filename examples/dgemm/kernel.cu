// dgemm_beast: C = A * B for square, column-major, double-precision
// matrices of order SIZE, in the scheme of the BEAST DGEMM kernels of
// autotuning-gemm-energy-beast.md (Figure 3; MAGMA's Fermi GEMM).
//
// Tunable parameters, passed by gtune as -Dname=value (Figure 3, lines 1-10):
//   dim_m, dim_n        thread block shape (threadIdx.x along m, y along n)
//   blk_m, blk_n        the tile of C a thread block computes (blk_m x blk_n)
//   blk_k               the depth of the stripes of A and B staged in shared
//                       memory per step
//   blk_m_a, blk_n_a    the shape of the threads reading A's stripe
//                       (blk_m x blk_k): blk_m_a*blk_n_a = dim_m*dim_n
//   blk_m_b, blk_n_b    the same for B's stripe (blk_k x blk_n)
//   simd                1: the stripes are read as double2, two doubles down
//                       a column (column-major: contiguous, 16-byte aligned)
// Problem size, passed in the spec's CompilerOptions:
//   SIZE                matrix order n
//
// Thread (idx, idy) keeps the (blk_m/dim_m) x (blk_n/dim_n) outputs at tile
// rows idx + i*dim_m and columns idy + j*dim_n in registers: strided, so that
// a warp's threads read neighbouring doubles of A's stripe and store
// neighbouring doubles of C. Every output is accumulated over k = 0..SIZE-1
// in increasing order with fma in every configuration, so all configurations
// give the same result bit for bit.
//
// Static shared memory: 8*(blk_m*blk_k + blk_k*blk_n) bytes, at most 48 KiB
// (the space's filter shared_memory). The loops have no bounds checks: SIZE
// must be a multiple of blk_m, blk_n and blk_k, and the reading threads must
// tile the stripes exactly; both are checked below at compile time, so a
// configuration that breaks them fails to compile rather than computing a
// wrong answer.

#define TM (blk_m / dim_m)
#define TN (blk_n / dim_n)
#define V (simd + 1)

static_assert(blk_m % dim_m == 0 && blk_n % dim_n == 0, "the thread block tiles C's tile");
static_assert(SIZE % blk_m == 0 && SIZE % blk_n == 0 && SIZE % blk_k == 0, "SIZE is a multiple of the tiles");
static_assert(blk_m_a * blk_n_a == dim_m * dim_n && blk_m_b * blk_n_b == dim_m * dim_n, "every thread reads");
static_assert(blk_m % (blk_m_a * V) == 0 && blk_k % blk_n_a == 0, "A's readers tile its stripe");
static_assert(blk_k % (blk_m_b * V) == 0 && blk_n % blk_n_b == 0, "B's readers tile its stripe");

extern "C" __global__ void __launch_bounds__(dim_m * dim_n)
dgemm_beast(double *__restrict__ C, const double *__restrict__ A, const double *__restrict__ B)
{
    __shared__ double sA[blk_k][blk_m]; // A's stripe, by column
    __shared__ double sB[blk_n][blk_k]; // B's stripe, by column
    const int idx = threadIdx.x, idy = threadIdx.y;
    const int tid = idy * dim_m + idx;
    const int xa = tid % blk_m_a, ya = tid / blk_m_a;
    const int xb = tid % blk_m_b, yb = tid / blk_m_b;
    const size_t row0 = (size_t)blockIdx.x * blk_m, col0 = (size_t)blockIdx.y * blk_n;

    double rC[TN][TM];
#pragma unroll
    for (int j = 0; j < TN; j++)
#pragma unroll
        for (int i = 0; i < TM; i++)
            rC[j][i] = 0.0;

    for (int k0 = 0; k0 < SIZE; k0 += blk_k) {
#pragma unroll
        for (int jj = 0; jj < blk_k / blk_n_a; jj++) {
            const int j = ya + jj * blk_n_a;
#pragma unroll
            for (int ii = 0; ii < blk_m / (blk_m_a * V); ii++) {
                const int i = (xa + ii * blk_m_a) * V;
                const double *p = A + (size_t)(k0 + j) * SIZE + row0 + i;
#if simd
                const double2 v = *(const double2 *)p;
                sA[j][i] = v.x;
                sA[j][i + 1] = v.y;
#else
                sA[j][i] = *p;
#endif
            }
        }
#pragma unroll
        for (int jj = 0; jj < blk_n / blk_n_b; jj++) {
            const int j = yb + jj * blk_n_b;
#pragma unroll
            for (int ii = 0; ii < blk_k / (blk_m_b * V); ii++) {
                const int i = (xb + ii * blk_m_b) * V;
                const double *p = B + (col0 + j) * SIZE + k0 + i;
#if simd
                const double2 v = *(const double2 *)p;
                sB[j][i] = v.x;
                sB[j][i + 1] = v.y;
#else
                sB[j][i] = *p;
#endif
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < blk_k; k++) {
            double ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; i++)
                ra[i] = sA[k][i * dim_m + idx];
#pragma unroll
            for (int j = 0; j < TN; j++)
                rb[j] = sB[j * dim_n + idy][k];
#pragma unroll
            for (int j = 0; j < TN; j++)
#pragma unroll
                for (int i = 0; i < TM; i++)
                    rC[j][i] = fma(ra[i], rb[j], rC[j][i]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < TN; j++)
#pragma unroll
        for (int i = 0; i < TM; i++)
            C[(col0 + j * dim_n + idy) * SIZE + row0 + i * dim_m + idx] = rC[j][i];
}
