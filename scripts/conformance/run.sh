#!/usr/bin/env bash
# gtune conformance suite: gtune and Kernel Tuner 1.4 back to back on the same
# GPU, on the same seeded sample of configurations, for benchmark_hub's
# convolution, hotspot, dedispersion and gemm kernels. One device command:
#
#   N=100 SEED=1 scripts/conformance/run.sh [KERNEL...]     (default: all four)
#
# Needs (at the repository root): .bin/gtune, .ext/benchmark_hub (kernels/),
# .ext/kernel_tuner (the kernel_tuner/ package), .ext/py (constraint/,
# xmltodict.py); python3 with numpy, cupy. Writes to $OUT: conformance.log,
# table.md, summary.json, results.tar.gz. Prints the table last.
#
# Environment (all optional):
#   N=100  SEED=1          sample size (gtune random_sample --max-evals) and seed
#   KERNELS="..."          kernels when none are given as arguments
#   DEADLINE_S=540         wall-clock budget of the whole command; each kernel gets
#                          a share (weights below), gtune a part of it through
#                          --time-limit, Kernel Tuner the rest (then SIGTERM);
#                          cut runs are compared on what they measured. 0: no limit
#   GTUNE_FLAGS=""         extra flags for gtune tune
#   HOTSPOT_SPEC=published the published kernels/hotspot_milo.json (default), or
#                          "suite": specs/hotspot_milo.json, written from the
#                          script (the published file's temp buffer is 4096^2
#                          floats; the kernel reads (4096+20)^2)
#   OUT, GTUNE, EXT, PYTHON, WORK, A100_DIR
#   Tests without a GPU:   GTUNE_BACKEND=sim (adds a Gtune.Simulation section to
#                          a copy of each spec), KT_SIMULATE=1 (Kernel Tuner's
#                          simulation mode on the recorded A100 caches)
#
# Read-only on the GPU: nothing here changes clocks, power limits or modes.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EXT=${EXT:-$ROOT/.ext}
GTUNE=${GTUNE:-$ROOT/.bin/gtune}
OUT=${OUT:-$ROOT/conformance-out}
PY=${PYTHON:-python3}
N=${N:-100}
SEED=${SEED:-1}
DEADLINE_S=${DEADLINE_S:-540}
GTUNE_BACKEND=${GTUNE_BACKEND:-cuda}
GTUNE_FLAGS=${GTUNE_FLAGS:-}
KT_SIMULATE=${KT_SIMULATE:-0}
HOTSPOT_SPEC=${HOTSPOT_SPEC:-published}
if [ $# -gt 0 ]; then KERNELS="$*"; else KERNELS=${KERNELS:-convolution hotspot dedispersion gemm}; fi
if [ -z "${A100_DIR:-}" ]; then
  for d in "$ROOT/shared/datasets/benchmark_hub" "$ROOT/../shared/datasets/benchmark_hub" "$EXT/a100"; do
    if [ -e "$d/convolution_milo_A100.json.gz" ]; then A100_DIR=$d; break; fi
  done
fi
A100_DIR=${A100_DIR:-}

mkdir -p "$OUT"
LOG="$OUT/conformance.log"
: > "$LOG"
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/gtune-conformance.XXXXXX")}
RES="$WORK/results"
mkdir -p "$RES"

export PYTHONUNBUFFERED=1
export PYTHONPATH="$EXT/kernel_tuner:$EXT/py${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
export CONFORMANCE_EXT="$EXT"

START=$(date +%s.%N)
now() { date +%s.%N; }
elapsed() { awk -v s="$START" -v n="$(now)" 'BEGIN{printf "%.1f", n - s}'; }
say() { echo "[$(elapsed)s] $*" | tee -a "$LOG"; }
log() { echo "[$(elapsed)s] $*" >> "$LOG"; }
# run CMD..., output to the log only
logged() { echo "+ $*" >> "$LOG"; "$@" >> "$LOG" 2>&1; }
fcalc() { awk "BEGIN{printf \"%.0f\", $*}"; }
remaining() { awk -v s="$START" -v n="$(now)" -v d="$DEADLINE_S" 'BEGIN{printf "%.0f", d - (n - s)}'; }
jsonfile() { # jsonfile FILE key=value... (values: numbers or strings; "@FILE" reads a file's first line)
  "$PY" - "$@" <<'EOF'
import json, sys
out, d = sys.argv[1], {}
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    if v.startswith("@"):
        try:
            lines = [l.strip() for l in open(v[1:], errors="replace") if l.strip()]
            v = lines[0] if lines else ""
        except OSError:
            v = ""
        d[k] = v
        continue
    try:
        d[k] = int(v)
    except ValueError:
        try:
            d[k] = float(v)
        except ValueError:
            d[k] = v
json.dump(d, open(out, "w"), indent=1)
EOF
}

# Relative cost of one configuration (for sharing DEADLINE_S among kernels):
# dedispersion's launches take ~70 ms (32 timed + verification), gemm compiles
# a large source.
weight() { case $1 in dedispersion) echo 3;; gemm) echo 1.5;; *) echo 1;; esac; }

spec_of() { case $1 in
  convolution) echo convolution_milo.json;;
  hotspot) if [ "$HOTSPOT_SPEC" = suite ]; then echo hotspot_milo.conformance.json; else echo hotspot_milo.json; fi;;
  dedispersion) echo dedispersion_milo.conformance.json;;
  gemm) echo gemm_milo.conformance.json;;
esac; }
published_of() { case $1 in dedispersion) echo dedispersion_milo.json;; gemm) echo gemm_milo.json;; esac; }
a100_of() { case $1 in convolution) echo convolution_milo_A100.json.gz;; dedispersion) echo dedispersion_milo_A100.json.gz;; esac; }

say "gtune conformance suite: kernels [$KERNELS], N=$N, seed=$SEED, deadline ${DEADLINE_S}s, gtune backend $GTUNE_BACKEND$([ "$KT_SIMULATE" = 1 ] && echo ', Kernel Tuner simulated')"
{
  echo "date: $(date -u +%FT%TZ)  host: $(hostname)  work: $WORK"
  echo "gtune: $GTUNE ($("$GTUNE" --version 2>&1 | head -1))"
  echo "repository: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo '?')"
  echo "python: $("$PY" --version 2>&1)"
  "$PY" -c 'import numpy; print("numpy", numpy.__version__)' 2>&1
  "$PY" -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -1
  "$PY" -c 'import pynvml; print("pynvml", getattr(pynvml, "__version__", "?"))' 2>&1 | tail -1
  echo "A100 caches: ${A100_DIR:-not found}"
  # Read-only queries: the GPU's state before the runs.
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode,compute_mode --format=csv 2>&1
} >> "$LOG" 2>&1

# One compiler, one set of options for both tools. Kernel Tuner compiles
# through CuPy, which appends -ftz=true (flush single-precision denormals
# to zero) to every NVRTC compilation, and loads the NVRTC of its own wheel.
# Without the flag gtune compiled different code for hotspot (39 against
# 32 registers, 1.42 against 2.00 ms for one configuration; 5 of 100
# configurations differed by more than 10 %), so gtune gets the same flag
# (KT_FTZ=0 leaves it out) and, as a precaution, the same NVRTC library
# (SAME_NVRTC=0 keeps gtune's own).
if [ "${KT_FTZ:-1}" = 1 ]; then GTUNE_FLAGS="--compiler-option=-ftz=true${GTUNE_FLAGS:+ $GTUNE_FLAGS}"; fi
if [ "${SAME_NVRTC:-1}" = 1 ] && [ "$GTUNE_BACKEND" = cuda ] && [ -z "${GTUNE_LIBNVRTC:-}" ]; then
  KT_NVRTC=$("$PY" -c 'import cupy
cupy.RawKernel("extern \"C\" __global__ void k() {}", "k").compile()
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libnvrtc.so" in l and "builtins" not in l]
print(maps[0] if maps else "")' 2>> "$LOG")
  if [ -n "$KT_NVRTC" ]; then export GTUNE_LIBNVRTC="$KT_NVRTC"; fi
fi
echo "NVRTC: gtune ${GTUNE_LIBNVRTC:-from the CUDA toolkit, own search}; CuPy $("$PY" -c 'import cupy; print(cupy.cuda.nvrtc.getVersion())' 2>&1 | tail -1)" >> "$LOG"

for f in "$GTUNE" "$EXT/benchmark_hub/kernels" "$EXT/kernel_tuner/kernel_tuner" "$EXT/py/constraint" "$EXT/py/xmltodict.py"; do
  [ -e "$f" ] || { say "missing: $f (see scripts/conformance/README.md)"; exit 2; }
done

set -- $KERNELS
TOTAL_W=0
for k in "$@"; do TOTAL_W=$(awk -v a="$TOTAL_W" -v b="$(weight "$k")" 'BEGIN{print a + b}'); done
RESERVE=20  # compare, tar, kill grace

for k in "$@"; do
  w=$(weight "$k")
  RD="$RES/$k"
  mkdir -p "$RD"
  spec=$(spec_of "$k")
  if [ -z "$spec" ]; then say "$k: unknown kernel (convolution, hotspot, dedispersion, gemm)"; continue; fi

  # This kernel's share of the time left.
  if [ "$DEADLINE_S" != 0 ]; then
    rem=$(( $(remaining) - RESERVE ))
    slot=$(awk -v r="$rem" -v w="$w" -v t="$TOTAL_W" 'BEGIN{printf "%.0f", r * w / t}')
    [ "$slot" -lt 30 ] && slot=30
    if [ "$rem" -lt 30 ]; then
      say "$k: skipped, ${rem}s left"
      jsonfile "$RD/skipped.json" reason="no time left (${rem}s)"
      TOTAL_W=$(awk -v a="$TOTAL_W" -v b="$w" 'BEGIN{print a - b}')
      continue
    fi
    slot_end=$(awk -v n="$(now)" -v s="$slot" 'BEGIN{printf "%.3f", n + s}')
    gt_limit=$(fcalc "$slot * 0.45")
    gt_hard=$(fcalc "$slot * 0.6")
  fi
  TOTAL_W=$(awk -v a="$TOTAL_W" -v b="$w" 'BEGIN{print a - b}')
  say "== $k: spec $spec${slot:+, ${slot}s for this kernel}"

  # A writable copy of benchmark_hub's kernels/ with the suite's specs.
  KD="$WORK/$k/kernels"
  rm -rf "$WORK/$k"; mkdir -p "$WORK/$k"
  cp -r "$EXT/benchmark_hub/kernels" "$KD"
  cp "$HERE/specs/dedispersion_milo.json" "$KD/dedispersion_milo.conformance.json"
  cp "$HERE/specs/gemm_milo.json" "$KD/gemm_milo.conformance.json"
  cp "$HERE/specs/hotspot_milo.json" "$KD/hotspot_milo.conformance.json"
  cp "$HERE/specs/gemm_milo_cuda.cu" "$KD/gemm_milo/gemm_milo_cuda.cu"
  SPEC="$KD/$spec"
  # The published T1 files in kernels/ against the copies in shared/ (where found).
  for f in "$spec" "$(published_of "$k")"; do
    case $f in *.conformance.json|"") continue;; esac
    sf="${A100_DIR:+$A100_DIR/specs/${f%.json}.T1.json}"
    if [ -n "$sf" ] && [ -e "$sf" ]; then
      "$PY" -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:3]); print(sys.argv[3] + ":", "same as the shared copy" if a == b else "DIFFERS from the shared copy")' "$KD/$f" "$sf" "$f" >> "$LOG" 2>&1
    fi
  done

  if [ "$GTUNE_BACKEND" = sim ]; then
    # Test mode: the simulated GPU needs the kernel's work; a copy of the spec
    # with a nominal Gtune.Simulation section.
    "$PY" - "$SPEC" "$KD/$k.sim.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s.setdefault("Gtune", {})["Simulation"] = {"Flops": "1e9", "Bytes": "1e9"}
json.dump(s, open(sys.argv[2], "w"), indent=1)
EOF
    SPEC="$KD/$k.sim.json"
  fi

  # gtune on the published T1 file, which it must refuse (exit status 2).
  pub=$(published_of "$k")
  if [ -n "$pub" ]; then
    t0=$(now)
    timeout -k 5 120 "$GTUNE" tune "$KD/$pub" --backend "$GTUNE_BACKEND" --strategy random_sample --seed "$SEED" \
      --max-evals 1 --db "$WORK/$k/published.db" --json --no-progress > "$RD/published.stdout" 2> "$RD/published.stderr"
    rc=$?
    t1=$(now)
    jsonfile "$RD/published.json" spec="$pub" exit_status=$rc message=@"$RD/published.stderr" \
      wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')"
    cat "$RD/published.stdout" "$RD/published.stderr" >> "$LOG"
    say "$k: gtune on the published $pub: exit $rc (expected 2): $(grep -m1 . "$RD/published.stderr" | cut -c1-200)"
  fi

  # Dedispersion inputs and the GPU reference.
  if [ "$k" = dedispersion ]; then
    ref=()
    [ "$KT_SIMULATE" = 1 ] && ref=(--reference zeros)
    t0=$(now)
    logged "$PY" "$HERE/kt_run.py" prepare --kernels-dir "$KD" --seed "$SEED" --json "$RD/prepare.json" "${ref[@]}"
    rc=$?
    say "$k: prepare: exit $rc in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')s"
    if [ $rc != 0 ]; then say "$k: prepare failed, skipping the kernel"; continue; fi
  fi

  # gtune: a seeded random sample of N configurations.
  tl=()
  [ "$DEADLINE_S" != 0 ] && tl=(--time-limit "${gt_limit}s")
  gt_to=()
  [ "$DEADLINE_S" != 0 ] && gt_to=(timeout -k 10 "$gt_hard")
  t0=$(now)
  # shellcheck disable=SC2086
  "${gt_to[@]}" "$GTUNE" tune "$SPEC" --backend "$GTUNE_BACKEND" --strategy random_sample \
    --seed "$SEED" --max-evals "$N" --db "$RD/gtune.db" --json --no-progress "${tl[@]}" $GTUNE_FLAGS \
    > "$RD/gtune_tune.json" 2> "$RD/gtune_tune.stderr"
  rc=$?
  t1=$(now)
  gw=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')
  jsonfile "$RD/gtune_run.json" exit_status=$rc wall_s="$gw" spec="$spec" n="$N" seed="$SEED" \
    time_limit_s="${gt_limit:-0}" backend="$GTUNE_BACKEND" message=@"$RD/gtune_tune.stderr"
  { echo "--- gtune tune stdout"; cat "$RD/gtune_tune.json"; echo "--- gtune tune stderr"; cat "$RD/gtune_tune.stderr"; } >> "$LOG"
  say "$k: gtune tune: exit $rc in ${gw}s"
  if ! logged "$GTUNE" export --db "$RD/gtune.db" --run 1 --format kerneltuner -o "$RD/gtune_cache.json"; then
    say "$k: gtune export failed, no sample for Kernel Tuner"
    continue
  fi
  nsample=$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[2]); import compare; print(len(compare.load_cache(sys.argv[1])["cache"]))' "$RD/gtune_cache.json" "$HERE")
  say "$k: gtune evaluated $nsample configurations"
  if [ "${nsample:-0}" = 0 ]; then continue; fi

  # Kernel Tuner on exactly those configurations.
  sim=()
  if [ "$KT_SIMULATE" = 1 ]; then
    a=$(a100_of "$k")
    if [ -z "$a" ] || [ -z "$A100_DIR" ]; then say "$k: no A100 cache to simulate Kernel Tuner on"; continue; fi
    sim=(--simulation-cache "$A100_DIR/$a")
  fi
  # CuPy keeps compiled kernels on disk across processes; a fresh cache per
  # kernel keeps Kernel Tuner's compile time that of a first run, as gtune's
  # is (gtune keeps no compiled kernels).
  export CUPY_CACHE_DIR="$WORK/$k/cupy-cache"
  rm -rf "$CUPY_CACHE_DIR"
  resume=()
  for attempt in 1 2 3 4 5; do
    kt_to=()
    if [ "$DEADLINE_S" != 0 ]; then
      left=$(awk -v e="$slot_end" -v n="$(now)" 'BEGIN{printf "%.0f", e - n}')
      [ "$left" -lt 5 ] && left=5
      kt_to=(timeout -k 15 "$left")
    fi
    t0=$(now)
    logged "${kt_to[@]}" "$PY" "$HERE/kt_run.py" tune --kernel "$k" --kernels-dir "$KD" --sample "$RD/gtune_cache.json" \
      --cache "$RD/kt_cache.json" --json "$RD/kt_run.json" --seed "$SEED" "${sim[@]}" "${resume[@]}"
    rc=$?
    say "$k: Kernel Tuner: exit $rc in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')s"
    [ $rc = 3 ] || break
    resume=(--resume)
  done
  if [ ! -s "$RD/kt_run.json" ]; then  # killed before it could write its record
    jsonfile "$RD/kt_run.json" error="kt_run.py exited with status $rc without a record" timed_out=$([ $rc -ge 124 ] && echo 1 || echo 0) \
      process_wall_s="$(awk -v a="$t0" -v b="$(now)" 'BEGIN{print b - a}')"
  fi
  rm -f "$WORK/$k/kernels/dedisp_milo/"*.npy "$WORK/$k/kernels/dedisp_milo/"*.u8 "$WORK/$k/kernels/dedisp_milo/"*.f32
done

{ echo "--- GPU state after the runs"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv 2>&1; } >> "$LOG"

"$PY" "$HERE/compare.py" "$RES" ${A100_DIR:+--a100-dir "$A100_DIR"} --md "$OUT/table.md" --json "$OUT/summary.json" >> "$LOG" 2>&1
crc=$?
tar -C "$RES" -czf "$OUT/results.tar.gz" . 2>> "$LOG"
say "done in $(elapsed)s; compare exit $crc; results: $OUT (conformance.log, table.md, summary.json, results.tar.gz)"
echo
cat "$OUT/table.md" 2>/dev/null || echo "(no table: see $LOG)"
