#!/bin/sh
# Figure 9 of autotuning-gemm-energy-beast.md on a random sample of the
# BEAST DGEMM space (run on the device machine from the repository root;
# OUT is where results go): tuned with energy for TUNE (default 6m), then
# Nsight Compute's pass over what was measured (read-only,
# --clock-control none), then the report's metric classes. Read-only.
set -u
.bin/gtune tune examples/dgemm/spec.json --backend cuda --strategy random_sample --seed 3 --energy --observe ncu \
	--time-limit "${TUNE:-6m}" --db "$OUT/f9.db" --no-progress > "$OUT/tune.txt" 2>&1
.bin/gtune report --db "$OUT/f9.db" --text 1 > "$OUT/f9.txt" 2>&1
tail -4 "$OUT/tune.txt"; sed -n '/metric classes/,$p' "$OUT/f9.txt"
