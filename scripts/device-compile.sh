#!/usr/bin/env bash
# Compile-bound tuning on the real GPU (read-only: no clock, power-limit or
# mode change): convolution_milo from benchmark_hub (staged in
# .ext/benchmark_hub/kernels), leaving under $OUT one database and one
# --json summary per stage, and a log with wall times.
#
# Stages (arguments, in order; default: all of the first five):
#   warm    30 configurations (seed 99), no compile cache: a fresh machine's
#           first NVRTC compilations are ~10x slower (BENCHMARKS.md); not
#           reported
#   seq     12 configurations (seed 7) compiled one at a time in one compile
#           process, in order: the single-compilation time
#   cold    N configurations (seed 1) with the compile processes gtune
#           chooses and a new, empty compile cache
#   cached  the same run again (new database) with that cache
#   inproc  the cold run compiled in the gtune process (--compile-processes
#           0), another empty cache: the "before" of the pool
#   pagein  (extra) reads the NVRTC and CUDA libraries once, timed: on a
#           fresh machine their pages come from slow storage the first
#           time (the hypothesis for its slow first compilations)
#   busy    (extra) keeps COMPILE_LOAD processes compiling convolution with
#           nvcc while scripts/energy/repeat.sh runs (gtune only)
# Usage on the device machine: N=200 scripts/device-compile.sh [stage ...]
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log") 2>&1
G=${GTUNE:-.bin/gtune}
N=${N:-200}
SPEC=${SPEC:-.ext/benchmark_hub/kernels/convolution_milo.json}
CC=$(mktemp -d /tmp/gtune-cc.XXXXXX)
ms() { date +%s%3N; }
tune() { # name, flags...
  local name=$1; shift
  local t0; t0=$(ms)
  "$G" tune "$SPEC" --backend cuda --strategy random_sample --no-progress --json --db "$OUT/$name.db" "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
  local rc=$?
  echo "$name: exit $rc, wall $(( $(ms) - t0 )) ms ($*)"
  tail -3 "$OUT/$name.err"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
echo "cores $(nproc); $(grep MemAvailable /proc/meminfo)"
for st in ${*:-warm seq cold cached inproc}; do
  case $st in
  warm) tune warm --seed 99 --max-evals 30 --no-compile-cache ;;
  seq) tune seq --seed 7 --max-evals 12 --compile-processes 1 --in-order --no-compile-cache ;;
  cold) tune cold --seed 1 --max-evals "$N" --compile-cache "$CC/pool" ;;
  cached) tune cached --seed 1 --max-evals "$N" --compile-cache "$CC/pool" ;;
  inproc) tune inproc --seed 1 --max-evals "$N" --compile-processes 0 --compile-cache "$CC/inproc" ;;
  busy)
    src=$(dirname "$SPEC")/convolution_milo.cu
    for i in $(seq 1 "${COMPILE_LOAD:-15}"); do
      ( while :; do nvcc -cubin -arch=sm_90 -DBLOCK_SIZE_X=16 -DBLOCK_SIZE_Y=16 -DTILE_SIZE_X=$(( i % 4 + 1 )) -DTILE_SIZE_Y=2 \
          -Dfilter_width=15 -Dfilter_height=15 -Dimage_width=4096 -Dimage_height=4096 -o /dev/null -x cu "$src" 2>/dev/null; done ) &
    done
    sleep 5
    echo "load: $(cat /proc/loadavg)"
    KT=0 OUT=$OUT/busy scripts/energy/repeat.sh "${RUNS:-4}" 10
    echo "load: $(cat /proc/loadavg)"
    pkill -P $$ -f "while :" 2>/dev/null; jobs -p | xargs -r kill 2>/dev/null; pkill nvcc ;;
  pagein)
    t0=$(ms)
    libs=$(ldconfig -p | awk '/libnvrtc|libcuda\.so|libnvJitLink|libnvrtc-builtins/ {print $NF}'; find / -xdev \( -name 'libnvrtc*.so*' -o -name 'libnvrtc-builtins*' \) 2>/dev/null)
    cat $(printf '%s\n' $libs | sort -u) > /dev/null
    echo "pagein: $(printf '%s\n' $libs | sort -u | wc -l) files, $(( $(ms) - t0 )) ms" ;;
  quiet) KT=0 OUT=$OUT/quiet scripts/energy/repeat.sh "${RUNS:-4}" 10 ;;
  *) echo "unknown stage $st" ;;
  esac
done
rm -rf "$CC"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
