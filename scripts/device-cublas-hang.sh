#!/bin/sh
# cublasDgemm tuned from a GPU as found, the GPU's utilisation, power,
# temperature and SM clock read every 4 s beside it: the first energy
# measurement's warm-up on a power-capped routine (the load's queue, see
# backend/cuda/energy.go). Read-only. Run from the repository root on the
# device machine; OUT is where results go.
set -u
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=index,uuid,name,temperature.gpu --format=csv > $R/smi.csv
.bin/gtune tune examples/dgemm/cublas.json --backend cuda --db $R/d.db --fresh --repeat 3 --no-progress > $R/t.txt 2>&1 &
P=$!
while kill -0 $P 2>/dev/null; do sleep 4; nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,temperature.gpu,clocks.sm --format=csv,noheader >> $R/smi.log; done
cat $R/smi.csv; awk 'NR%3==1' $R/smi.log; cat $R/t.txt
