#!/usr/bin/env bash
# Energy from a cold start (issue 34): the run-to-run spread of energy per
# launch of the same 10 vector_add configurations, measured by gtune under
# two thermal policies and by Kernel Tuner 1.4's NVMLObserver, in rounds
# whose order rotates so that each goes first (on the coldest GPU) in turn:
#
#   model         gtune --thermal model: energy_uncorrected is the default
#                 policy's (none), energy the leakage-corrected value
#   steady+model  gtune --thermal steady+model: energy_uncorrected is the
#                 steady warm-up's alone, energy steady and corrected
#   kt            scripts/energy/kt_energy.py
#
# A fresh device machine is a cold GPU: run this as the session's first
# device command. COOL seconds of idle between rounds let the GPU cool
# part of the way again. Reads GPU state only (nvidia-smi --query-gpu
# every 500 ms for the temperature trace).
#
# Carried: .bin/gtune, .ext/kernel_tuner, .ext/py.
# Usage: ROUNDS=3 COOL=20 scripts/energy/cold.sh    (writes $OUT/cold.tar.gz; prints the summary last)
set -uo pipefail
rounds=${ROUNDS:-3}
cool=${COOL:-20}
configs=${CONFIGS:-10}
out=${OUT:-/tmp/energy-cold}
runs=$out/runs # packed into $out/cold.tar.gz at the end
mkdir -p "$runs"
root=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONUNBUFFERED=1
spec="$root/examples/vector_add/spec.json"
nvidia-smi --query-gpu=timestamp,temperature.gpu,power.draw,clocks.sm --format=csv,noheader -lms 500 > "$runs/trace.csv" 2>/dev/null &
trace=$!
trap 'kill $trace 2>/dev/null' EXIT
t00=$(date +%s)
gt() { # policy round (files are named with _ for +: the device tool brings back plain names only)
  local t0 name=${1/+/_}; t0=$(date +%s%N)
  "$root/.bin/gtune" tune "$spec" --backend cuda --energy --thermal "$1" --strategy random_sample --seed 3 --max-evals "$configs" \
      --fresh --no-progress --json --db "$runs/$name-$2.db" > "$runs/$name-$2.json" 2>> "$out/cold.log" || echo "gtune $1 round $2 failed" >&2
  echo "$(( $(date +%s) - t00 )) s: gtune $1 round $2: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
  if [ ! -s "$runs/configs.json" ]; then
    python3 - "$runs/$name-$2.db" > "$runs/configs.json" <<'PY'
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT config_key FROM evaluations").fetchall()
print(json.dumps([[int(x) for x in k.split(",")] for (k,) in rows]))
PY
  fi
}
kt() { # round
  local t0; t0=$(date +%s%N)
  python3 "$root/scripts/energy/kt_energy.py" "$root/examples/vector_add/kernel.cu" "$runs/configs.json" "$runs/kt-$1.json" >> "$out/cold.log" 2>&1 \
    || echo "kernel tuner round $1 failed (see cold.log)" >&2
  echo "$(( $(date +%s) - t00 )) s: kernel tuner round $1: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
}
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm,power.limit --format=csv >&2
for r in $(seq 1 "$rounds"); do
  case $(( (r - 1) % 3 )) in
    0) order="model kt steady+model" ;;
    1) order="kt steady+model model" ;;
    2) order="steady+model model kt" ;;
  esac
  for w in $order; do
    if [ "$w" = kt ]; then
      if [ -s "$runs/configs.json" ]; then kt "$r"; else gt model "$r"; kt "$r"; fi
    elif [ ! -e "$runs/${w/+/_}-$r.db" ]; then
      gt "$w" "$r"
    fi
  done
  [ "$r" -lt "$rounds" ] && sleep "$cool"
done
kill $trace 2>/dev/null
tar -C "$out" -czf "$out/cold.tar.gz" runs
python3 "$root/scripts/energy/cold_summary.py" "$runs" | tee "$out/summary.txt"
