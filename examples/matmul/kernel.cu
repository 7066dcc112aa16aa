// matmul_kernel: C = A * B for square, row-major, single-precision matrices
// of order WIDTH, tiled in shared memory.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x, block_size_y   thread block shape
//   tile_size_x, tile_size_y     outputs per thread in x (columns) and y (rows)
// Problem size, passed in the spec's CompilerOptions:
//   WIDTH                        matrix order n
//
// A thread block computes a TILE x TILE tile of C, where
//   TILE = block_size_x*tile_size_x = block_size_y*tile_size_y
// (the spec's restriction; checked again below at compile time). It walks
// the k dimension in steps of TILE, staging a TILE x TILE tile of A and one
// of B in shared memory. Thread (tx, ty) owns the outputs at tile rows
// ty + i*block_size_y (i < tile_size_y) and tile columns tx + j*block_size_x
// (j < tile_size_x): strided, so that neighbouring threads of a warp touch
// neighbouring columns (coalesced stores, conflict-free reads of the B tile).
// The A tile's rows are padded by one float so that threads of a warp with
// different ty read different shared-memory banks.
//
// Each tile holds TILE*TILE = (block_size_x*block_size_y) *
// (tile_size_x*tile_size_y) elements, so each thread loads exactly
// tile_size_x*tile_size_y elements of A and as many of B per step: no bounds
// checks, provided WIDTH is a multiple of TILE (checked below).
//
// Every output is accumulated over k = 0 .. WIDTH-1 in increasing order in
// every configuration, so all configurations give the same result.
//
// Static shared memory: 4*(TILE*(TILE+1) + TILE*TILE) bytes; the spec keeps
// it at or below 48 KiB (TILE <= 64).
//
// Grid: (WIDTH/TILE) x (WIDTH/TILE) thread blocks (spec: GlobalSizeType
// OpenCL, GlobalSize n x n, GridDivX [block_size_x, tile_size_x], GridDivY
// [block_size_y, tile_size_y]).

#ifndef WIDTH
#error "WIDTH (matrix order) must be defined (-DWIDTH=...)"
#endif
#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef block_size_y
#error "block_size_y must be defined (-Dblock_size_y=...)"
#endif
#ifndef tile_size_x
#error "tile_size_x must be defined (-Dtile_size_x=...)"
#endif
#ifndef tile_size_y
#error "tile_size_y must be defined (-Dtile_size_y=...)"
#endif

#define TILE (block_size_x * tile_size_x)
#define NTHREADS (block_size_x * block_size_y)
#define LOADS_PER_THREAD (tile_size_x * tile_size_y)

static_assert(block_size_x * tile_size_x == block_size_y * tile_size_y,
              "restriction: block_size_x*tile_size_x == block_size_y*tile_size_y");
static_assert(WIDTH % TILE == 0, "WIDTH must be a multiple of block_size_x*tile_size_x");
static_assert(NTHREADS <= 1024, "at most 1024 threads per thread block");

extern "C" __global__ void matmul_kernel(float *C, const float *A, const float *B)
{
    __shared__ float sA[TILE][TILE + 1];
    __shared__ float sB[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;

    // First row of A (and C) and first column of B (and C) of this block.
    const float *Ablock = A + (size_t)blockIdx.y * TILE * WIDTH;
    const float *Bblock = B + (size_t)blockIdx.x * TILE;

    float sum[tile_size_y][tile_size_x];
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
#pragma unroll
        for (int j = 0; j < tile_size_x; j++) {
            sum[i][j] = 0.0f;
        }
    }

    for (int k0 = 0; k0 < WIDTH; k0 += TILE) {
        const float *Atile = Ablock + k0;                  // rows of the block, columns k0..
        const float *Btile = Bblock + (size_t)k0 * WIDTH;  // rows k0.., columns of the block

        // Cooperative, coalesced loads: consecutive threads read consecutive
        // elements of a tile row.
#pragma unroll
        for (int l = 0; l < LOADS_PER_THREAD; l++) {
            const int e = tid + l * NTHREADS;  // 0 .. TILE*TILE-1
            const int r = e / TILE;
            const int c = e % TILE;
            sA[r][c] = Atile[r * WIDTH + c];
            sB[r][c] = Btile[r * WIDTH + c];
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < TILE; kk++) {
            float a[tile_size_y];
            float b[tile_size_x];
#pragma unroll
            for (int i = 0; i < tile_size_y; i++) {
                a[i] = sA[ty + i * block_size_y][kk];
            }
#pragma unroll
            for (int j = 0; j < tile_size_x; j++) {
                b[j] = sB[kk][tx + j * block_size_x];
            }
#pragma unroll
            for (int i = 0; i < tile_size_y; i++) {
#pragma unroll
                for (int j = 0; j < tile_size_x; j++) {
                    sum[i][j] += a[i] * b[j];
                }
            }
        }
        // The next iteration overwrites the tiles.
        __syncthreads();
    }

    float *Cblock = C + (size_t)blockIdx.y * TILE * WIDTH + (size_t)blockIdx.x * TILE;
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
#pragma unroll
        for (int j = 0; j < tile_size_x; j++) {
            Cblock[(ty + i * block_size_y) * WIDTH + tx + j * block_size_x] = sum[i][j];
        }
    }
}
