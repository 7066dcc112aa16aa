#!/usr/bin/env bash
# Projection against measurement (issue: performance projection), on
# this GPU, read-only: gtune probe (the device profile), then each
# example kernel with a Gtune.Simulation section tuned by a random sample
# of $N configurations (seed 1, time only), every one stored. The
# projections are made afterwards, anywhere: gtune project SPEC --config
# all --devices ID --db probe.db --json, joined with kernels.db by key.
# Leaves in $OUT: probe.db, probe.json, kernels.db, project.log.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
G=${GTUNE:-.bin/gtune}
N=${N:-30}
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
"$G" probe --backend cuda --db "$OUT/probe.db" --json --no-progress > "$OUT/probe.json"
echo "=== probe: exit $?"
for s in examples/vector_add/spec.json examples/matmul/spec.json examples/stencil/spec.json examples/dgemm/spec.json \
         examples/rodinia/*/spec.json examples/concurrent/*/spec.json; do
  t0=$(date +%s.%N)
  "$G" tune "$s" --backend cuda --strategy random_sample --max-evals "$N" --seed 1 --objective time --energy=false \
    --db "$OUT/kernels.db" --no-progress --compile-cache /tmp/gtune-kernels >> "$OUT/project.log" 2>&1
  echo "=== $s: exit $? after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
done
