// coulomb_slice: direct Coulomb summation on one 2D slice of a lattice, in
// the style of VMD's cionize / direct Coulomb summation (the ES kernel of
// the symbiotic-scheduling paper), written for gtune.
//
// The lattice slice has grid_x * grid_y points spaced GRID_SPACING (0.1 A)
// apart at height SLICE_Z (the middle of the box). The num_atoms atoms lie
// in the box [0, grid_x*h) x [0, grid_x*h) x [0, grid_x*h): atom a is read
// as four uniform numbers (u0, u1, u2, u3) giving its position u0..u2
// times the box edge and its charge 2*u3 - 1. Every lattice point gets
//
//   potential[p] = sum_a q_a / sqrt(|r_p - r_a|^2 + SOFTENING)
//
// (the small softening keeps an atom that happens to lie on the slice
// finite). The block stages the atoms tile by tile in shared memory as
// (x, y, dz^2 + softening, q); each thread accumulates one lattice point
// over all atoms in atom order, so every configuration (block size, grid
// size, tile size) writes bit-identical outputs. One interaction costs
// 2 subtractions, 3 FMA and one rsqrt: compute-bound (special-function
// unit and FP32), with shared-memory broadcast loads.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x   threads per thread block (one lattice point per thread)
//   blocks_per_sm  thread blocks per SM; the grid is blocks_per_sm*num_sms
//                  (the kernel reads the grid from gridDim, grid-stride)
//   shared_kib     KiB of dynamic shared memory per block: 0 stages the
//                  atoms through a static tile of STATIC_TILE atoms (4 KiB);
//                  > 0 stages them through the dynamic buffer instead,
//                  shared_kib*64 atoms per tile (fewer reloads and
//                  barriers; 64 KiB and more hold all 4000 atoms)
// Problem size, passed in the spec's CompilerOptions:
//   grid_x, grid_y  lattice points of the slice
//   num_atoms       atoms

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef shared_kib
#error "shared_kib must be defined (-Dshared_kib=...)"
#endif
#if !defined(grid_x) || !defined(grid_y) || !defined(num_atoms)
#error "grid_x, grid_y and num_atoms must be defined"
#endif

#define GRID_SPACING 0.1f
#define BOX ((float)grid_x * GRID_SPACING)  // edge of the atom box
#define SLICE_Z (0.5f * BOX)
#define SOFTENING 0.01f
#define NPOINTS (grid_x * grid_y)
#define STATIC_TILE 256                     // atoms per tile without dynamic shared memory
#define SH_FLOATS (shared_kib * 1024 / 4)   // floats of dynamic shared memory

#if shared_kib == 0
#define TILE STATIC_TILE
#else
#define TILE (SH_FLOATS / 4)
#endif

extern "C" __global__ void __launch_bounds__(block_size_x)
coulomb_slice(const float4 *__restrict__ atoms, float *__restrict__ potential)
{
#if shared_kib == 0
    __shared__ float4 tile[STATIC_TILE];
#else
    extern __shared__ __align__(16) float buf[];
    float4 *const tile = reinterpret_cast<float4 *>(buf);
    // Clear the whole buffer once, so that all of it is touched even when
    // the atoms fill only part of a tile.
    for (int k = threadIdx.x; k < SH_FLOATS; k += block_size_x)
        buf[k] = 0.0f;
#endif

    // Grid-stride over groups of block_size_x consecutive lattice points;
    // every thread of the block takes part in each group (the barriers are
    // uniform), a thread past the last point computes but does not store.
    for (int base = blockIdx.x * block_size_x; base < NPOINTS; base += gridDim.x * block_size_x) {
        const int p = base + threadIdx.x;
        const float px = (float)(p % grid_x) * GRID_SPACING;
        const float py = (float)(p / grid_x) * GRID_SPACING;
        float acc = 0.0f;
        for (int a0 = 0; a0 < num_atoms; a0 += TILE) {
            const int len = num_atoms - a0 < TILE ? num_atoms - a0 : TILE;
            __syncthreads(); // the previous tile (or the clearing) is done
            for (int k = threadIdx.x; k < len; k += block_size_x) {
                const float4 a = atoms[a0 + k];
                const float dz = a.z * BOX - SLICE_Z;
                float4 t;
                t.x = a.x * BOX;
                t.y = a.y * BOX;
                t.z = fmaf(dz, dz, SOFTENING);
                t.w = 2.0f * a.w - 1.0f;
                tile[k] = t;
            }
            __syncthreads();
#pragma unroll 8
            for (int k = 0; k < len; k++) {
                const float4 a = tile[k];
                const float dx = px - a.x;
                const float dy = py - a.y;
                const float r2 = fmaf(dx, dx, fmaf(dy, dy, a.z));
                acc = fmaf(a.w, rsqrtf(r2), acc);
            }
        }
        if (p < NPOINTS)
            potential[p] = acc;
    }
}
