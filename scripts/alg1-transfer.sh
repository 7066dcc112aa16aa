#!/bin/sh
# Issue 50, seed 000: "measure the configurations projected fastest" as
# gtune's own commands, replayed over whole spaces measured on one GPU
# (scripts/device-alg1.sh's database: the runs, their PTX, the GPU's
# device profile): gtune project --write-cache (the work emulated from the
# kept PTX, or declared by the spec) gives the prior, and transfer with
# initial_samples=8 random_initial=0 measures the 8 configurations
# projected fastest first (its initial design: the prior's best, then its
# next best ranks), replayed by gtune replay over the run's cache. Mode
# "in-process" is the same with transfer's prior=projection, the
# projection made by the run itself from the database's profile and kept
# PTX (a copy of DB: replay keeps its runs there).
#
#   GTUNE=gtune DB=h.db scripts/alg1-transfer.sh [K]
set -eu
G=${GTUNE:-gtune}
K=${1:-8}
W=$(mktemp -d)
run=0
for s in vector_add stencil matmul rodinia/hotspot rodinia/lud rodinia/particlefilter rodinia/streamcluster; do
	run=$((run + 1))
	spec=examples/$s/spec.json
	"$G" export "$run" --db "$DB" > "$W/m.json"
	for mode in emulated declared in-process; do
		mkdir -p "$W/$mode"
		prior=$W/$mode/h100_sxm.json
		if [ "$mode" = in-process ]; then
			cp "$DB" "$W/copy.db"
			prior=projection
		elif [ "$mode" = emulated ]; then
			"$G" project "$spec" --config all --devices h100_sxm --db "$DB" --emulate --write-cache "$W/$mode" > /dev/null
		else
			"$G" project "$spec" --config all --devices h100_sxm --db "$DB" --write-cache "$W/$mode" > /dev/null
		fi
		"$G" replay "$W/m.json" --spec "$spec" --strategy transfer --strategy-param prior="$prior" --db "$W/copy.db" \
			--strategy-param initial_samples="$K" --strategy-param random_initial=0 --max-evals "$K" > "$W/r.txt"
		opt=$(sed -n 's/^recorded optimum: \(.*\) = \(.*\)$/\2/p' "$W/r.txt")
		set -- $(awk '$1 == "1" && $2 == "1" {print $6, $7}' "$W/r.txt")
		echo "$s $mode: best of $K $1 ms ($2) against the optimum $opt ms: $(python3 -c "print('%.1f %%' % (100 * ($1 / $opt - 1)))")"
	done
done
rm -rf "$W"
