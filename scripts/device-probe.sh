#!/usr/bin/env bash
# Device profiles (issue: performance projection): gtune probe on this
# GPU, twice (repeatability), read-only; and the microbenchmarks' SASS as
# nvcc compiles probe/probe.cu for this GPU, with each kernel's count of
# the instructions the profile divides by (FFMA, DFMA, IMAD, MUFU, LDS,
# LDG, STG), to check that what is counted is what runs.
# Leaves in $OUT: probe.db, probe-1.json, probe-2.json, probe.log,
# probe.sass, sass-counts.txt. Needs .bin/gtune (linux/amd64).
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
G=${GTUNE:-.bin/gtune}
nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
for i in 1 2; do
  t0=$(date +%s.%N)
  "$G" probe --backend cuda --db "$OUT/probe.db" --json > "$OUT/probe-$i.json" 2>> "$OUT/probe.log"
  echo "=== probe $i: exit $? after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
done
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
nvcc -cubin -arch=sm_"$cc" -o /tmp/probe.cubin probe/probe.cu && cuobjdump -sass /tmp/probe.cubin > "$OUT/probe.sass"
python3 - "$OUT/probe.sass" > "$OUT/sass-counts.txt" <<'PY'
import re, sys, collections
fn, counts = None, collections.OrderedDict()
for line in open(sys.argv[1]):
    m = re.search(r'Function : (\S+)', line)
    if m:
        fn = m.group(1); counts[fn] = collections.Counter(); continue
    m = re.search(r'/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)', line)
    if fn and m:
        counts[fn][m.group(1).split('.')[0]] += 1
for fn, c in counts.items():
    keep = {k: c[k] for k in ('FFMA', 'DFMA', 'IMAD', 'MUFU', 'FMUL', 'FADD', 'LDS', 'LDG', 'STG', 'BRA') if c[k]}
    print(fn, sum(c.values()), keep)
PY
cat "$OUT/sass-counts.txt"
python3 - "$OUT"/probe-1.json "$OUT"/probe-2.json <<'PY'
import json, sys
a, b = (json.load(open(f))['profile'] for f in sys.argv[1:])
for k in ('fp32_gflops', 'fp64_gflops', 'int32_gops', 'sfu_gops', 'shared_gbs', 'bank_conflict_slowdown', 'l2_gbs', 'launch_overhead_us', 'sm_clock_mhz'):
    print(f"{k:24s} {a[k]:12.1f} {b[k]:12.1f}  {100*(b[k]/a[k]-1):+.2f} %")
for m, n in zip(a['memory'], b['memory']):
    print(f"{m['blocks_per_sm']:3d} blocks/SM occ {m['occupancy']:.3f}: read {m['read_gbs']:8.0f} {n['read_gbs']:8.0f}  write {m['write_gbs']:8.0f} {n['write_gbs']:8.0f}  scattered {m['strided_gbs']:8.0f} {n['strided_gbs']:8.0f}")
PY
