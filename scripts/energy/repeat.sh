#!/usr/bin/env bash
# Run-to-run repeatability of energy per launch on a real GPU: the same 10
# configurations of examples/vector_add, measured in RUNS separate runs by
# gtune (fresh database each) and by Kernel Tuner 1.4's NVMLObserver,
# alternating, then summarised (summarize.py). Reads only GPU state.
#
# Carried to the GPU machine: .bin/gtune, .ext/kernel_tuner, .ext/py.
# Usage: scripts/energy/repeat.sh [RUNS] [CONFIGS] [EXTRA GTUNE FLAGS...]
# (KT=0: gtune only.)
set -uo pipefail
runs=${1:-5}
configs=${2:-10}
shift $(( $# > 2 ? 2 : $# ))
out=${OUT:-/tmp/energy-out}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONUNBUFFERED=1
spec="$root/examples/vector_add/spec.json"
for r in $(seq 1 "$runs"); do
  t0=$(date +%s%N)
  "$root/.bin/gtune" tune "$spec" --backend cuda --energy --strategy random_sample --seed 3 --max-evals "$configs" \
      --fresh --no-progress --json --db "$out/gtune-$r.db" "$@" > "$out/gtune-$r.json" 2>> "$out/energy.log" || echo "gtune run $r failed" >&2
  echo "gtune run $r: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
  if [ "$r" = 1 ]; then
    python3 - "$out/gtune-1.db" > "$out/configs.json" <<'PY'
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT config_key FROM evaluations").fetchall()
print(json.dumps([[int(x) for x in k.split(",")] for (k,) in rows]))
PY
  fi
  if [ "${KT:-1}" = 1 ] && [ -d "$root/.ext/kernel_tuner" ]; then
    t0=$(date +%s%N)
    python3 "$root/scripts/energy/kt_energy.py" "$root/examples/vector_add/kernel.cu" "$out/configs.json" "$out/kt-$r.json" >> "$out/energy.log" 2>&1 \
      || echo "kernel tuner run $r failed (see energy.log)" >&2
    echo "kernel tuner run $r: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
  fi
done
python3 "$root/scripts/energy/summarize.py" "$out" | tee "$out/summary.txt"
