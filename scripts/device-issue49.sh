#!/usr/bin/env bash
# Issue 49's measurements on one GPU, read-only (no setting changed):
# gtune probe three times, then every example kernel tuned on a random
# sample (seed 1, $N configurations, time only), each configuration's
# PTX kept (tune --keep-ptx, the default). Run it once on an H100 and once
# on an H200: the same seed proposes the same configurations on both, and
# scripts/issue49-validate.sh projects each GPU's kernels onto the other
# and checks them against the other's measurements. Leaves
# $OUT/<gpu>.db (profiles, runs, PTX) and $OUT/<gpu>-probe-<i>.json; prints
# a line per run. Needs .bin/gtune (linux/amd64).
set -uo pipefail
OUT=${OUT:-/tmp/i49}
N=${N:-100}
LIMIT=${LIMIT:-120} # seconds per kernel
G=$(realpath "${GTUNE:-.bin/gtune}")
mkdir -p "$OUT"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
case "$name" in
*H200*) gpu=h200 ;;
*H100*) gpu=h100_sxm ;;
*) gpu=$(echo "$name" | tr ' A-Z' '_a-z') ;;
esac
db=$OUT/$gpu.db
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv,noheader -i 0
for i in 1 2 3; do
  "$G" probe --backend cuda --db "$db" --json --no-progress > "$OUT/$gpu-probe-$i.json" 2>> "$OUT/$gpu.log"
  echo "probe $i: exit $?"
done
for s in $(find examples -name spec.json | grep -v workloads | sort); do
  t0=$(date +%s)
  timeout "$LIMIT" "$G" tune "$s" --backend cuda --strategy random_sample --seed 1 --max-evals "$N" \
    --energy=false --no-progress --db "$db" > "$OUT/tune.out" 2>> "$OUT/$gpu.log"
  echo "$s: exit $? after $(( $(date +%s) - t0 )) s; $(grep -E '^space' "$OUT/tune.out" | head -1)"
done
