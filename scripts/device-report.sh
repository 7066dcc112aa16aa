#!/usr/bin/env bash
# The runs behind the HTML report of a real GPU (issue 12), read-only on
# the GPU (no clock, power-limit or mode change; ncu with --clock-control
# none). Stages, by name in $STAGES:
#   probe    the GPU as found, ncu's version, and which of --observe ncu's
#            default metrics ncu --query-metrics knows on this GPU
#   matmul   examples/matmul brute force with --energy and --observe ncu
#   gemm     benchmark_hub's gemm_milo (CLBlast's Xgemm, the conformance
#            suite's CUDA port) on a seeded random sample of $GEMM_N
#            (default 40) configurations with --energy and --observe ncu,
#            the spec given a GFLOP/s/W metric for the GEMM paper's
#            analysis (autotuning-gemm-energy-beast.md, Figures 5-9)
#   dgemm    examples/dgemm (the BEAST DGEMM space of the GEMM paper,
#            n = 4096) on a seeded random sample of at most $DGEMM_N
#            (default 400) configurations proposed within $DGEMM_TL
#            seconds (default 240), with --energy and --observe ncu
#   report   gtune runs and gtune report --text of each run (the HTML is
#            written from report.db on the CPU machine)
# Each tune is bounded by `timeout` ($MATMUL_S, $GEMM_S, $DGEMM_S seconds): a cut
# run keeps what it stored (the ncu pass stores each configuration as it
# goes). Leaves in $OUT: report.log and report.db.
# Needs .bin/gtune (linux/amd64) and, for gemm, .ext/benchmark_hub.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/report.log") 2>&1
G=${GTUNE:-.bin/gtune}
DB=${DB:-$OUT/report.db}
STAGES=${STAGES:-probe matmul gemm report}
GEMM_N=${GEMM_N:-40}
GEMM_SEED=${GEMM_SEED:-1}
MATMUL_S=${MATMUL_S:-240}
GEMM_S=${GEMM_S:-300}
DGEMM_N=${DGEMM_N:-400}
DGEMM_TL=${DGEMM_TL:-240}
DGEMM_S=${DGEMM_S:-520}
has() { [[ " $STAGES " == *" $1 "* ]]; }
timed() { # name command...: runs it, prints its wall time and exit status
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"
  local rc=$?
  echo "=== $name: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
}

if has probe; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
  ncu --version | tail -1
  known=$(ncu --query-metrics 2>/dev/null | awk '{print $1}')
  for m in dram__throughput lts__throughput l1tex__throughput sm__warps_active sm__inst_executed \
    smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active smsp__average_warps_issue_stalled_barrier_per_issue_active \
    smsp__average_warps_issue_stalled_mio_throttle_per_issue_active smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active; do
    if grep -qx "$m" <<<"$known"; then echo "ncu knows $m"; else echo "ncu does NOT list $m"; fi
  done
fi

if has matmul; then
  timed matmul timeout "$MATMUL_S" "$G" tune examples/matmul/spec.json --backend cuda --strategy brute_force \
    --energy --observe ncu --db "$DB" --no-progress
fi

if has gemm; then
  # A writable copy of benchmark_hub's kernels/ with the conformance
  # suite's CUDA port of Xgemm and a spec that also computes GFLOP/s/W.
  KD=$(mktemp -d)/kernels
  cp -r .ext/benchmark_hub/kernels "$KD"
  cp scripts/conformance/specs/gemm_milo_cuda.cu "$KD/gemm_milo/"
  python3 - scripts/conformance/specs/gemm_milo.json "$KD/gemm_milo.report.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["Gtune"]
flops = "(4096 * 4096 * 4096 * 2 + 2 * 4096 * 4096)"
g["Metrics"] = {"GFLOP/s": flops + " / 1e9 / (time / 1e3)",
                "GFLOP/s/W": flops + " / 1e9 / (time / 1e3) / power"}
json.dump(d, open(sys.argv[2], "w"), indent=1)
EOF
  timed gemm timeout "$GEMM_S" "$G" tune "$KD/gemm_milo.report.json" --backend cuda --strategy random_sample \
    --max-evals "$GEMM_N" --seed "$GEMM_SEED" --energy --observe ncu --db "$DB" --no-progress
fi

if has dgemm; then
  timed dgemm timeout "$DGEMM_S" "$G" tune examples/dgemm/spec.json --backend cuda --strategy random_sample \
    --max-evals "$DGEMM_N" --time-limit "${DGEMM_TL}s" --seed 1 --energy --observe ncu --db "$DB" --no-progress
fi

if has report; then
  "$G" runs --db "$DB"
  for run in $(sqlite3 "$DB" 'select id from runs' 2>/dev/null || seq 1 2); do
    "$G" report "$run" --db "$DB" --text
  done
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
