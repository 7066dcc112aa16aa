extern "C" __global__ void vadd(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x * tile + threadIdx.x;
    for (int t = 0; t < tile; t++, i += block_size_x) {
        if (i < n) c[i] = a[i] + b[i];
    }
}
