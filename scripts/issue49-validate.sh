#!/usr/bin/env bash
# Issue 49's validation on the CPU, from the databases that
# scripts/device-issue49.sh left for two GPUs (A and B: device-database
# ids, e.g. h100_sxm and h200): for every kernel tuned on both, with only
# A's data at hand (its probe, its PTX: the "one GPU at hand" case, B's
# profile derived from A's), project every configuration onto A and B
# (project --emulate) and check the projections against both GPUs' runs
# (project --against): the right GPU, the penalty, the time ratio error,
# each GPU's projected-best configuration. Usage:
#   scripts/issue49-validate.sh A A.db B B.db
# EMULATE=0 takes the work the specs declare (Gtune.Simulation) instead of
# emulating the PTX. BOTH=1 is the "both GPUs probed" case: B's measured
# profiles are copied into a copy of A's database first, so that each GPU
# is projected over its own probe (A's PTX serves both: one architecture). Prints one selection report per kernel. Needs gtune
# built (GTUNE, else ./cmd/gtune is built to a temporary file).
set -euo pipefail
a=$1 adb=$2 b=$3 bdb=$4
G=${GTUNE:-}
if [ -z "$G" ]; then G=$(mktemp); go build -o "$G" ./cmd/gtune; fi
# The run of each kernel in a database, by the spec's path from examples/.
runs() {
  "$G" runs --db "$1" --json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    spec = r["spec"]
    i = spec.find("examples/")
    if i >= 0 and r["valid"] > 0:
        print(spec[i:], r["run"])'
}
if [ "${BOTH:-0}" = 1 ]; then
  both=$(mktemp --suffix=.db)
  cp "$adb" "$both"
  python3 - "$both" "$bdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("ATTACH DATABASE ? AS b", (sys.argv[2],))
n = db.execute("INSERT INTO device_profiles (device, name, uuid, source, measured_at, host, profile) "
               "SELECT device, name, uuid, source, measured_at, host, profile FROM b.device_profiles").rowcount
db.commit()
print(f"{n} profiles of {sys.argv[2]} added", file=sys.stderr)
PY
  adb_profiles=$both
else
  adb_profiles=$adb
fi
declare -A ra rb
while read -r s r; do ra[$s]=$r; done < <(runs "$adb")
while read -r s r; do rb[$s]=$r; done < <(runs "$bdb")
for s in $(printf '%s\n' "${!ra[@]}" | sort); do
  [ -n "${rb[$s]:-}" ] || { echo "$s: not tuned on $b"; continue; }
  work=--emulate
  [ "${EMULATE:-1}" = 0 ] && work=
  "$G" project "$s" --config all $work --db "$adb_profiles" --devices "$a,$b" \
    --against "$adb:${ra[$s]},$bdb:${rb[$s]}" 2>&1 | sed -n '/device selection against/,$p' || echo "$s: project failed"
done
