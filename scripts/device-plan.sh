#!/usr/bin/env bash
# A plan of two different kernels on the real GPU (read-only: no clock,
# power-limit or mode change): the CUDA backend's GPU tests (single-launch
# path and the two-kernel, two-stream plan), then `gtune measure` of the
# vector_add and matmul examples together on two streams, on one stream,
# and each alone, with energy. Leaves under $OUT: plan.db, plan.log and
# observations.csv (every stored observation with unit and method).
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/plan.log") 2>&1
G=${GTUNE:-.bin/gtune}
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
if [ -x .bin/cudatest ]; then
  GTUNE_CUDA_TEST=1 .bin/cudatest -test.run "${TESTS:-TestPlan|TestIntegrationCUDA\$|TestIntegrationResources}" -test.v 2>&1 | grep -v '^=== RUN' | tail -60
fi
VA=examples/vector_add/spec.json MM=examples/matmul/spec.json
echo "=== two kernels, two streams"
"$G" measure "$VA" "$MM" --backend cuda --energy --db "$OUT/plan.db"
echo "=== two kernels, one stream"
"$G" measure "$VA" "$MM" --backend cuda --energy --stream 0,0 --db "$OUT/plan.db"
echo "=== each alone"
"$G" measure "$VA" --backend cuda --energy --db "$OUT/plan.db"
"$G" measure "$MM" --backend cuda --energy --db "$OUT/plan.db"
python3 - "$OUT/plan.db" > "$OUT/observations.csv" <<'PY'
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
w = csv.writer(sys.stdout)
w.writerow(["run", "kernels", "key", "launch", "name", "value", "unit", "method"])
for row in db.execute("""SELECT r.id, r.kernel, e.config_key, o.launch, o.name, o.value, o.unit, o.method
    FROM observations o JOIN evaluations e ON e.id = o.evaluation_id JOIN runs r ON r.id = e.run_id ORDER BY r.id, o.launch, o.name"""):
    w.writerow(row)
PY
wc -l "$OUT/observations.csv"
