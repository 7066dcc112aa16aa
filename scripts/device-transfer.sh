#!/usr/bin/env bash
# The default tuning of a kernel on a GPU whose results database already
# holds it on other GPUs (issue 35), on a real GPU, read-only:
# benchmark_hub's convolution with the Kernel Tuner caches of other GPUs
# imported (gtune import CACHE --spec SPEC), then, for each of SEEDS, B
# evaluations of the default (transfer from the database) and of bayes_opt
# on an empty database, each with tune's default configurations in flight
# and one at a time (NAME_one), and of random_sample, each compiling every
# configuration it measures (--no-compile-cache), so that wall times
# compare; REF=N runs one N-evaluation bayes_opt as a reference best
# instead. Energy is not measured.
#
#   CACHES=.bin/caches SEEDS="1 2 3 4" B=25 scripts/device-transfer.sh
#   REF=400 scripts/device-transfer.sh
#
# Leaves in $OUT: transfer.log, runs.tgz (runs/NAME-SEED.json, each run's
# tune --json, written as the run ends) and transfer.json (each run's
# strategy, seed, best configuration and time). Prints the summary last.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
W=${WORK:-$(mktemp -d)}
R=$OUT/runs
mkdir -p "$OUT" "$W" "$R"
exec > >(tee -a "$OUT/transfer.log") 2>&1
G=${GTUNE:-.bin/gtune}
# The driver's JIT cache (~/.nv/ComputeCache) keeps what an earlier run
# compiled: on an H200 a convolution's 24 configurations compiled one at a
# time took 2.56 s each, and 0.07 s each the second time. Off, so that
# every run pays what a first run does.
export CUDA_CACHE_DISABLE=1
SPEC=${SPEC:-.ext/benchmark_hub/kernels/convolution_milo.json}
CACHES=${CACHES:-.bin/caches}
SEEDS=${SEEDS:-1 2 3 4 5 6 7 8}
B=${B:-25}
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu --format=csv
run() { # run NAME SEED DB FLAGS...: one tuning run, its JSON in $R/NAME-SEED.json
	local name=$1 seed=$2 db=$3
	shift 3
	local t0 t1 rc
	t0=$(date +%s.%N)
	"$G" tune "$SPEC" --backend cuda --energy=false --no-compile-cache --db "$db" --seed "$seed" --json --quiet "$@" > "$R/$name-$seed.json" 2> "$W/$name-$seed.err"
	rc=$?
	t1=$(date +%s.%N)
	echo "$name seed $seed: exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}') s; $(grep -v "GlobalSize is not used" "$W/$name-$seed.err" | head -c 300 | tr '\n' ' ')"
}
if [ -n "${REF:-}" ]; then
	run "bayes_opt_$REF" 1 "$W/ref.db" --strategy bayes_opt --max-evals "$REF"
else
	for c in "$CACHES"/*.json.gz; do
		"$G" import "$c" --spec "$SPEC" --db "$W/priors.db" --quiet | tail -1
	done
	for s in $SEEDS; do
		cp "$W/priors.db" "$W/t$s.db"
		run "default_$B" "$s" "$W/t$s.db" --max-evals "$B"
		cp "$W/priors.db" "$W/u$s.db"
		run "default_one_$B" "$s" "$W/u$s.db" --max-evals "$B" --in-flight 1
		run "bayes_opt_$B" "$s" "$W/b$s.db" --strategy bayes_opt --max-evals "$B"
		run "bayes_opt_one_$B" "$s" "$W/o$s.db" --strategy bayes_opt --max-evals "$B" --in-flight 1
		run "random_sample_$B" "$s" "$W/r$s.db" --strategy random_sample --max-evals "$B"
	done
fi
# Many small files do not all come back from a device run: one archive.
tar czf "$OUT/runs.tgz" -C "$OUT" runs && mv "$R" "$W/runs-kept"
python3 - "$W/runs-kept" "$OUT/transfer.json" <<'PY'
import glob, json, os, statistics, sys
w, out = sys.argv[1], sys.argv[2]
runs = []
for f in sorted(glob.glob(os.path.join(w, "*-*.json"))):
    name, seed = os.path.basename(f)[:-5].rsplit("-", 1)
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f"{f}: {e}")
        continue
    b = d.get("best") or {}
    runs.append({"run": name, "seed": int(seed), "strategy": d.get("strategy"), "evaluated": d.get("evaluated"),
                 "elapsed_s": d.get("elapsed_s"), "time": d.get("time"), "compiled": d.get("compiled"), "key": b.get("key"), "time_ms": (b.get("objectives") or {}).get("time")})
json.dump(runs, open(out, "w"), indent=1)
by = {}
for r in runs:
    by.setdefault(r["run"], []).append(r)
for name, rs in sorted(by.items()):
    ts = sorted(r["time_ms"] for r in rs if r["time_ms"])
    if not ts:
        print(f"{name}: nothing valid")
        continue
    keys = {}
    for r in rs:
        keys[r["key"]] = keys.get(r["key"], 0) + 1
    print(f"{name} ({rs[0]['strategy']}, {len(rs)} runs): best time median {statistics.median(ts):.4f} ms, min {ts[0]:.4f}, max {ts[-1]:.4f}; best configurations {keys}")
    # Where the wall time went, median s over the runs (tuner.Time).
    med = lambda k: statistics.median((r["time"] or {}).get(k, 0) for r in rs)
    print(f"  wall {statistics.median(r['elapsed_s'] or 0 for r in rs):.1f} s: compile {med('compile_s'):.1f}, compile wait {med('compile_wait_s'):.1f}, GPU {med('backend_s'):.1f}, framework {med('framework_s'):.1f}")
PY
