#!/usr/bin/env bash
# Runs the three examples brute force on the real GPU (read-only: no clock,
# power-limit or mode change) and leaves under $OUT: gtune.db (the results
# database), <example>.json (gtune tune --json, best by time) and log
# (everything printed, including the tables ranked by time and by energy).
# Usage on the device machine: scripts/device-examples.sh [example ...]
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log") 2>&1
G=${GTUNE:-.bin/gtune}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
"$G" devices
examples=${*:-vector_add stencil matmul}
for ex in $examples; do
  echo "=== $ex: brute force, energy measured for every configuration"
  start=$(date +%s)
  "$G" tune "examples/$ex/spec.json" --backend cuda --energy --db "$OUT/gtune.db" --no-progress
  echo "exit $? after $(( $(date +%s) - start )) s"
  echo "=== $ex: the same run, JSON (reused from the database)"
  "$G" tune "examples/$ex/spec.json" --backend cuda --energy --db "$OUT/gtune.db" --no-progress --json > "$OUT/$ex.json"
  echo "=== $ex: ranked by energy (reused from the database)"
  "$G" tune "examples/$ex/spec.json" --backend cuda --energy --db "$OUT/gtune.db" --no-progress --objective energy
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
