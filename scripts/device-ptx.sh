#!/usr/bin/env bash
# PTX of small kernels as NVRTC's front end emits it for this GPU (nvcc
# -ptx), for the PTX emulator's tests (package emulate: testdata). Prints
# nothing but what failed; leaves $OUT/ptx/NAME.ptx.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT/ptx"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
ptx() { # name source defines...
  local name=$1 src=$2; shift 2
  nvcc -ptx -arch=sm_"$cc" -o "$OUT/ptx/$name.ptx" "$@" "$src" || echo "failed: $name"
}
ptx vector_add_256_1 examples/vector_add/kernel.cu -Dblock_size_x=256 -Dwork_per_thread=1
ptx vector_add_128_4 examples/vector_add/kernel.cu -Dblock_size_x=128 -Dwork_per_thread=4
ptx stencil_32_8 examples/stencil/kernel.cu -Dblock_size_x=32 -Dblock_size_y=8 -Ddomain_width=32768 -Ddomain_height=16384
ptx matmul_16_16_2_2 examples/matmul/kernel.cu -DWIDTH=4096 -Dblock_size_x=16 -Dblock_size_y=16 -Dtile_size_x=2 -Dtile_size_y=2
ptx hotspot_16_16 examples/rodinia/hotspot/kernel.cu -Dblock_size_x=16 -Dblock_size_y=16
ptx probe probe/probe.cu -DITERS=4 -DSTRIDE=1
ptx probe_stride32 probe/probe.cu -DITERS=4 -DSTRIDE=32
ls -la "$OUT/ptx"
