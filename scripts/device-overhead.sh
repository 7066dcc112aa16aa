#!/usr/bin/env bash
# Tuning overhead on the real GPU: brute force of the three examples with
# time only (--energy=false), so each configuration costs its compile (in the
# pool), one verification launch, one warm-up and the timed launches. Leaves
# $OUT/overhead.db and $OUT/overhead.log. Read-only on the GPU.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/overhead.log") 2>&1
G=${GTUNE:-.bin/gtune}
for ex in ${*:-vector_add stencil matmul}; do
  echo "=== $ex: brute force, time only"
  start=$(date +%s%N)
  "$G" tune "examples/$ex/spec.json" --backend cuda --energy=false --db "$OUT/overhead.db" --no-progress
  echo "exit $? after $(( ($(date +%s%N) - start) / 1000000 )) ms"
done
