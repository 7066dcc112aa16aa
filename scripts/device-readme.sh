#!/usr/bin/env bash
# The README's H100 examples: devices, vector_add and stencil brute force
# with energy, the stencil re-ranked by energy, occupancy of the local GPU,
# and the sensor check. Read-only on the GPU. Leaves $OUT/readme.log and
# $OUT/readme.db.
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/readme.log") 2>&1
G=${GTUNE:-.bin/gtune}
run() { echo "\$ gtune $*"; "$G" "$@"; echo "(exit $?)"; }
run devices
run tune examples/vector_add/spec.json --backend cuda --energy --db "$OUT/readme.db" --no-progress
run tune examples/stencil/spec.json --backend cuda --energy --db "$OUT/readme.db" --no-progress
run tune examples/stencil/spec.json --backend cuda --energy --db "$OUT/readme.db" --no-progress --objective energy
printf 'block_size,registers,shared_memory\n256,32,0\n1024,64,0\n128,255,49152\n' | { echo "\$ gtune occupancy --sim-device local --batch"; "$G" occupancy --sim-device local --batch; }
run occupancy --sim-device h100_sxm --block-size 256 --registers 40 --shared-memory 16384
run sensor-check --backend cuda
