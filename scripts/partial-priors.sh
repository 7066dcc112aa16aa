#!/usr/bin/env bash
# partial-priors.sh N OUT [GTUNE]: the priors a results database would
# hold after tuning each benchmark_hub kernel on each GPU for N evaluations
# with bayes_opt (gtune replay --db, seed 1), written back as Kernel Tuner
# caches OUT/NAME.json with the T1 specs in OUT/specs. They measure the
# transfer strategy as gtune tune uses it by default (prior "database"):
#
#   scripts/partial-priors.sh 100 /tmp/p100
#   gtune bench-strategies --no-score --seeds 100 --budgets 25,100 \
#     --strategy transfer $(for f in /tmp/p100/*.json; do echo --prior-cache $f; done) \
#     --spec-dir /tmp/p100/specs
#
# Each cache's priors are the other GPUs' caches of its kernel, never its
# own (benchmark.TransferPriors matches them by name).
set -euo pipefail
n=${1:?usage: partial-priors.sh N OUT [GTUNE]}
out=${2:?usage: partial-priors.sh N OUT [GTUNE]}
gtune=${3:-gtune}
hub=${HUB:-../shared/datasets/benchmark_hub}
mkdir -p "$out/specs"
cp "$hub"/specs/*.T1.json "$out/specs/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "$hub"/*.json.gz; do
	name=$(basename "$c" .json.gz)
	if [[ $name == *_T4 ]]; then
		continue # the same runs as a cache, in T4 form (bench-strategies skips them too)
	fi
	spec=""
	for s in "$hub"/specs/*.T1.json; do
		k=$(basename "$s" .T1.json)
		if [[ $name == "${k}_"* && ( -z $spec || ${#k} -gt ${#spec} ) ]]; then
			spec=$k
		fi
	done
	if [[ -z $spec ]]; then
		echo "partial-priors: no T1 spec for $name: skipped" >&2
		continue
	fi
	rm -f "$tmp/r.db"
	if ! "$gtune" replay "$c" --spec "$hub/specs/$spec.T1.json" --strategy bayes_opt --max-evals "$n" --seed 1 --db "$tmp/r.db" --quiet >/dev/null 2>"$tmp/err"; then
		echo "partial-priors: $name: $(head -1 "$tmp/err"): skipped" >&2
		continue
	fi
	"$gtune" export 1 --db "$tmp/r.db" -o "$out/$name.json" --quiet
done
