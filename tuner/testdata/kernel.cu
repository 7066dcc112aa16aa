extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = (blockIdx.x * block_size_x + threadIdx.x) * work_per_thread;
    for (int k = 0; k < work_per_thread; k++) {
        if (i + k < n) {
            c[i + k] = a[i + k] + b[i + k];
        }
    }
}
