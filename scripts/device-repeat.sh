#!/usr/bin/env bash
# Repeated measurement on a real GPU (issue: numbers that hold up),
# read-only: vector_add brute force, time only, twice each (A and B, fresh
# databases) with one measurement per configuration, --repeat 5, and
# --repeat 30 --repeat-until 1 (±1 % interval of the median), and
# --confirm 5: each run's
# wall time and best configuration, and the repeats' spread.
# SPEC and EXTRA (more tune flags, e.g. --strategy random_sample
# --max-evals 100 --seed 1) choose another kernel.
# Leaves in $OUT: repeat.log and repeat.tgz (the databases).
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT/db"
exec > >(tee -a "$OUT/repeat.log") 2>&1
G=${GTUNE:-.bin/gtune}
SPEC=${SPEC:-examples/vector_add/spec.json}
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
# Warm the host's NVRTC (a fresh machine's first compilations are slow).
"$G" tune "$SPEC" --backend cuda --energy=false --db "$OUT/db/warm.db" --no-progress --max-evals 20 --strategy random_sample > /dev/null 2>&1
for policy in "once:" "five:--repeat 5" "until:--repeat 30 --repeat-until 1" "confirm:--confirm 5"; do
  name=${policy%%:*}; flags=${policy#*:}
  for run in A B; do
    t0=$(date +%s.%N)
    out=$("$G" tune "$SPEC" --backend cuda --energy=false --db "$OUT/db/$name-$run.db" --no-progress --no-compile-cache $flags ${EXTRA:-} 2>&1)
    t1=$(date +%s.%N)
    echo "=== $name $run: $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}') s wall"
    echo "$out" | grep -E "^space:|^  1 |^  2 |^  3 |^  4 |^  5 |^confirmed"
  done
done
python3 - "$OUT/db" <<'PY'
import glob, json, os, sqlite3, statistics, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "*-[AB].db"))):
    c = sqlite3.connect(f)
    rows = c.execute("select id, config_key, objective, metrics from evaluations where status = 'valid' order by objective").fetchall()
    reps = c.execute("select evaluation_id, count(*) from repeats group by evaluation_id").fetchall()
    n = [k for _, k in reps]
    hw = []
    for _, _, obj, m in rows:
        m = json.loads(m)
        if "time_ci_high" in m:
            hw.append((m["time_ci_high"] - m["time_ci_low"]) / 2 / obj)
    line = f"{os.path.basename(f)}: {len(rows)} valid, best {rows[0][1]} {rows[0][2]:.4f} ms, 2nd {rows[1][1]} {rows[1][2]:.4f} ms"
    if n:
        line += f"; repeats per configuration median {statistics.median(n)}, max {max(n)}, {sum(n)} in all"
    if hw:
        line += f"; half-width of the median's interval median {100*statistics.median(hw):.2f} %, p90 {100*sorted(hw)[len(hw)*9//10]:.2f} %"
    print(line)
PY
tar czf "$OUT/repeat.tgz" -C "$OUT" db && rm -r "$OUT/db"
