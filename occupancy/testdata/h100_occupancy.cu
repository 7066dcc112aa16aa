// h100_occupancy.cu generates h100_occupancy.csv.gz: the CUDA driver's own
// answer (cuOccupancyMaxActiveBlocksPerMultiprocessor) for real compiled
// kernels on the GPU it runs on (an H100 SXM5 for the checked-in table).
//
// The kernels are one template compiled for increasing register pressure
// (N values kept live across a loop, so the compiler assigns about N
// registers), the same heavy kernel under several __launch_bounds__ (the
// compiler caps its registers), and kernels with static shared memory. For
// each kernel the program reads the registers per thread and static shared
// memory the compiler assigned (cuFuncGetAttribute), allows the opt-in
// dynamic shared memory (cuFuncSetAttribute
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, a function attribute;
// no device setting is changed), and queries the occupancy for every block
// size that is a multiple of 32 up to the kernel's limit and a list of
// dynamic shared-memory sizes up to the opt-in maximum. A subset of kernels
// is queried under explicit shared-memory carveout preferences
// (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, again per function;
// -1 is the driver default).
//
// Build and run (the device's driver and nvcc; read-only):
//   nvcc -arch=sm_90 -o /tmp/occ h100_occupancy.cu -lcuda && /tmp/occ | gzip -9 > h100_occupancy.csv.gz
//
// Output: '#' comment lines (device attributes), then CSV with the header
// block_size,registers,static_shared,dynamic_shared,carveout_pct,active_blocks
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorString(r_, &s_); fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); exit(1); } } while (0)
#define RK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(r_)); exit(1); } } while (0)

// N live values updated in a chain each iteration: all N stay in registers.
template <int N, int S>
__global__ void pressure(const float* __restrict__ in, float* out, int iters) {
  float v[N];
#pragma unroll
  for (int i = 0; i < N; i++) v[i] = in[threadIdx.x + i * blockDim.x];
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = v[i] * v[(i + 1) % N] + v[(i + 7) % N];
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N; i++) s += v[i];
  if constexpr (S > 0) {
    __shared__ unsigned char sh[S];
    sh[threadIdx.x % S] = (unsigned char)s;
    __syncthreads();
    s += sh[(threadIdx.x + 1) % S];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

#define BOUNDED(T, B)                                                                  \
  __global__ void __launch_bounds__(T, B) bounded_##T##_##B(const float* __restrict__ in, float* out, int iters) { \
    float v[160];                                                                      \
    _Pragma("unroll") for (int i = 0; i < 160; i++) v[i] = in[threadIdx.x + i * blockDim.x]; \
    for (int it = 0; it < iters; it++) {                                               \
      _Pragma("unroll") for (int i = 0; i < 160; i++) v[i] = v[i] * v[(i + 1) % 160] + v[(i + 7) % 160]; \
    }                                                                                  \
    float s = 0;                                                                       \
    _Pragma("unroll") for (int i = 0; i < 160; i++) s += v[i];                         \
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;                                    \
  }
BOUNDED(1024, 1)
BOUNDED(1024, 2)
BOUNDED(768, 1)
BOUNDED(640, 1)
BOUNDED(512, 1)
BOUNDED(512, 3)
BOUNDED(384, 2)
BOUNDED(256, 5)
BOUNDED(256, 3)
BOUNDED(128, 8)
BOUNDED(128, 6)

struct K { const char* name; const void* fn; bool carveouts; };

static std::vector<K> kernels() {
  std::vector<K> k;
#define P(N, S, C) k.push_back({"pressure<" #N "," #S ">", (const void*)pressure<N, S>, C});
  P(1, 0, true) P(2, 0, false) P(4, 0, false) P(8, 0, false) P(12, 0, false) P(16, 0, false)
  P(20, 0, false) P(24, 0, false) P(28, 0, true) P(32, 0, false) P(36, 0, false) P(40, 0, false)
  P(44, 0, false) P(48, 0, false) P(56, 0, false) P(64, 0, true) P(72, 0, false) P(80, 0, false)
  P(88, 0, false) P(96, 0, false) P(104, 0, false) P(112, 0, false) P(120, 0, false) P(128, 0, false)
  P(144, 0, false) P(160, 0, false) P(176, 0, false) P(192, 0, false) P(208, 0, false) P(224, 0, false)
  P(240, 0, false) P(250, 0, false)
  P(16, 1, false) P(16, 1000, true) P(16, 4096, false) P(16, 12288, false) P(16, 24580, true) P(16, 40000, false) P(16, 49152, false)
  P(64, 1, false) P(64, 2048, false) P(64, 8192, false) P(64, 16384, true) P(64, 32768, false) P(64, 49152, false)
  P(128, 100, false) P(128, 6000, false) P(128, 20000, false) P(128, 48000, false)
#undef P
#define B(T, N) k.push_back({"bounded<" #T "," #N ">", (const void*)bounded_##T##_##N, false});
  B(1024, 1) B(1024, 2) B(768, 1) B(640, 1) B(512, 1) B(512, 3) B(384, 2) B(256, 5) B(256, 3) B(128, 8) B(128, 6)
#undef B
  return k;
}

int main() {
  RK(cudaSetDevice(0));
  RK(cudaFree(0));  // creates the primary context the driver API calls below use
  CUdevice dev;
  CK(cuCtxGetDevice(&dev));
  char name[256];
  CK(cuDeviceGetName(name, sizeof name, dev));
  int drv = 0;
  CK(cuDriverGetVersion(&drv));
  printf("# device %s driver CUDA %d.%d runtime %d\n", name, drv / 1000, drv % 1000 / 10, CUDART_VERSION);
  struct { const char* n; CUdevice_attribute a; } attrs[] = {
      {"compute_major", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {"compute_minor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {"sms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {"max_threads_per_block", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {"max_threads_per_sm", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {"max_blocks_per_sm", CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR},
      {"registers_per_sm", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
      {"max_registers_per_block", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {"shared_memory_per_sm", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {"shared_memory_per_block", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {"shared_memory_per_block_optin", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {"reserved_shared_memory_per_block", CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK},
      {"warp_size", CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {"l2_bytes", CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {"clock_khz", CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
      {"memory_clock_khz", CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE},
      {"memory_bus_width", CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
  };
  int optin = 0;
  for (auto& a : attrs) {
    int v = 0;
    CK(cuDeviceGetAttribute(&v, a.a, dev));
    if (a.a == CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) optin = v;
    printf("# attr %s %d\n", a.n, v);
  }
  const int dyn[] = {0, 1, 127, 128, 1024, 3000, 4096, 8192, 12288, 16384, 20000, 24576, 32768, 40000, 49152,
                     57344, 65536, 80000, 100000, 115000, 131072, 150000, 180000, 200000, 220000, 232448};
  const int carve[] = {0, 10, 25, 50, 75, 100};
  printf("block_size,registers,static_shared,dynamic_shared,carveout_pct,active_blocks\n");
  long rows = 0, mismatches = 0;
  for (auto& k : kernels()) {
    CUfunction f;
    RK(cudaGetFuncBySymbol(&f, k.fn));
    int regs, ssh, maxThreads;
    CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
    CK(cuFuncGetAttribute(&ssh, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
    CK(cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    int maxDyn = optin - ssh;
    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, maxDyn));
    printf("# kernel %s registers %d static_shared %d max_threads %d max_dynamic_shared %d\n", k.name, regs, ssh, maxThreads, maxDyn);
    std::vector<int> prefs = {-1};
    if (k.carveouts) prefs.insert(prefs.end(), std::begin(carve), std::end(carve));
    for (int pct : prefs) {
      CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, pct));
      for (int b = 32; b <= maxThreads; b += 32) {
        for (int d : dyn) {
          if (d > maxDyn) continue;
          int n = -1;
          CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, b, (size_t)d));
          // The runtime's answer must agree with the driver's.
          int rn = -1;
          RK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rn, k.fn, b, (size_t)d));
          if (rn != n) mismatches++;
          printf("%d,%d,%d,%d,%d,%d\n", b, regs, ssh, d, pct, n);
          rows++;
        }
        if (maxDyn != dyn[sizeof dyn / sizeof dyn[0] - 1]) {
          int n = -1;
          CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, b, (size_t)maxDyn));
          printf("%d,%d,%d,%d,%d,%d\n", b, regs, ssh, maxDyn, pct, n);
          rows++;
        }
      }
    }
    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, -1));
  }
  printf("# rows %ld runtime/driver mismatches %ld\n", rows, mismatches);
  return 0;
}
