#!/usr/bin/env bash
# Issue 48's remaining figures on a host of four GPUs, read-only on the
# GPUs (no clock, power limit or mode is changed). Stages ($STAGES, run
# in the order given):
#   measure, measure-again  measure --devices all --energy of one
#            configuration (vector_add 256,4)
#   ex3-1, ex3-4 (ex3: both in turn)  the three examples' workload (matmul and stencil free,
#            vector_add at 256,4: 598 plans), brute force, time only
#            (--energy=false: the stencil's GFLOPS/W metric would measure
#            energy), on GPU 0 and then on --devices all
#   conv-cold, conv-warm  benchmark_hub's convolution_milo (staged in
#            .ext/benchmark_hub/kernels), random 400 (seed 1), without
#            the compile cache, on --devices all: first on a fresh host
#            (conv-cold, the first stage), then again (conv-warm)
#   rodinia-1, rodinia-4  rodinia-4's brute force (2,916 plans), time
#            only, on GPU 0 and on --devices all
#   evict    takes the compiler's and the driver's libraries and the
#            gtune programs out of the page cache (posix_fadvise
#            DONTNEED, read-only for the files): the next run finds them
#            as a fresh host does
#   conv-old the conv run with $OLD (another gtune build), for a
#            before/after on one host
#   vadd-1, vadd-4  vector_add brute force with energy, the default
#            thermal policy, on GPU 0 and on --devices all
#   slurm    the same workload in the coordinated mode (tune --slurm)
#            inside a one-node Slurm allocation with gres gpu:<the host's GPUs>: Debian
#            12's slurmctld, slurmd, slurm-client and munge carried as
#            .deb files in $DEBS, unpacked into /opt/gtune-slurm (the
#            plugins in their compiled-in folder), started as root
# TRACE=1 sets GTUNE_TRACE=prepare,compile: each run's .err then says
# where its time before the first measurement went (the GPUs opened, the
# arguments, the reference run) and each compile process's first
# compilation.
# Every tuning run compiles without the compile cache, so the runs pay
# the same compilations. Leaves $OUT/i48.tar.gz (databases, outputs,
# logs); prints the summary last. Needs .bin/gtune (linux/amd64).
set -uo pipefail
OUT=${OUT:-/tmp/i48}
RUNS=${RUNS:-/tmp/i48-runs}
mkdir -p "$OUT" "$RUNS"
LIMIT=${LIMIT:-200}
G=$(realpath "${GTUNE:-.bin/gtune}")
ROOT=$(pwd)
STAGES=${STAGES:-measure ex3 measure-again slurm} # run in this order
BUDGET=${BUDGET:-100000} # seconds: a stage that would start later is skipped
[ "${TRACE:-0}" = 1 ] && export GTUNE_TRACE=prepare,compile
DEBS=$(realpath "${DEBS:-.debs}" 2>/dev/null)
temps() { nvidia-smi --query-gpu=index,temperature.gpu,power.draw --format=csv,noheader | tr '\n' ';'; }
SUMMARY=$RUNS/summary.txt
timed() { # name command...: wall time, exit status, the GPUs before
  local name=$1; shift
  local before; before=$(temps)
  local t0; t0=$(date +%s.%N)
  timeout "$LIMIT" "$@" > "$RUNS/$name.out" 2> "$RUNS/$name.err"
  local rc=$?
  echo "=== $name: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s; before: $before" | tee -a "$SUMMARY"
}
. "$(dirname "$0")/ex3-workload.sh"
ex3_workload "$RUNS/ex3.yaml" "$ROOT"
{ nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv; grep PRETTY /etc/os-release; ldd --version | head -1; nproc; } | tee -a "$SUMMARY"
vadd=examples/vector_add/spec.json
measure() { # name
  timed "measure-$1" "$G" measure $vadd --backend cuda --devices all --energy --config 256,4 --db "$RUNS/measure-$1.db"
}
ex3_1() {
  timed ex3-1 "$G" tune "$RUNS/ex3.yaml" --backend cuda --device 0 --energy=false --no-compile-cache --no-progress --db "$RUNS/ex3-1.db"
}
ex3_4() {
  timed ex3-4 "$G" tune "$RUNS/ex3.yaml" --backend cuda --devices all --energy=false --no-compile-cache --no-progress --db "$RUNS/ex3-4.db"
}
conv() { # name: convolution_milo (benchmark_hub, staged in .ext), a
  # random sample of 400 (seed 1), no compile cache, on every GPU
  timed "conv-$1" "$G" tune .ext/benchmark_hub/kernels/convolution_milo.json --backend cuda --devices all --strategy random_sample --seed 1 --max-evals 400 --no-compile-cache --no-progress --db "$RUNS/conv-$1.db"
}
conv_old() {
  timed conv-old "$(realpath "$OLD")" tune .ext/benchmark_hub/kernels/convolution_milo.json --backend cuda --devices all --strategy random_sample --seed 1 --max-evals 400 --no-compile-cache --no-progress --db "$RUNS/conv-old.db"
}
evict() { # the page cache's copies of what a run loads
  python3 - "$G" ${OLD:+"$(realpath "$OLD")"} /usr/local/cuda/lib64/libnvrtc* /usr/lib/x86_64-linux-gnu/libcuda.so* /usr/lib/x86_64-linux-gnu/libnvidia-ml.so* <<'PY' | tee -a "$SUMMARY"
import os, sys
n = 0
for p in sys.argv[1:]:
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError:
        continue
    n += os.fstat(fd).st_size
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
print(f"evict: {n >> 20} MiB of {len(sys.argv) - 1} files out of the page cache")
PY
}
vadd() { # 1|4
  local dev="--device 0"; [ "$1" = 4 ] && dev="--devices all"
  timed "vadd-$1" "$G" tune $vadd --backend cuda $dev --energy --no-progress --db "$RUNS/vadd-$1.db"
}
rodinia() { # 1|4
  local dev="--device 0"; [ "$1" = 4 ] && dev="--devices all"
  timed "rodinia-$1" "$G" tune examples/workloads/rodinia-4.yaml --backend cuda $dev --no-compile-cache --no-progress --db "$RUNS/rodinia-$1.db"
}
slurm() ( # a subshell: its PATH and LD_LIBRARY_PATH stay in it
  SR=/opt/gtune-slurm
  NG=$(ls /dev/nvidia[0-9]* | wc -l)
  SD=$RUNS/slurm
  mkdir -p "$SR" "$SD/state" "$SD/spool"
  echo "slurm: $(ls "$DEBS"/*.deb 2>/dev/null | wc -l) .deb files in ${DEBS:-(none)}" | tee -a "$SUMMARY"
  for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$SR" 2>&1 | tail -n 2 | tee -a "$SUMMARY"; done
  ls "$SR/usr/sbin" 2>&1 | tr '\n' ' ' | tee -a "$SUMMARY"; echo | tee -a "$SUMMARY"
  PL=/usr/lib/x86_64-linux-gnu/slurm-wlm
  [ -e $PL ] || cp -a "$SR$PL" $PL
  # Debian names the daemons X-wlm and links X to them from its
  # postinst (update-alternatives), which an unpacked .deb never runs.
  for x in slurmctld slurmd slurmstepd; do
    [ -e "$SR/usr/sbin/$x" ] || ln -s "$x-wlm" "$SR/usr/sbin/$x"
  done
  [ -e /usr/sbin/slurmstepd ] || cp "$SR/usr/sbin/slurmstepd-wlm" /usr/sbin/slurmstepd
  export PATH=$SR/usr/sbin:$SR/usr/bin:$SR/sbin:$PATH
  # Only the libraries this host lacks (libmunge, lua 5.1, ...): Debian
  # 12's older copies of what the host has would shadow the host's.
  mkdir -p "$SR/missing"
  for f in "$SR"/usr/lib/x86_64-linux-gnu/*.so.* "$SR"/lib/x86_64-linux-gnu/*.so.*; do
    [ -e "$f" ] || continue
    ldconfig -p | grep -qE "[[:space:]]$(basename "$f")[[:space:]]" || ln -sf "$f" "$SR/missing/"
  done
  echo "slurm: libraries the host lacks: $(ls "$SR/missing" | tr '\n' ' ')" | tee -a "$SUMMARY"
  export LD_LIBRARY_PATH=$SR/missing
  mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
  [ -f /etc/munge/munge.key ] || mungekey -c -k /etc/munge/munge.key
  chmod 700 /etc/munge /var/lib/munge /var/log/munge; chmod 400 /etc/munge/munge.key
  munged --force > "$SD/munged.out" 2>&1
  export SLURM_CONF=$SD/slurm.conf
  # No cgroup v2 in a container without systemd: v1, which task/none
  # and proctrack/linuxproc never use, lets slurmd start.
  echo "CgroupPlugin=cgroup/v1" > "$SD/cgroup.conf"
  # One line per GPU device file this container has (a host's GPUs
  # need not be /dev/nvidia0..).
  for d in /dev/nvidia[0-9]*; do echo "NodeName=n1 Name=gpu File=$d"; done > "$SD/gres.conf"
  cat "$SD/gres.conf" | tee -a "$SUMMARY"
  cat > "$SLURM_CONF" <<CONF
ClusterName=gtunegpu
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SD/state
SlurmdSpoolDir=$SD/spool
SlurmctldPidFile=$SD/slurmctld.pid
SlurmdPidFile=$SD/slurmd.pid
SlurmctldLogFile=$SD/slurmctld.log
SlurmdLogFile=$SD/slurmd.log
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=16818 CPUs=$(nproc) RealMemory=100000 Gres=gpu:$NG State=UNKNOWN
PartitionName=gpu Nodes=n1 Default=YES MaxTime=INFINITE State=UP
CONF
  slurmctld -c -f "$SLURM_CONF" > "$SD/ctld.out" 2>&1
  slurmd -N n1 -f "$SLURM_CONF" > "$SD/slurmd.out" 2>&1
  up=no
  for _ in $(seq 40); do
    [ "$(timeout 3 sinfo -h -o '%t' 2>/dev/null | tr -d ' \n')" = idle ] && { up=yes; break; }
    sleep 0.5
  done
  echo "slurm up: $up; $(timeout 3 sinfo 2>&1 | tail -1)" | tee -a "$SUMMARY"
  if [ $up = yes ] && [ "${SLURM_PROBE:-0}" = 1 ]; then
    # Two one-GPU steps at once, as gtune starts its workers: does the
    # second start while the first runs? Allocations by --gpus-per-node
    # (salloc exports SLURM_GPUS_PER_NODE, which srun reads) and --gres.
    probe() { # name alloc-options step-prefix step-options
      echo "--- probe $1" | tee -a "$SUMMARY"
      timeout 40 salloc -N 1 --ntasks-per-node=$NG $2 --no-kill bash -c "
        for i in 1 2; do $3 srun --nodes=1 --ntasks=1 --exact --cpus-per-task=1 $4 --unbuffered bash -c 'echo step \$SLURM_STEP_ID at \$(date +%s.%N) CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES; sleep 4' & done; wait; env | grep -E '^SLURM_(GPUS|GRES|TRES)'" 2>&1 | grep -v 'salloc: \(Granted\|Relinquishing\)' | tail -n 8 | tee -a "$SUMMARY"
    }
    probe gpn-plain "--gpus-per-node=$NG" "" "--gpus-per-task=1"
    probe gpn-explicit "--gpus-per-node=$NG" "" "--gpus-per-node=1 --gpus-per-task=1"
    probe gpn-unset "--gpus-per-node=$NG" "env -u SLURM_GPUS_PER_NODE" "--gpus-per-task=1"
    probe gres-plain "--gres=gpu:$NG" "" "--gpus-per-task=1"
    probe gres-unset "--gres=gpu:$NG" "env -u SLURM_GPUS_PER_NODE -u SLURM_GRES -u SLURM_TRES_PER_NODE" "--gpus-per-task=1"
  elif [ $up = yes ]; then
    timed ex3-slurm salloc -N 1 --ntasks-per-node=$NG --gpus-per-node=$NG --no-kill "$G" tune "$RUNS/ex3.yaml" --backend cuda --slurm --gpus-per-node $NG --energy=false --no-compile-cache --no-progress --db "$RUNS/ex3-slurm.db"
  else
    tail -n 5 "$SD"/*.log "$SD"/*.out 2>&1 | tee -a "$SUMMARY"
  fi
  timeout 5 scancel --user=root 2>/dev/null
  for f in "$SD"/slurmd.pid "$SD"/slurmctld.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
)
T0=$(date +%s)
for st in $STAGES; do
  if [ $(( $(date +%s) - T0 )) -gt "$BUDGET" ]; then echo "=== $st: skipped (past BUDGET=$BUDGET s)" | tee -a "$SUMMARY"; continue; fi
  case $st in
  evict) evict ;;
  conv-old) conv_old ;;
  vadd-1) vadd 1 ;;
  vadd-4) vadd 4 ;;
  measure) measure cold ;;
  measure-again) measure warm ;;
  ex3) ex3_1; ex3_4 ;;
  ex3-1) ex3_1 ;;
  ex3-4) ex3_4 ;;
  conv-*) conv "${st#conv-}" ;; # conv-cold, conv-warm, conv-evicted, ...
  rodinia-1) rodinia 1 ;;
  rodinia-4) rodinia 4 ;;
  slurm) slurm ;;
  *) echo "unknown stage $st" >&2 ;;
  esac
done
tar czf "$OUT/i48.tar.gz" -C "$RUNS" .
for f in "$RUNS"/*.err; do echo "--- $(basename "$f"): $(grep -v 'gtune: trace: compile process' "$f" | tail -12 | tr '\n' '|')"; done
for f in "$RUNS"/*.out; do echo "--- $(basename "$f"): $(grep -E '^(space|time|preparation|compile|GPU|  GPU)' "$f" | tr '\n' '|')"; done
echo "--- summary"
cat "$SUMMARY"
