#!/usr/bin/env bash
# Table 4 through the noise (issue 34): every launch order of each
# six-kernel set in $SIX measured $R times per sweep (tune --orders
# --repeat R), in two independent sweeps (A, then B, each its own
# database), then gtune schedule's model-profiled order ranked in each
# sweep by the median and by the fastest of its repeats; with $REFINE,
# order_search from that order with the same repeats, accepting only
# moves its repeats confirm. Read-only on the GPU (no clock, power-limit
# or mode change; time only).
#
# Carried: .bin/gtune. Writes $OUT/t4r.tar.gz (one CSV per sweep: each
# order's repeat times; the schedule JSON documents; the log) and prints
# scripts/table4-repeats.py's summary last.
# Usage: SIX="bsblk-6 epbswarp-6" R=5 REFINE=1 scripts/table4-repeats.sh
# (SWEEPS="" REFINE=1: order_search alone, from the schedule's order.
# SAMPLE=1000: a uniform random sample of that many orders, seed 1, the
# same in both sweeps, plus the schedule's order: EpBsEsSw-8's 40,320.)
set -uo pipefail
OUT=${OUT:-/tmp/t4r}
R=${R:-5}
SIX=${SIX:-bsblk-6 epbswarp-6 epshm-6 epbsshm-6 epbsmix-6}
W=examples/concurrent/workloads
G=${GTUNE:-.bin/gtune}
work=$(mktemp -d)
mkdir -p "$OUT/t4r"
log="$OUT/t4r/table4-repeats.log"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv | tee -a "$log"
csv() { # db out.csv: each order's repeat times (ms), in repeat order
  python3 - "$1" "$2" <<'PY'
import csv, json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["key", "status", "time_ms", "repeat_times_ms"])
    for eid, key, st, obs in db.execute("select id, config_key, status, observations from evaluations order by id"):
        o = json.loads(obs) if obs else {}
        reps = [json.loads(r).get("time", "") for (r,) in db.execute("select observations from repeats where evaluation_id=? and status='valid' order by repeat", (eid,))]
        w.writerow([key, st, o.get("time", ""), " ".join(str(x) for x in reps)])
PY
}
for x in $SIX; do
  for sweep in ${SWEEPS-A B}; do
    t0=$(date +%s)
    if [ -n "${SAMPLE:-}" ]; then
      # A uniform random sample of the orders (the same in both sweeps:
      # seed 1), then the schedule's order measured into the same
      # database with the same repeats, so that it can be ranked.
      timeout -s INT "${LIMIT:-280}" "$G" tune "$W/$x.yaml" --backend "${BACKEND:-cuda}" --strategy random_sample --max-evals "$SAMPLE" --seed 1 --orders --energy=false --repeat "$R" \
          --db "$work/$x-$sweep.db" --no-progress --json > "$OUT/t4r/$x-$sweep-tune.json" 2>> "$log"
      echo "$x sweep $sweep (sample of $SAMPLE): rc $?, $(( $(date +%s) - t0 )) s" | tee -a "$log"
      start=$("$G" schedule "$W/$x.yaml" --refine 0 --backend "${BACKEND:-cuda}" --profile model --db "$work/$x-sched.db" --json 2>> "$log" | python3 -c "import json,sys; print(json.load(sys.stdin)['order'])")
      "$G" tune "$W/$x.yaml" --backend "${BACKEND:-cuda}" --orders --strategy order_search --strategy-param start="$start" --max-evals 1 --repeat "$R" --energy=false \
          --db "$work/$x-$sweep.db" --no-progress > /dev/null 2>> "$log"
    else
      timeout -s INT "${LIMIT:-280}" "$G" tune "$W/$x.yaml" --backend "${BACKEND:-cuda}" --strategy brute_force --orders --energy=false --repeat "$R" \
          --db "$work/$x-$sweep.db" --no-progress --json > "$OUT/t4r/$x-$sweep-tune.json" 2>> "$log"
      echo "$x sweep $sweep: rc $?, $(( $(date +%s) - t0 )) s" | tee -a "$log"
    fi
    csv "$work/$x-$sweep.db" "$OUT/t4r/$x-$sweep.csv"
    for stat in median fastest; do
      "$G" schedule "$W/$x.yaml" --refine 0 --backend "${BACKEND:-cuda}" --profile model --db "$work/$x-$sweep.db" --statistic "$stat" --json > "$OUT/t4r/$x-$sweep-$stat.json" 2>> "$log"
    done
  done
  if [ -n "${REFINE:-}" ]; then
    [ -s "$OUT/t4r/$x-A-median.json" ] || "$G" schedule "$W/$x.yaml" --refine 0 --backend "${BACKEND:-cuda}" --profile model --db "$work/$x-sched.db" --json > "$OUT/t4r/$x-A-median.json" 2>> "$log"
    start=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['order'])" "$OUT/t4r/$x-A-median.json" 2>/dev/null)
    t0=$(date +%s)
    timeout -s INT "${LIMIT:-280}" "$G" tune "$W/$x.yaml" --backend "${BACKEND:-cuda}" --orders --strategy order_search --strategy-param start="$start" \
        --repeat "$R" --energy=false --db "$work/$x-R.db" --no-progress --json > "$OUT/t4r/$x-R-tune.json" 2>> "$log"
    echo "$x order_search from $start: rc $?, $(( $(date +%s) - t0 )) s" | tee -a "$log"
    csv "$work/$x-R.db" "$OUT/t4r/$x-R.csv"
  fi
done
tar -C "$OUT" -czf "$OUT/t4r.tar.gz" t4r && rm -rf "$OUT/t4r" "$work"
python3 "$(dirname "$0")/table4-repeats.py" "$OUT/t4r.tar.gz"
