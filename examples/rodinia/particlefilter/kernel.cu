// particlefilter_likelihood: the likelihood kernel of a particle filter
// tracking a bright disk in a video frame, in the spirit of Rodinia's
// particlefilter (likelihood_kernel), written for gtune. For every
// particle p at (x[p], y[p]) it samples the frame at the pixels of a disk
// of radius disk_radius around the particle's rounded position (clamped
// to the frame) and averages Rodinia's log-likelihood of "object" pixel
// intensity 228 against background 100 (both with variance 25):
//
//   likelihood[p] = (1/ones) * sum_j ((I[j] - 100)^2 - (I[j] - 228)^2) / 50
//
// Rodinia precomputes the disk's offsets (objxy); here they are
// enumerated in the loop (dy, dx in [-R, R] with dx^2 + dy^2 <= R^2), the
// same for every thread, so the test never diverges.
//
// Tunable parameter, passed by gtune as -Dname=value:
//   block_size_x   threads per thread block (one particle per thread)
// Problem size, passed in the spec's CompilerOptions:
//   num_particles, frame_width, frame_height, disk_radius
//
// Each particle sums in the same order whatever the block size, so all
// configurations give bit-identical outputs.

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#if !defined(num_particles) || !defined(frame_width) || !defined(frame_height) || !defined(disk_radius)
#error "num_particles, frame_width, frame_height and disk_radius must be defined"
#endif

extern "C" __global__ void __launch_bounds__(block_size_x)
particlefilter_likelihood(const float *__restrict__ x, const float *__restrict__ y,
                          const float *__restrict__ frame, float *__restrict__ likelihood)
{
    const int p = blockIdx.x * block_size_x + threadIdx.x;
    if (p >= num_particles)
        return;
    const int px = (int)floorf(x[p] + 0.5f);
    const int py = (int)floorf(y[p] + 0.5f);
    float sum = 0.0f;
    int ones = 0;
    for (int dy = -disk_radius; dy <= disk_radius; dy++) {
        const int iy = min(max(py + dy, 0), frame_height - 1);
        for (int dx = -disk_radius; dx <= disk_radius; dx++) {
            if (dx * dx + dy * dy > disk_radius * disk_radius)
                continue;
            const int ix = min(max(px + dx, 0), frame_width - 1);
            const float v = frame[iy * frame_width + ix];
            sum += ((v - 100.0f) * (v - 100.0f) - (v - 228.0f) * (v - 228.0f)) / 50.0f;
            ones++;
        }
    }
    likelihood[p] = sum / (float)ones;
}
