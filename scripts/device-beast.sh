#!/bin/sh
# The BEAST DGEMM sweep and cuBLAS on a four-GPU host (run on the device
# machine from the repository root; OUT is where results go). The 889
# configurations take about 11 minutes of four H100s, more than one call,
# and a second call may land on another host, whose GPUs' results a run
# does not reuse: each call tunes one shard (PHASE=1: --shard 0/2 after
# the cuBLAS integration test; PHASE=2: --shard 1/2, then cublasDgemm in
# both math modes, five repeats, on every GPU, each GPU its own process),
# each into its own database, and `gtune merge dgemm.db beast1.db
# beast2.db` joins them on the CPU machine (the runs of one GPU model
# become one). LIMIT bounds each shard (default 8m). Read-only: the GPUs
# run as found, nothing is set. Carry .bin with gtune and cuda.test
# (CGO_ENABLED=0 GOOS=linux go test -c -ldflags "-s -w" -o .bin/cuda.test
# ./backend/cuda).
set -u
R=$OUT/r
mkdir -p "$R"
P=${PHASE:-1}
nvidia-smi --query-gpu=index,uuid,name,power.limit,temperature.gpu,clocks.sm --format=csv > "$R/smi$P.csv"
if [ "$P" = 1 ]; then
	GTUNE_CUDA_TEST=1 timeout 120 .bin/cuda.test -test.run 'TestIntegrationCuBLAS' -test.v > "$R/cudatest.txt" 2>&1
fi
.bin/gtune tune examples/dgemm/spec.json --backend cuda --devices all --strategy brute_force --shard $((P - 1))/2 \
	--db "$R/beast$P.db" --no-progress --time-limit "${LIMIT:-8m}" > "$R/sweep$P.txt" 2>&1
if [ "$P" = 2 ]; then
	for d in 0 1 2 3; do
		.bin/gtune tune examples/dgemm/cublas.json --backend cuda --device $d --repeat 5 \
			--db "$R/beast$P.db" --no-progress > "$R/cublas$d.txt" 2>&1 &
	done
	wait
fi
tar czf "$OUT/beast$P.tgz" -C "$OUT" r && rm -rf "$R"
