// streamcluster_cost: the cost kernel of a streaming k-median step, in the
// spirit of Rodinia's streamcluster (pgain's kernel_compute_cost), written
// for gtune. For every point p it computes the weighted squared distance
// to each of num_centers candidate centres, and writes the closest
// candidate and the gain of moving p to it:
//
//   d_c      = weight[p] * sum_k (coord[k][p] - centers[c][k])^2
//   assign[p] = argmin_c d_c          (the lowest c on a tie)
//   gain[p]   = max(0, cost[p] - min_c d_c)
//
// coord is stored dimension-major (coord[k*num_points + p]) as Rodinia
// does, so that consecutive threads read consecutive addresses. The
// candidate centres are staged in shared memory by each thread block.
//
// Tunable parameter, passed by gtune as -Dname=value:
//   block_size_x   threads per thread block (one point per thread)
// Problem size, passed in the spec's CompilerOptions:
//   num_points, dim, num_centers
//
// Every thread sums in the same order whatever the block size, so all
// configurations give bit-identical outputs.

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#if !defined(num_points) || !defined(dim) || !defined(num_centers)
#error "num_points, dim and num_centers must be defined"
#endif

extern "C" __global__ void __launch_bounds__(block_size_x)
streamcluster_cost(const float *__restrict__ coord, const float *__restrict__ weight,
                   const float *__restrict__ cost, const float *__restrict__ centers,
                   float *__restrict__ gain, int *__restrict__ assign)
{
    __shared__ float c_s[num_centers * dim];
    for (int i = threadIdx.x; i < num_centers * dim; i += block_size_x)
        c_s[i] = centers[i];
    __syncthreads();

    const long p = (long)blockIdx.x * block_size_x + threadIdx.x;
    if (p >= num_points)
        return;

    float d[num_centers];
#pragma unroll
    for (int c = 0; c < num_centers; c++)
        d[c] = 0.0f;
    for (int k = 0; k < dim; k++) {
        const float x = coord[(long)k * num_points + p];
#pragma unroll
        for (int c = 0; c < num_centers; c++) {
            const float diff = x - c_s[c * dim + k];
            d[c] += diff * diff;
        }
    }
    const float w = weight[p];
    int best = 0;
    float best_cost = w * d[0];
#pragma unroll
    for (int c = 1; c < num_centers; c++) {
        const float x_cost = w * d[c];
        if (x_cost < best_cost) {
            best_cost = x_cost;
            best = c;
        }
    }
    assign[p] = best;
    gain[p] = fmaxf(0.0f, cost[p] - best_cost);
}
