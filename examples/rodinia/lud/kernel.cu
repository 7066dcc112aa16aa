// lud_internal: the internal (trailing-matrix) update of a blocked LU
// decomposition, in the spirit of Rodinia's lud_internal, written for
// gtune. At step `lu_offset` (Rodinia's offset) of a right-looking blocked LU with strip width
// strip, once the diagonal block and the perimeter strips are factored,
// every element of the trailing matrix is updated in place:
//
//   A[i][j] -= sum_{k<strip} A[i][lu_offset+k] * A[lu_offset+k][j]
//   for lu_offset+strip <= i, j < n
//
// (L strip left of the trailing block, U strip above it). A is row-major
// n x n. Each thread block stages its block_size_y rows of the L strip
// and block_size_x columns of the U strip in shared memory (Rodinia's
// peri_row / peri_col) and each thread updates one element.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x, block_size_y   thread block shape (Rodinia: BLOCK_SIZE^2)
// Problem size, passed in the spec's CompilerOptions:
//   n, strip, lu_offset
//
// Each element sums over k in the same order whatever the block shape, so
// all configurations give bit-identical outputs.

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef block_size_y
#error "block_size_y must be defined (-Dblock_size_y=...)"
#endif
#if !defined(n) || !defined(strip) || !defined(lu_offset)
#error "n, strip and lu_offset must be defined"
#endif

// The minimum of 2048 / threads blocks per SM caps the registers at 32
// per thread, so that the spec's declaration (Registers 32) is an upper
// bound and every shape can reach full occupancy.
extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y, 2048 / (block_size_x * block_size_y))
lud_internal(float *a)
{
    __shared__ float l_s[block_size_y][strip];     // rows of the L strip
    __shared__ float u_s[strip][block_size_x];     // columns of the U strip

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i0 = lu_offset + strip + blockIdx.y * block_size_y;
    const int j0 = lu_offset + strip + blockIdx.x * block_size_x;
    const int tid = ty * block_size_x + tx;
    const int threads = block_size_x * block_size_y;

    for (int e = tid; e < block_size_y * strip; e += threads) {
        const int r = e / strip, k = e % strip;
        const int i = i0 + r;
        l_s[r][k] = i < n ? a[(size_t)i * n + lu_offset + k] : 0.0f;
    }
    for (int e = tid; e < strip * block_size_x; e += threads) {
        const int k = e / block_size_x, c = e % block_size_x;
        const int j = j0 + c;
        u_s[k][c] = j < n ? a[(size_t)(lu_offset + k) * n + j] : 0.0f;
    }
    __syncthreads();

    const int i = i0 + ty, j = j0 + tx;
    if (i >= n || j >= n)
        return;
    float sum = 0.0f;
#pragma unroll 16
    for (int k = 0; k < strip; k++)
        sum += l_s[ty][k] * u_s[k][tx];
    a[(size_t)i * n + j] -= sum;
}
