#!/bin/bash
# kt-strategies-host.sh BUDGET[,BUDGET...] STRATEGY...: Kernel Tuner 1.4's
# strategies in its simulation mode (scripts/kt-strategies.py) on every
# core of a many-core host, such as a device host reached through the
# device tool, which has no ../shared: the caches come from $HUB (default
# .ktrun/hub, a git-ignored folder), staged here first with
#
#   mkdir -p .ktrun/hub/specs
#   cp ../shared/datasets/benchmark_hub/*_milo_{A100,A4000,A6000,MI250X,W6600,W7800}.json.gz .ktrun/hub/
#   cp ../shared/datasets/benchmark_hub/specs/* .ktrun/hub/specs/
#
# and carried with .ext/kernel_tuner and .ext/py. Each budget is its own
# run, writing $OUT/kt-$TAG$B.json (the table's input), .jsonl (each run as
# it ends: what a cut call keeps), .out and .err. SEEDS (default 100),
# TAG and PY (default python3) are read from the environment. With
# RESUME=DIR, a DIR/kt-$TAG$B.jsonl of an earlier call (cut short, or of
# fewer seeds) is copied in and its runs are taken, not run again. Issue 35's
# table at 100 seeds came from these calls (made with this script's first
# form, an uncommitted .ktrun/run.sh of the same arguments and outputs)
#
#   scripts/kt-strategies-host.sh 25,100 random_sample genetic_algorithm pso diff_evo dual_annealing \
#     simulated_annealing greedy_ils greedy_mls firefly_algorithm basinhopping adaptive_tabu_greywolf hybrid_vndx
#   scripts/kt-strategies-host.sh 400 (the same twelve)
#   TAG=bo- scripts/kt-strategies-host.sh 25,100 bayes_opt
#   SEEDS=40 TAG=bo- scripts/kt-strategies-host.sh 400 bayes_opt
#   RESUME=.ktrun/prev TAG=bo- scripts/kt-strategies-host.sh 400 bayes_opt
#     (the 40 seeds' .jsonl in .ktrun/prev: seeds 40-99 run, 0-39 taken)
set -u
out=${OUT:?OUT: the folder to write to}
hub=${HUB:-.ktrun/hub}
py=${PY:-python3}
b=${1:?usage: kt-strategies-host.sh BUDGET[,BUDGET...] STRATEGY...}
shift
echo "$(nproc) CPUs; $($py --version)"
$py -c "import sklearn; print('scikit-learn', sklearn.__version__)" 2>&1 | tail -1
args=()
for s in "$@"; do args+=(--strategy "$s"); done
for c in "$hub"/*.json.gz; do args+=(--cache "$c"); done
for budget in ${b//,/ }; do
	f=$out/kt-${TAG:-}$budget
	resume=()
	if [ -n "${RESUME:-}" ] && [ -f "$RESUME/kt-${TAG:-}$budget.jsonl" ]; then
		cp "$RESUME/kt-${TAG:-}$budget.jsonl" "$f.jsonl"
		resume=(--resume)
	fi
	$py scripts/kt-strategies.py --seeds "${SEEDS:-100}" --budgets "$budget" "${args[@]}" --jobs "$(nproc)" \
		--json "$f.json" --partial "$f.jsonl" "${resume[@]}" >"$f.out" 2>"$f.err"
	echo "budget $budget: exit $?"
	tail -1 "$f.err"
	grep mean "$f.out"
done
