// stencil_kernel: one sweep of the 2D 5-point stencil of Listing 3.1 in
// autotuning-energy-efficiency-power-capping.md (section 3.2.1). Every
// interior point of x_new becomes the average of the same point of x_old and
// its four neighbours; the boundary rows and columns of x_new are never
// written. Arrays are row-major, domain_height rows of domain_width floats.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x, block_size_y   thread block shape
// Problem size, passed in the spec's CompilerOptions:
//   domain_width, domain_height
//
// The grid is ceil(domain_width/block_size_x) x ceil(domain_height/block_size_y)
// thread blocks (spec: GlobalSizeType CUDA); threads outside the interior
// do nothing.

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef block_size_y
#error "block_size_y must be defined (-Dblock_size_y=...)"
#endif
#ifndef domain_width
#error "domain_width must be defined (-Ddomain_width=...)"
#endif
#ifndef domain_height
#error "domain_height must be defined (-Ddomain_height=...)"
#endif

extern "C" __global__ void stencil_kernel(float *x_new, const float *x_old)
{
    const int x = blockIdx.x * block_size_x + threadIdx.x;
    const int y = blockIdx.y * block_size_y + threadIdx.y;

    if (y > 0 && y < domain_height - 1 && x > 0 && x < domain_width - 1) {
        // 64-bit so that domains beyond 2^31 points stay correct.
        const size_t i = (size_t)y * domain_width + x;
        // Same summation order as Listing 3.1, so every configuration
        // produces bit-identical results.
        x_new[i] = (x_old[i] +
                    x_old[i - 1] +
                    x_old[i + 1] +
                    x_old[i + domain_width] +
                    x_old[i - domain_width]) / 5.0f;
    }
}
