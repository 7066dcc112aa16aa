// hotspot_step: one explicit time step of the HotSpot thermal model, in
// the spirit of Rodinia's hotspot (calculate_temp, one iteration per
// launch), written for gtune. Every cell of a grid_rows x grid_cols chip
// (row-major) is updated from its four neighbours (clamped at the chip's
// edges), its power and the ambient temperature:
//
//   out = T + step_div_cap * (power + (T_S + T_N - 2T) * ry_1
//                                   + (T_E + T_W - 2T) * rx_1
//                                   + (amb_temp - T) * rz_1)
//
// Each thread block stages its tile of temperatures with a one-cell halo
// in shared memory.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x, block_size_y   thread block shape (one cell per thread)
// Problem size and constants, passed in the spec's CompilerOptions:
//   grid_rows, grid_cols
//
// Every cell is computed by the same expression whatever the block shape,
// so all configurations give bit-identical outputs.

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef block_size_y
#error "block_size_y must be defined (-Dblock_size_y=...)"
#endif
#if !defined(grid_rows) || !defined(grid_cols)
#error "grid_rows and grid_cols must be defined"
#endif

// Rodinia's constants for a 16 mm x 16 mm chip, 0.5 mm thick.
#define AMB_TEMP 80.0f
#define STEP_DIV_CAP 2.1e-3f
#define RX_1 0.1f
#define RY_1 0.1f
#define RZ_1 3.2e-4f

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
hotspot_step(const float *__restrict__ power, const float *__restrict__ temp, float *__restrict__ out)
{
    __shared__ float t_s[block_size_y + 2][block_size_x + 2];
    const int c0 = blockIdx.x * block_size_x, r0 = blockIdx.y * block_size_y;
    const int tid = threadIdx.y * block_size_x + threadIdx.x;
    const int threads = block_size_x * block_size_y;
    // Tile plus halo, clamped to the chip: a clamped neighbour is the cell
    // itself, as Rodinia treats the edges.
    for (int e = tid; e < (block_size_y + 2) * (block_size_x + 2); e += threads) {
        const int rr = e / (block_size_x + 2), cc = e % (block_size_x + 2);
        const int r = min(max(r0 + rr - 1, 0), grid_rows - 1);
        const int c = min(max(c0 + cc - 1, 0), grid_cols - 1);
        t_s[rr][cc] = temp[(size_t)r * grid_cols + c];
    }
    __syncthreads();

    const int r = r0 + threadIdx.y, c = c0 + threadIdx.x;
    if (r >= grid_rows || c >= grid_cols)
        return;
    const int ty = threadIdx.y + 1, tx = threadIdx.x + 1;
    const float t = t_s[ty][tx];
    // At an edge the clamped halo already holds the cell's own value.
    const float n_ = r == 0 ? t : t_s[ty - 1][tx];
    const float s_ = r == grid_rows - 1 ? t : t_s[ty + 1][tx];
    const float w_ = c == 0 ? t : t_s[ty][tx - 1];
    const float e_ = c == grid_cols - 1 ? t : t_s[ty][tx + 1];
    const size_t i = (size_t)r * grid_cols + c;
    out[i] = t + STEP_DIV_CAP * (power[i] + (s_ + n_ - 2.0f * t) * RY_1 +
                                 (e_ + w_ - 2.0f * t) * RX_1 + (AMB_TEMP - t) * RZ_1);
}
