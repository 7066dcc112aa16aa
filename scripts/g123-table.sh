#!/bin/sh
# The thesis's G1/G2/G3 comparison (autotuning-energy-efficiency-power-
# capping.md, Tables 3.4-3.7) on simulated GPUs with their calibrated power
# models: each example kernel tuned by brute force for energy with the GPU
# at its default settings ("none"), and with G1 (SM clock, memory clock,
# power limit), G2 (clocks) and G3 (power limit) as tunable parameters at
# the thesis's steps (100 MHz, 10 W), every configuration measured REPEAT
# times (the thesis ran everything twice). Prints nothing; writes one
# database per run under OUT and a Kernel Tuner cache of each
# (scripts/g123-table.py reads them).
#
#   OUT=/tmp/g123 DEVICES="h100_sxm a100_80gb" KERNELS="vector_add stencil matmul" REPEAT=2 scripts/g123-table.sh
set -eu
GTUNE=${GTUNE:-gtune}
OUT=${OUT:-/tmp/g123}
DEVICES=${DEVICES:-h100_sxm a100_80gb}
KERNELS=${KERNELS:-vector_add stencil matmul}
REPEAT=${REPEAT:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
for d in $DEVICES; do
	for k in $KERNELS; do
		for g in none g1 g2 g3; do
			db=$OUT/$d-$k-$g.db
			[ -f "$OUT/$d-$k-$g.json" ] && continue
			rm -f "$db"
			set -- --backend sim --sim-device "$d" --strategy brute_force --objective energy --energy --repeat "$REPEAT" --db "$db" --quiet
			if [ "$g" != none ]; then
				set -- "$@" --gpu-settings "$g" --clock-step 100 --power-step 10 --allow-gpu-settings
			fi
			start=$(date +%s)
			"$GTUNE" tune "$ROOT/examples/$k/spec.json" "$@" > "$OUT/$d-$k-$g.txt" 2>&1
			echo "$d $k $g $(( $(date +%s) - start )) s" >> "$OUT/times.txt"
			"$GTUNE" export 1 --db "$db" > "$OUT/$d-$k-$g.json"
		done
	done
done
