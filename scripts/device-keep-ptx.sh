#!/usr/bin/env bash
# PTX kept with each compiled configuration (issue: projection across
# GPUs), read-only on the GPUs (no clock, power-limit or mode change):
#   1. vector_add brute force on GPU 0 keeps its configurations' PTX in the
#      database; project --emulate projects them from it;
#   2. benchmark_hub's convolution_milo (staged in .ext/benchmark_hub),
#      brute force over every GPU of the host ($CONV_S seconds at most),
#      keeps the PTX of its 4,362 configurations and their registers;
#   3. project --emulate of every configuration on the A100, RTX A4000 and
#      RTX A6000 (specification profiles) and the H100 (the run's GPU),
#      written as Kernel Tuner caches (--write-cache), and the measured
#      H100 run exported as one.
# Leaves in $OUT: ptx.log, conv-project.json.gz, caches.tgz (caches/ of
# the projections and conv-h100.json, the measured run), conv.db when it
# fits the 16 MiB a file may take back.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT" "$OUT/caches"
exec > >(tee -a "$OUT/ptx.log") 2>&1
G=${GTUNE:-.bin/gtune}
CONV=.ext/benchmark_hub/kernels/convolution_milo.json
CONV_S=${CONV_S:-420}
timed() { # name command...: runs it, prints its wall time and exit status
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"
  local rc=$?
  echo "=== $name: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
}
count() { # db spec: evaluations, PTX kept, distinct texts, their bytes
  python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
e = c.execute("select count(*), sum(status = 'valid') from evaluations").fetchone()
p = c.execute("select count(distinct evaluation_id), count(distinct sha256) from evaluation_ptx").fetchone()
b = c.execute("select coalesce(sum(bytes), 0), coalesce(sum(length(gz)), 0) from ptx_texts").fetchone()
print(f"{sys.argv[1]}: {e[0]} evaluations ({e[1]} valid), {p[0]} kept PTX, {p[1]} distinct texts, {b[0]} bytes ({b[1]} gzip-compressed)")
PY
}
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv
nproc
timed "vector_add" "$G" tune examples/vector_add/spec.json --backend cuda --device 0 --energy=false --db "$OUT/va.db" --no-progress
count "$OUT/va.db"
timed "vector_add project --emulate" "$G" project examples/vector_add/spec.json --config all --emulate --db "$OUT/va.db" --devices h100_sxm,h200 | head -12
timed "convolution brute force, all GPUs" timeout "$CONV_S" "$G" tune "$CONV" --backend cuda --devices all --strategy brute_force --energy=false --db "$OUT/conv.db" --no-progress | tail -5
count "$OUT/conv.db"
timed "convolution project --emulate" "$G" project "$CONV" --config all --emulate --db "$OUT/conv.db" --devices a100_40gb,rtx_a4000,rtx_a6000,h100_sxm --write-cache "$OUT/caches" --json > "$OUT/conv-project.json"
gzip -f "$OUT/conv-project.json"
"$G" export 1 --db "$OUT/conv.db" --format kerneltuner -o "$OUT/caches/conv-h100.json"
tar czf "$OUT/caches.tgz" -C "$OUT" caches && rm -r "$OUT/caches"
ls -la "$OUT"
if [ "$(stat -c %s "$OUT/conv.db")" -gt 16000000 ]; then rm -f "$OUT/conv.db" "$OUT"/conv.db-*; fi
rm -f "$OUT"/va.db*
