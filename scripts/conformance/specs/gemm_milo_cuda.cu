// gtune conformance suite: the CUDA source Kernel Tuner compiles for
// benchmark_hub's gemm_milo.py with lang "CUDA", which builds it as a string:
// '#include "cl_to_cuda.h"\n' followed by the contents of common.opencl and
// xgemm_part1..4.opencl, in this order. Copied into kernels/gemm_milo/ at run
// time, next to those files.
#include "cl_to_cuda.h"
#include "common.opencl"
#include "xgemm_part1.opencl"
#include "xgemm_part2.opencl"
#include "xgemm_part3.opencl"
#include "xgemm_part4.opencl"
