#!/bin/sh
# The power model's readings and its real-kernel checks on one GPU (run on
# the device machine from the repository root; OUT is where results go):
# gtune probe --power twice, cuBLAS SGEMM and an elementwise a·x + y with
# NVML energy (scripts/gemm-power.py), and ncu's counts of the same
# kernels (one launch each) that give their activity. Read-only: ncu runs
# with --clock-control none; nothing on the GPU is set.
set -u
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=uuid,name,power.limit,temperature.gpu --format=csv > "$R/smi.csv"
for k in 1 2; do
	.bin/gtune probe --backend cuda --device 0 --db "$R/p.db" --json > "$R/p$k.json" 2> "$R/p$k.err"
done
for x in "gemm float32 8192" "gemm float32 4096" "axpy float32 268435456"; do
	set -- $x
	python3 scripts/gemm-power.py --op "$1" --dtype "$2" --n "$3" > "$R/pw_$1_$3.json" 2>&1
done
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
for x in "gemm float32 8192" "gemm float32 4096" "axpy float32 268435456"; do
	set -- $x
	timeout 200 ncu --clock-control none --csv --print-units base --metrics "$M" \
		python3 scripts/gemm-power.py --once --op "$1" --dtype "$2" --n "$3" > "$R/ncu_$1_$3.csv" 2> "$R/ncu_$1_$3.err"
done
rm -f "$R/p.db"
tar czf "$OUT/power.tgz" -C "$OUT" r && rm -rf "$R"
