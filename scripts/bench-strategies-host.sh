#!/bin/bash
# bench-strategies-host.sh NAME [BENCH-STRATEGIES FLAG ...]: one
# `gtune bench-strategies --quiet --no-score --json` run on every core of a
# many-core host, such as a device host reached through the device tool,
# which has no Go and no ../shared. gtune comes cross-built in .bin/gtune
#
#   GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -ldflags "-s -w" -o .bin/gtune ./cmd/gtune
#
# and the caches and T1 specs from $HUB (default .ktrun/hub, staged as
# scripts/kt-strategies-host.sh says); carry .bin/gtune and .ktrun. The
# run writes $OUT/NAME.json and NAME.err and prints its wall time and mean
# rows. Runs are seeded per cache, strategy and run index
# (benchmark.Seed) and do not depend on the worker count, so the figures
# are those of the same command on this machine: bayes_opt at 400
# evaluations, 100 seeds, gave 0.942 on a 64-core host in 36 s and on
# the 2-core development machine in 1,571 s (sharing its cores with other
# runs). Issue 35's eighth step ran it as
#
#   scripts/bench-strategies-host.sh cyc40-400 --seeds 100 --budgets 400 --strategy bayes_opt \
#     --strategy-param bayes_opt.cycle=40
#
# (a hyperparameter tried and not kept; BENCHMARKS.md, "eighth step"), and
# its first form gave the default's 0.942 above with
#
#   scripts/bench-strategies-host.sh def-400 --seeds 100 --budgets 400 --strategy bayes_opt
set -u
out=${OUT:?OUT: the folder to write to}
hub=${HUB:-.ktrun/hub}
name=${1:?usage: bench-strategies-host.sh NAME [BENCH-STRATEGIES FLAG ...]}
shift
args=(--spec-dir "$hub/specs")
for c in "$hub"/*.json.gz; do
	case $c in *_T4.json.gz) continue ;; esac # the A100 results again, as T4: bench-strategies leaves it out of its defaults too
	args+=(--cache "$c")
done
t0=$(date +%s)
.bin/gtune bench-strategies --quiet --no-score --json "${args[@]}" "$@" >"$out/$name.json" 2>"$out/$name.err"
rc=$?
echo "$name: exit $rc, $(($(date +%s) - t0)) s on $(nproc) CPUs"
[ $rc = 0 ] || tail -3 "$out/$name.err"
python3 - "$out/$name.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["mean"]:
    print(f"  {r['problem']:>26} {r['strategy']:>20} gap " + " ".join(f"{g:.3f}" for g in r["gap_closed"]))
EOF
