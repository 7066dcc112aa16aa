#!/bin/sh
# Issue 50, seed 000: the seven single-kernel spaces of the Algorithm 1
# table measured whole on one GPU (brute force, time, the PTX kept for
# gtune project --emulate) with the GPU's device profile (gtune probe,
# no power) in the same database, so that occupancy-guided and
# projection-guided procedures can be replayed over it on the CPU
# (scripts/alg1-projected.py). Read-only. Carried: .bin/gtune. Writes
# $OUT/a1.tgz.
set -u
R=$OUT/a1
mkdir -p "$R"
nvidia-smi --query-gpu=name,uuid,driver_version,power.limit --format=csv > "$R/smi.csv"
.bin/gtune probe --backend cuda --db "$R/h.db" --power=false > "$R/probe.txt" 2>&1
for s in vector_add stencil matmul rodinia/hotspot rodinia/lud rodinia/particlefilter rodinia/streamcluster; do
	timeout -s INT "${LIMIT:-60}" .bin/gtune tune "examples/$s/spec.json" --backend cuda --strategy brute_force --energy=false --keep-ptx \
		--db "$R/h.db" --no-progress > "$R/$(basename "$s").txt" 2>&1
	echo "$s: rc $?" >> "$R/rc.txt"
done
tar czf "$OUT/a1.tgz" -C "$OUT" a1 && rm -rf "$R"
