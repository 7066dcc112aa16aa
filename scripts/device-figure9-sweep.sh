#!/bin/sh
# Figure 9 of autotuning-gemm-energy-beast.md on the whole DGEMM sweep
# (issue 50, seed 004): the merged sweep's database (gtune merge of
# scripts/device-beast.sh's two shards), carried as .bin/dgemm.db, is
# profiled by Nsight Compute on every GPU of the host (gtune observe:
# read-only, --clock-control none; GPUs of the sweep's model), then the
# report's metric classes over its 795 valid configurations. Run on a
# four-H100 host from the repository root; OUT is where results go.
# Read-only: nothing on the GPU is set.
set -u
cp .bin/dgemm.db "$OUT/dgemm.db"
nvidia-smi --query-gpu=index,uuid,name,temperature.gpu --format=csv > "$OUT/smi.csv"
timeout "${LIMIT:-540}" .bin/gtune observe examples/dgemm/spec.json 1 --db "$OUT/dgemm.db" --devices all > "$OUT/observe.txt" 2>&1
.bin/gtune report --db "$OUT/dgemm.db" --text 1 > "$OUT/f9.txt" 2>&1
tail -3 "$OUT/observe.txt"; sed -n '/metric classes/,/^$/p' "$OUT/f9.txt"
