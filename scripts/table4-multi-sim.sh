#!/usr/bin/env bash
# Table IV's multi-kernel row on the simulated GPU
# (multi-kernel-autotuning-performance-energy.md, Algorithms 3 and 4): the
# four Rodinia kernels of examples/workloads/rodinia-4.yaml run together.
# Time: brute force, Algorithm 3 (multi_occupancy_greedy) and
# multi_alone_greedy (after a brute force of each spec alone), each in its
# own database. Energy: the same workload with the chip's SM clock as a
# tunable parameter (the simulated GPU sets it per plan; no real GPU
# setting is touched): brute force by energy and Algorithm 4
# (multi_occupancy_greedy_energy). Then scripts/table4-multi.py prints the
# rows. Usage: scripts/table4-multi-sim.sh DEVICE CLOCKS
#   DEVICE  device-database id of the simulated GPU (k40c, k20c, h100_sxm)
#   CLOCKS  YAML list of SM clocks in MHz, e.g. "[875, 810, 745, 666]"
set -euo pipefail
dev=$1 clocks=$2
OUT=${OUT:-/tmp/gtune-out}/$dev
mkdir -p "$OUT"
G=${GTUNE:-go run ./cmd/gtune}
R=$PWD/examples/rodinia
W=examples/workloads/rodinia-4.yaml
WC=$OUT/rodinia-4-clocks.yaml
sed -e "s#\.\./rodinia#$R#" "$W" > "$OUT/rodinia-4.yaml"
{ cat "$OUT/rodinia-4.yaml"; echo "tune:"; echo "  nvml_gr_clock: $clocks"; } > "$WC"
rm -f "$OUT"/*.db
run() { # name db args...: gtune tune on the simulated DEVICE, JSON to $OUT/name.json
  local name=$1 db=$2; shift 2
  $G tune "$@" --backend sim --sim-device "$dev" --db "$OUT/$db" --no-progress --json > "$OUT/$name.json"
}
run bf bf.db "$OUT/rodinia-4.yaml"
run alg3 alg3.db "$OUT/rodinia-4.yaml" --strategy multi_occupancy_greedy
for k in lud streamcluster hotspot particlefilter; do
  run "alone-$k" alone.db "$R/$k/spec.json"
done
run alone alone.db "$OUT/rodinia-4.yaml" --strategy multi_alone_greedy
run ebf ebf.db "$WC" --objective energy --allow-gpu-settings
run alg4 alg4.db "$WC" --strategy multi_occupancy_greedy_energy --objective energy --allow-gpu-settings
$G space "$OUT/rodinia-4.yaml" --device "$dev" --json > "$OUT/space.json"
python3 scripts/table4-multi.py "$OUT" "$dev"
