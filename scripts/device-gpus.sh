#!/usr/bin/env bash
# One tuning run over every GPU of a host (issue: every GPU of a host),
# read-only on the GPUs (no clock, power-limit or mode change). Stages, by
# name in $STAGES:
#   probe     the GPUs as found
#   overhead  vector_add brute force, time only, on GPU 0: the build
#             before the multi-GPU loop ($OLD, default .bin/gtune-old) and
#             this one, alternated twice, fresh databases: the one-GPU
#             overhead per configuration before and after
#   measure   vector_add's reference configuration with energy measured
#             on every GPU at once (measure --devices all): the spread
#             between GPUs of one model
#   vadd      vector_add brute force with energy on GPU 0, then with
#             --devices all, fresh databases
#   rodinia   the rodinia-4 workload brute force (2,916 plans) on GPU 0,
#             then with --devices all ($RODINIA_S seconds each at most)
#   conv      compile-bound: benchmark_hub's convolution_milo (staged in
#             .ext/benchmark_hub/kernels), a random sample of $CONV_N
#             (seed 1) without the compile cache, on GPU 0 then with
#             --devices all, after 30 warm-up compilations (a fresh
#             machine's first are slow) and 12 compiled one at a time in
#             one process (the single-compilation time)
# Leaves in $OUT: gpus.log and gpus.db (every run, for gtune show/report).
# Needs .bin/gtune (linux/amd64) and, for overhead, $OLD.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpus.log") 2>&1
G=${GTUNE:-.bin/gtune}
OLD=${OLD:-.bin/gtune-old}
STAGES=${STAGES:-probe overhead vadd}
RODINIA_S=${RODINIA_S:-280}
has() { [[ " $STAGES " == *" $1 "* ]]; }
timed() { # name command...: runs it, prints its wall time and exit status
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"
  local rc=$?
  echo "=== $name: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
}
cc="--compile-cache ${KERNELS:-/tmp/gtune-kernels}"

if has probe; then
  nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
  nproc
fi
if has overhead; then
  for round in 1 2; do
    for b in old new; do
      bin=$G; [ $b = old ] && bin=$OLD
      timed "overhead $b round $round" "$bin" tune examples/vector_add/spec.json --backend cuda --device 0 --energy=false \
        --db "$OUT/overhead-$b-$round.db" --no-progress --no-compile-cache
    done
  done
fi
if has measure; then
  timed "measure all GPUs" "$G" measure examples/vector_add/spec.json --backend cuda --devices all --energy --db "$OUT/measure.db" $cc
fi
if has vadd; then
  timed "vector_add energy 1 GPU" "$G" tune examples/vector_add/spec.json --backend cuda --device 0 --energy --db "$OUT/gpus.db" --no-progress $cc
  timed "vector_add energy all GPUs" "$G" tune examples/vector_add/spec.json --backend cuda --devices all --energy --db "$OUT/gpus-all.db" --no-progress $cc
fi
if has conv; then
  CONV=.ext/benchmark_hub/kernels/convolution_milo.json
  CONV_N=${CONV_N:-400}
  conv() { "$G" tune "$CONV" --backend cuda --strategy random_sample --no-progress --no-compile-cache "$@"; }
  timed "conv warm-up" conv --seed 99 --max-evals 30 --db "$OUT/conv-warm.db" > /dev/null
  timed "conv one at a time" conv --seed 7 --max-evals 12 --compile-processes 1 --in-order --db "$OUT/conv-seq.db"
  timed "conv 1 GPU" conv --seed 1 --max-evals "$CONV_N" --device 0 --db "$OUT/conv.db"
  timed "conv all GPUs" conv --seed 1 --max-evals "$CONV_N" --devices all --db "$OUT/conv-all.db"
fi
if has rodinia; then
  timed "rodinia-4 1 GPU" timeout "$RODINIA_S" "$G" tune examples/workloads/rodinia-4.yaml --backend cuda --device 0 --db "$OUT/rodinia.db" --no-progress $cc
  timed "rodinia-4 all GPUs" timeout "$RODINIA_S" "$G" tune examples/workloads/rodinia-4.yaml --backend cuda --devices all --db "$OUT/rodinia-all.db" --no-progress $cc
fi
