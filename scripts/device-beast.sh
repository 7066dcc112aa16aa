#!/bin/sh
# The BEAST DGEMM sweep and cuBLAS on one four-GPU host (run on the device
# machine from the repository root; OUT is where results go). PHASE=1:
# the cuBLAS integration test, then the sweep for LIMIT (default 7m);
# PHASE=2 (the same warm machine: .work/ stays): the sweep resumed from
# what phase 1 stored, for LIMIT, then cublasDgemm in both math modes,
# five repeats, on every GPU, each GPU its own process. Read-only: the
# GPUs run as found, nothing is set.
set -u
R=$OUT/r
mkdir -p "$R" .work
P=${PHASE:-1}
nvidia-smi --query-gpu=index,uuid,name,power.limit,temperature.gpu,clocks.sm --format=csv > "$R/smi$P.csv"
if [ "$P" = 1 ]; then
	GTUNE_CUDA_TEST=1 timeout 120 .bin/cuda.test -test.run 'TestIntegrationCuBLAS' -test.v > "$R/cudatest.txt" 2>&1
fi
.bin/gtune tune examples/dgemm/spec.json --backend cuda --devices all --strategy brute_force \
	--db .work/dgemm.db --no-progress --time-limit "${LIMIT:-7m}" > "$R/sweep$P.txt" 2>&1
if [ "$P" = 2 ]; then
	for d in 0 1 2 3; do
		.bin/gtune tune examples/dgemm/cublas.json --backend cuda --device $d --repeat 5 \
			--db .work/dgemm.db --no-progress > "$R/cublas$d.txt" 2>&1 &
	done
	wait
	.bin/gtune report --db .work/dgemm.db --text > "$R/report.txt" 2>&1
fi
cp .work/dgemm.db* "$R/"
tar czf "$OUT/beast$P.tgz" -C "$OUT" r && rm -rf "$R"
