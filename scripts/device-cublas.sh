#!/bin/sh
# cuBLAS on one GPU (run on the device machine from the repository root;
# OUT is where results go): the GPU test of the library path, then
# examples/dgemm/cublas.json tuned twice, five repeats, into a fresh
# database (the second run on the GPU the first warmed); gtune probe
# --power too where the GPU is an H200. Read-only.
set -u
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=index,uuid,name,power.limit,temperature.gpu --format=csv > $R/smi.csv
GTUNE_CUDA_TEST=1 timeout 120 .bin/cuda.test -test.run 'TestIntegrationCuBLAS' -test.v > $R/cudatest.txt 2>&1
for k in 1 2; do
  timeout 200 .bin/gtune tune examples/dgemm/cublas.json --backend cuda --repeat 5 --db $R/c.db --fresh --no-progress > $R/cublas$k.txt 2>&1
done
if grep -q H200 $R/smi.csv; then .bin/gtune probe --power --backend cuda --db $R/p.db --json > $R/probe.json 2> $R/probe.err; fi
tar czf $OUT/dev3.tgz -C $OUT r
cat $R/smi.csv; tail -5 $R/cudatest.txt; tail -8 $R/cublas1.txt; tail -8 $R/cublas2.txt
