#!/usr/bin/env bash
# Where the time before the first measurement goes, on GPU 0 of a GPU
# host, read-only on the GPU: the three examples' workload (12 plans of
# matmul, stencil and vector_add 256,4; --energy=false) without and with
# the compile cache ($RUNS: "nocache cache"), then measure --energy of
# vector_add 256,4 (MEASURE=0 skips it), each with GTUNE_TRACE=prepare.
# Prints the trace and summary lines; the outputs go to $OUT. Needs
# .bin/gtune (linux/amd64).
set -u
G=$(realpath .bin/gtune); ROOT=$(pwd); R=/tmp/prep; mkdir -p $R
. "$(dirname "$0")/ex3-workload.sh"
ex3_workload $R/ex3.yaml "$ROOT"
export GTUNE_TRACE=prepare
nvidia-smi --query-gpu=index,name,temperature.gpu,power.draw --format=csv,noheader
for run in ${RUNS:-nocache cache}; do
  flag=--no-compile-cache; [ $run = cache ] && flag="--compile-cache $R/cc"
  t0=$(date +%s.%N)
  timeout 150 $G tune $R/ex3.yaml --backend cuda --device 0 --energy=false $flag --no-progress --max-evals 12 --fresh --db $R/ex3.db > $R/ex3-$run.out 2> $R/ex3-$run.err
  echo "=== ex3 $run: rc $? $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}') s"
  grep -h "trace\|preparation\|tuning\|wall" $R/ex3-$run.err $R/ex3-$run.out | head -40
done
[ "${MEASURE:-1}" = 1 ] || { cp $R/*.out $R/*.err $OUT/ 2>/dev/null; exit 0; }
t0=$(date +%s.%N)
timeout 150 $G measure examples/vector_add/spec.json --backend cuda --device 0 --energy --config 256,4 --db $R/m.db > $R/m.out 2> $R/m.err
echo "=== measure energy: rc $? $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}') s"
grep -h "trace\|warm\|preparation" $R/m.err $R/m.out | head -30
cp $R/*.out $R/*.err $OUT/ 2>/dev/null
