#!/usr/bin/env bash
# Table IV, performance half, on the real GPU (read-only: no clock,
# power-limit or mode change; energy is not measured). For each spec:
# brute force into $OUT/t4.db, then Algorithm 1 (strategy
# occupancy_greedy) into the separate $OUT/a1.db, so that its evaluations
# are its own and not reused from the brute force. Summarise afterwards
# with scripts/table4 (see BENCHMARKS.md).
# Usage on the device machine: scripts/table4-h100.sh [spec ...]
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/table4.log") 2>&1
G=${GTUNE:-.bin/gtune}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
specs=${*:-examples/rodinia/streamcluster/spec.json examples/rodinia/particlefilter/spec.json examples/rodinia/lud/spec.json examples/rodinia/hotspot/spec.json examples/vector_add/spec.json examples/stencil/spec.json examples/matmul/spec.json}
for s in $specs; do
  echo "=== $s: brute force"
  start=$(date +%s)
  "$G" tune "$s" --backend cuda --energy=false --db "$OUT/t4.db" --no-progress
  echo "exit $? after $(( $(date +%s) - start )) s"
  echo "=== $s: Algorithm 1 (occupancy_greedy), own database"
  start=$(date +%s)
  "$G" tune "$s" --backend cuda --energy=false --db "$OUT/a1.db" --no-progress --strategy occupancy_greedy 2> "$OUT/a1.err"
  rc=$?
  cat "$OUT/a1.err"
  echo "exit $rc after $(( $(date +%s) - start )) s"
  if [ $rc -eq 2 ]; then
    # No configuration reaches the default 0.8: run again keeping those
    # of the highest occupancy the space reaches (the message names it).
    min=$(grep -o 'the highest is [0-9.e-]*' "$OUT/a1.err" | awk '{print $4}')
    echo "=== $s: Algorithm 1 again with min_occupancy $min"
    "$G" tune "$s" --backend cuda --energy=false --db "$OUT/a1.db" --no-progress --strategy occupancy_greedy --strategy-param min_occupancy="$min"
    echo "exit $?"
  fi
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
