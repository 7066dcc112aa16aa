// oracle.cu generates cuda_occupancy_oracle.csv.gz: CUDA's own occupancy
// calculator (cuda_occupancy.h, CUDA 13.0) evaluated over a grid of block
// sizes, registers per thread and shared memory per block, for device
// properties equal to gtune's device database entries. The H100 entry also
// cross-checks its properties against cudaGetDeviceProperties on an H100.
// Build: nvcc -std=c++17 -o oracle oracle.cu && ./oracle | gzip -9 > cuda_occupancy_oracle.csv.gz
#include <cstdio>
#include <cuda_runtime.h>
#include <cuda_occupancy.h>

struct Dev { const char* id; int major, minor, sms, maxTPB, maxTPSM, regsPerBlock, regsPerSM, warp; size_t smemPerBlock, smemPerSM, optin, reserved; };

int main() {
  Dev devs[] = {
    {"h100_sxm", 9, 0, 132, 1024, 2048, 65536, 65536, 32, 49152, 233472, 232448, 1024},
    {"k20c", 3, 5, 13, 1024, 2048, 65536, 65536, 32, 49152, 49152, 49152, 0},
    {"a100_40gb", 8, 0, 108, 1024, 2048, 65536, 65536, 32, 49152, 167936, 166912, 1024},
    {"rtx_a4000", 8, 6, 48, 1024, 1536, 65536, 65536, 32, 49152, 102400, 101376, 1024},
  };
  cudaDeviceProp p; int have = cudaGetDeviceProperties(&p, 0) == cudaSuccess;
  if (have) {
    printf("# device0 %s cc=%d.%d sms=%d maxThreadsPerBlock=%d maxThreadsPerSM=%d maxBlocksPerSM=%d regsPerBlock=%d regsPerSM=%d smemPerBlock=%zu smemPerSM=%zu smemOptin=%zu reserved=%zu l2=%d mem=%zu busWidth=%d\n",
      p.name, p.major, p.minor, p.multiProcessorCount, p.maxThreadsPerBlock, p.maxThreadsPerMultiProcessor, p.maxBlocksPerMultiProcessor, p.regsPerBlock, p.regsPerMultiprocessor, p.sharedMemPerBlock, p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock, p.l2CacheSize, p.totalGlobalMem, p.memoryBusWidth);
  }
  printf("device,block,regs,smem,carveout_pct,err,blocks,limiting_factors\n");
  int blocks[] = {1, 32, 33, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024};
  int regs[] = {0, 16, 24, 32, 40, 48, 56, 64, 72, 96, 128, 168, 255};
  int smems[] = {0, 1, 1000, 4096, 12288, 16384, 24577, 32768, 49152, 65536, 100000, 232448};
  int carve[] = {-1, 0, 25, 50};
  for (auto& d : devs) {
    cudaOccDeviceProp prop;
    prop.computeMajor = d.major; prop.computeMinor = d.minor; prop.maxThreadsPerBlock = d.maxTPB;
    prop.maxThreadsPerMultiprocessor = d.maxTPSM; prop.regsPerBlock = d.regsPerBlock; prop.regsPerMultiprocessor = d.regsPerSM;
    prop.warpSize = d.warp; prop.sharedMemPerBlock = d.smemPerBlock; prop.sharedMemPerMultiprocessor = d.smemPerSM;
    prop.numSms = d.sms; prop.sharedMemPerBlockOptin = d.optin; prop.reservedSharedMemPerBlock = d.reserved;
    for (int b : blocks) for (int r : regs) for (int s : smems) for (int c : carve) {
      if (c >= 0 && d.major < 7) continue;
      cudaOccFuncAttributes a;
      a.maxThreadsPerBlock = 1024; a.numRegs = r; a.sharedSizeBytes = 0;
      a.partitionedGCConfig = PARTITIONED_GC_OFF; a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
      a.maxDynamicSharedSizeBytes = d.optin; a.numBlockBarriers = 1;
      cudaOccDeviceState st; st.carveoutConfig = (cudaOccCarveoutConfig)c;
      cudaOccResult res;
      cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &a, &st, b, (size_t)s);
      printf("%s,%d,%d,%d,%d,%d,%d,%u\n", d.id, b, r, s, c, (int)e, res.activeBlocksPerMultiprocessor, res.limitingFactors);
    }
  }
  return 0;
}
