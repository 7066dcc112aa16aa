#!/usr/bin/env bash
# The PTX of two configurations of every example kernel (random sample,
# seed 1), kept by gtune tune on the GPU in $OUT/ptx.db (--keep-ptx, the
# default): what emulate's per-block speed is checked on. Read-only on
# the GPU. Needs .bin/gtune (linux/amd64).
set -u
mkdir -p $OUT
for s in $(find examples -name spec.json | grep -v workloads | sort); do
  t0=$(date +%s)
  timeout 60 .bin/gtune tune $s --backend cuda --strategy random_sample --max-evals 2 --seed 1 --energy=false --no-progress --db $OUT/ptx.db > /tmp/o.txt 2>&1
  echo "$s exit $? $(( $(date +%s) - t0 )) s; $(grep -E '^space|evaluated' /tmp/o.txt | head -1)"
done
ls -la $OUT
