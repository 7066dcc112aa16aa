#!/usr/bin/env bash
# A real one-host Slurm cluster on 127.0.0.1 for gtune's cluster tests
# (issue: tuning on a Slurm cluster): Debian's slurmctld, two slurmd
# (n1, n2: one NodeName each, distinct ports) and munge, started as root
# with their configuration and state in $SLURM_DIR, the scenarios run
# against it, and everything stopped at the end.
#
#   scripts/slurm-test.sh start      configure and start; prints the
#                                    SLURM_CONF to export
#   scripts/slurm-test.sh stop       stop the daemons
#   scripts/slurm-test.sh run        start, run the scenarios, stop
#                                    (exit status: the scenarios')
#   scripts/slurm-test.sh scale      start, time coordinated runs over
#                                    1, 2, 4, 8 and 16 srun workers
#                                    (200 ms an evaluation) per strategy,
#                                    stop; prints a table
#
# The nodes declare 8 CPUs each (config_overrides), one per simulated
# GPU worker: up to 16 workers over the two nodes.
#
# Needs: apt-get install slurmctld slurmd slurm-client munge (Debian 12:
# Slurm 22.05), root, and a gtune binary ($GTUNE, default: built into
# $SLURM_DIR from this checkout). The tasks tune on the simulated GPU.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SLURM_DIR=${SLURM_DIR:-/tmp/gtune-slurm-test}
export SLURM_CONF=$SLURM_DIR/slurm.conf

start() {
  mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/results"
  cat > "$SLURM_CONF" <<CONF
ClusterName=gtunetest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT:-16817}
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd-%n.log
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=5
MinJobAge=5
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${SLURMD_PORT1:-16818} CPUs=8 RealMemory=2000 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${SLURMD_PORT2:-16819} CPUs=8 RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  pgrep -x munged >/dev/null || { mkdir -p /run/munge && chown munge:munge /run/munge; su -s /bin/sh munge -c munged || munged --force; }
  slurmctld -c -f "$SLURM_CONF" || return 1
  mkdir -p "$SLURM_DIR/spool/n1" "$SLURM_DIR/spool/n2"
  slurmd -N n1 -f "$SLURM_CONF" || return 1
  slurmd -N n2 -f "$SLURM_CONF" || return 1
  for _ in $(seq 60); do
    if [ "$(sinfo -h -o '%t' 2>/dev/null | sort -u | tr -d '\n')" = idle ]; then
      echo "export SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.5
  done
  echo "slurm-test: the nodes did not come up:" >&2
  sinfo >&2
  tail -5 "$SLURM_DIR"/*.log >&2
  return 1
}

stop() {
  scancel --user=root 2>/dev/null
  for f in "$SLURM_DIR"/slurmd-n1.pid "$SLURM_DIR"/slurmd-n2.pid "$SLURM_DIR"/slurmctld.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 1
}

# wait_evals DB N: until the results database DB holds N evaluations
# (30 s at most; the fault scenarios strike mid-run).
wait_evals() {
  python3 - "$1" "$2" <<'PY' && return 0
import os, sqlite3, sys, time
for _ in range(600):
    try:
        if os.path.exists(sys.argv[1]) and sqlite3.connect(sys.argv[1], timeout=5).execute("select count(*) from evaluations").fetchone()[0] >= int(sys.argv[2]):
            sys.exit(0)
    except sqlite3.Error:
        pass
    time.sleep(0.05)
sys.exit(1)
PY
  echo "slurm-test: $1 stored no $2 evaluations within 30 s" >&2
  return 1
}

# wait_job ID: until the job has left the queue.
wait_job() {
  for _ in $(seq 600); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  echo "slurm-test: job $1 still queued after 300 s" >&2
  return 1
}

scenarios() {
  G=${GTUNE:-$SLURM_DIR/gtune}
  if [ -z "${GTUNE:-}" ]; then (cd "$ROOT" && CGO_ENABLED=0 go build -o "$G" ./cmd/gtune) || return 1; fi
  spec=$ROOT/examples/vector_add/spec.json
  local fail=0
  # 1. Shards and merge equal one brute force.
  local R=$SLURM_DIR/results/sharded
  rm -rf "$R"
  local out
  out=$("$G" slurm submit --shards 4 --no-gpu --results "$R" -- "$spec" --backend sim --no-compile-cache) || return 1
  echo "$out"
  local merge_job=${out#*merge job }; merge_job=${merge_job%%;*}
  wait_job "$merge_job" || return 1
  "$G" tune "$spec" --backend sim --db "$R/whole.db" --no-compile-cache --no-progress > /dev/null || return 1
  if python3 - "$R/merged.db" "$R/whole.db" <<'PY'
import sqlite3, sys
def outcomes(p):
    c = sqlite3.connect(p)
    return {k: (s, o) for k, s, o in c.execute("select config_key, status, objective from evaluations where run_id = 1")}
m, w = outcomes(sys.argv[1]), outcomes(sys.argv[2])
print(f"sharded: {len(m)} configurations merged from 4 array tasks, {len(w)} in one brute force; equal: {m == w}")
sys.exit(0 if m == w and len(m) == 96 else 1)
PY
  then echo "PASS sharded: 4 shards merged = one brute force"; else echo "FAIL sharded"; fail=1; fi
  # 2. scancel mid-run, then the same submission again: it resumes.
  fault cancel 'scancel "$array"' || fail=1
  # 3. A task's gtune killed with kill -9 mid-run, then resubmitted.
  fault kill9 'pkill -9 -f -- "--shard 0/2 --db"' || fail=1
  # 4. Coordinated mode: one run over 4 srun workers (2 nodes × 2), with
  # strategies that learn from every result.
  for st in random_sample genetic_algorithm bayes_opt; do
    coordinated "$st" 40 || fail=1
  done
  # 5. A worker killed with kill -9 mid-run: its configuration goes to
  # another worker, the run completes.
  coordinated_fault worker 'pkill -9 -f -- "__gtune_remote_worker --sim-device h100_sxm --index 1 "' || fail=1
  # 6. The coordinator killed with kill -9, then the same command again.
  coordinated_fault coordinator 'pkill -9 -f -- "tune .*--slurm .*coordinator.db"' || fail=1
  # 7. A coordinated job submitted with sbatch (gtune slurm submit),
  # cancelled with scancel mid-run, then submitted again.
  submitted_cancel || fail=1
  # 8. The salloc of a coordinated run cancelled (scancel): the run is
  # interrupted, not failed; the same command again completes it.
  WALL=500ms coordinated_fault salloc 'scancel --name=interactive --state=RUNNING' interrupted || fail=1
  # 9. A worker that stops answering (SIGSTOP: a hung node or
  # connection): given up after --worker-silence, its configuration to
  # another worker; the run completes, each configuration once.
  coordinated_silent || fail=1
  # 10. A node's slurmd killed mid-run of a coordinated run under
  # salloc --no-kill: the run completes on the allocation it has.
  slurmd_killed || fail=1
  # 11. A sharded submission and, while it runs, the same submission
  # again (as a requeued task beside a manual resubmission): each shard
  # runs once at a time (a lock), no shard database is overwritten,
  # every configuration is evaluated once.
  resubmitted_while_running || fail=1
  return $fail
}

# complete_once DB WHAT: says WHAT with run 1's status and evaluations;
# true where the run is done with each of the 96 configurations once.
complete_once() {
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
status = c.execute("select status from runs where id = 1").fetchone()[0]
keys = [k for (k,) in c.execute("select config_key from evaluations")]
print(f"{sys.argv[2]}: run {status}, {len(keys)} evaluations ({len(set(keys))} distinct)")
sys.exit(0 if status == "done" and len(keys) == len(set(keys)) == 96 else 1)
PY
}

# coordinated_silent: a coordinated brute force over 4 workers at 200 ms
# an evaluation with --worker-silence 30s; worker 1 stopped (SIGSTOP)
# once 10 evaluations are stored.
coordinated_silent() {
  local R=$SLURM_DIR/results/silent db
  mkdir -p "$R"; db=$R/tune.db; rm -f "$db"*
  salloc -Q -N 2 --ntasks-per-node=2 "$G" tune "$spec" --backend sim --slurm --gpus-per-node 2 --worker-silence 30s \
    --sim-run-wall 200ms --db "$db" --no-compile-cache --no-progress > "$R/log" 2>&1 &
  local bg=$!
  wait_evals "$db" 10 || { kill $bg; return 1; }
  local t0=$SECONDS
  pkill -STOP -f -- "^[^ ]*gtune __gtune_remote_worker --sim-device h100_sxm --index 1 "
  wait $bg
  local rc=$? took=$((SECONDS - t0))
  pkill -CONT -f -- "^[^ ]*gtune __gtune_remote_worker --sim-device h100_sxm --index 1 " 2>/dev/null
  if [ $rc -eq 0 ] && complete_once "$db" "a worker stopped, the run ended $took s after the stop"
  then echo "PASS a worker that stops answering: given up after --worker-silence, the run completes, each configuration once"
  else echo "FAIL a worker that stops answering (exit $rc)"; tail -n 20 "$R/log"; return 1; fi
}

# slurmd_killed: a coordinated run under salloc --no-kill; node n2's
# slurmd killed with kill -9 once 10 evaluations are stored (its job
# steps go on), then started again.
slurmd_killed() {
  local R=$SLURM_DIR/results/slurmd-killed db
  mkdir -p "$R"; db=$R/tune.db; rm -f "$db"*
  salloc -Q --no-kill -N 2 --ntasks-per-node=2 "$G" tune "$spec" --backend sim --slurm --gpus-per-node 2 \
    --sim-run-wall 200ms --db "$db" --no-compile-cache --no-progress > "$R/log" 2>&1 &
  local bg=$!
  wait_evals "$db" 10 || { kill $bg; return 1; }
  kill -9 "$(cat "$SLURM_DIR/slurmd-n2.pid")"
  wait $bg
  local rc=$?
  slurmd -N n2 -f "$SLURM_CONF"
  if [ $rc -eq 0 ] && complete_once "$db" "slurmd of n2 killed"
  then echo "PASS slurmd killed under salloc --no-kill: the run completes, each configuration once"
  else echo "FAIL slurmd killed (exit $rc)"; tail -n 20 "$R/log"; return 1; fi
  for _ in $(seq 60); do [ "$(sinfo -h -n n2 -o '%t')" = idle ] && break; sleep 0.5; done
}

# resubmitted_while_running: two shards at 200 ms an evaluation; the same
# submission again once shard 0 has stored 5 evaluations.
resubmitted_while_running() {
  local R=$SLURM_DIR/results/resubmitted out1 out2 a1 m1 m2
  rm -rf "$R"
  out1=$("$G" slurm submit --shards 2 --no-gpu --results "$R" -- "$spec" --backend sim --no-compile-cache --sim-run-wall 200ms) || return 1
  a1=${out1#*array job }; a1=${a1%% *}; m1=${out1#*merge job }; m1=${m1%%;*}
  wait_evals "${TMPDIR:-/tmp}/gtune-$a1-0.db" 5 || return 1
  out2=$("$G" slurm submit --shards 2 --no-gpu --results "$R" -- "$spec" --backend sim --no-compile-cache --sim-run-wall 200ms) || return 1
  m2=${out2#*merge job }; m2=${m2%%;*}
  wait_job "$m1" || return 1
  wait_job "$m2" || return 1
  if python3 - "$R" <<'PY'
import glob, sqlite3, sys
r = sys.argv[1]
shards = {f: [k for (k,) in sqlite3.connect(f).execute("select config_key from evaluations")] for f in sorted(glob.glob(f"{r}/shard-*.db"))}
keys = [k for ks in shards.values() for k in ks]
refused = sum("is being tuned by another job" in open(f).read() for f in glob.glob(f"{r}/shard-*.log"))
print(f"resubmitted while running: {len(keys)} evaluations in the shards' databases ({len(set(keys))} distinct); tasks that found their shard taken: {refused}")
sys.exit(0 if len(keys) == len(set(keys)) == 96 and refused >= 1 else 1)
PY
  then echo "PASS resubmitted while running: each shard once at a time, every configuration evaluated once"
  else echo "FAIL resubmitted while running"; tail -n 5 "$R"/*.log; return 1; fi
}

# submitted_cancel: gtune slurm submit --nodes 2 --gpus-per-node 2 (one
# batch job, 4 srun workers) at 100 ms an evaluation; scancel once 10
# evaluations are stored; the database must hold an interrupted run of
# whole evaluations; the same submission again must finish the space,
# every configuration evaluated exactly once.
submitted_cancel() {
  local R=$SLURM_DIR/results/submitted out job
  rm -rf "$R"
  sub() {
    out=$("$G" slurm submit --nodes 2 --gpus-per-node 2 --no-gpu --results "$R" -- "$spec" --backend sim --no-compile-cache --sim-run-wall 100ms) || return 1
    job=${out#*submitted job }; job=${job%% *}
  }
  sub || return 1
  wait_evals "$R/tune.db" 10 || return 1
  scancel "$job"
  wait_job "$job" || return 1
  local after
  after=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select status from runs where id = 1').fetchone()[0], c.execute('select count(*) from evaluations').fetchone()[0])" "$R/tune.db")
  sub || return 1
  wait_job "$job" || return 1
  if python3 - "$R/tune.db" "$after" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
runs = c.execute("select id, status from runs order by id").fetchall()
keys = [k for (k,) in c.execute("select config_key from evaluations")]
print(f"submitted, scancel: after the cancel run 1 {sys.argv[2].split()[0]} with {sys.argv[2].split()[1]} evaluations; after submitting again runs {runs}, {len(keys)} evaluations ({len(set(keys))} distinct)")
ok = sys.argv[2].split()[0] == "interrupted" and runs[-1][1] == "done" and len(keys) == len(set(keys)) == 96
sys.exit(0 if ok else 1)
PY
  then echo "PASS submitted coordinated job: consistent after scancel, complete after submitting again, each configuration once"
  else echo "FAIL submitted coordinated job"; tail -n 20 "$R/tune.log"; return 1; fi
}

# coordinated STRATEGY N: a --slurm run of N evaluations over 4 workers.
coordinated() {
  local st=$1 n=$2 R=$SLURM_DIR/results/coordinated
  mkdir -p "$R"
  rm -f "$R/$st.db"*
  salloc -Q -N 2 --ntasks-per-node=2 "$G" tune "$spec" --backend sim --slurm --gpus-per-node 2 --strategy "$st" --max-evals "$n" \
    --seed 3 --sim-run-wall 50ms --db "$R/$st.db" --no-compile-cache --no-progress > "$R/$st.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && python3 - "$R/$st.db" "$n" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = int(sys.argv[2])
status = c.execute("select status from runs where id = 1").fetchone()[0]
rows = c.execute("select config_key, gpu from evaluations where run_id = 1").fetchall()
keys = [k for k, _ in rows]
gpus = {g for _, g in rows}
print(f"coordinated {sys.argv[1].rsplit('/', 1)[1][:-3]}: run {status}, {len(keys)} evaluations ({len(set(keys))} distinct) on {len(gpus)} GPU workers")
sys.exit(0 if status == "done" and len(keys) == len(set(keys)) == n and len(gpus) == 4 else 1)
PY
  then echo "PASS coordinated $st: $n evaluations over 4 srun workers"
  else echo "FAIL coordinated $st (exit $rc)"; tail -n 20 "$R/$st.log"; return 1; fi
}

# coordinated_fault NAME ACTION [STATUS]: brute force over 4 workers at
# $WALL (100 ms) an evaluation; ACTION once 10 evaluations are stored; then the
# same command again (resuming where the run stopped); every
# configuration evaluated exactly once in the database, and the first
# run left with STATUS where one is given.
coordinated_fault() {
  local name=$1 action=$2 want=${3:-} R=$SLURM_DIR/results/coordinated
  mkdir -p "$R"
  local db=$R/$name-coordinator.db
  rm -f "$db"*
  go_run() {
    salloc -Q -N 2 --ntasks-per-node=2 "$G" tune "$spec" --backend sim --slurm --gpus-per-node 2 \
      --sim-run-wall "${WALL:-100ms}" --db "$db" --no-compile-cache --no-progress >> "$R/$name.log" 2>&1
  }
  go_run &
  local bg=$!
  wait_evals "$db" 10 || { kill $bg; return 1; }
  eval "$action"
  wait $bg
  local first=$?
  go_run
  local second=$?
  if python3 - "$db" "$name" "$first" "$second" "$want" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
runs = c.execute("select id, status from runs order by id").fetchall()
keys = [k for (k,) in c.execute("select config_key from evaluations")]
gpus = {g for (g,) in c.execute("select gpu from evaluations where run_id = ?", (runs[0][0],))}
print(f"{sys.argv[2]} killed: first command exit {sys.argv[3]}, runs {runs}; {len(keys)} evaluations in the database ({len(set(keys))} distinct); the first run's on {len(gpus)} GPU workers")
sys.exit(0 if runs[-1][1] == "done" and len(keys) == len(set(keys)) == 96 and sys.argv[5] in ("", runs[0][1]) else 1)
PY
  then echo "PASS coordinated, $name killed ($action): the run completes, every configuration evaluated exactly once${want:+, the first run $want}"
  else echo "FAIL coordinated, $name killed"; tail -n 20 "$R/$name.log"; return 1; fi
}

# fault NAME ACTION: two shards of vector_add at 200 ms an evaluation;
# ACTION (which may use $array) once shard 0 has stored 5 evaluations
# (its database on the node's disk); the merge after it must be a
# consistent, partial run; the same submission again must complete it,
# every configuration evaluated exactly once over both attempts.
fault() {
  local name=$1 action=$2 R=$SLURM_DIR/results/$1 out array merge_job
  rm -rf "$R"
  submit() {
    out=$("$G" slurm submit --shards 2 --no-gpu --results "$R" -- "$spec" --backend sim --no-compile-cache --sim-run-wall 200ms) || return 1
    array=${out#*array job }; array=${array%% *}
    merge_job=${out#*merge job }; merge_job=${merge_job%%;*}
  }
  submit || return 1
  # The fault strikes once shard 0 has stored 5 evaluations.
  wait_evals "${TMPDIR:-/tmp}/gtune-$array-0.db" 5 || return 1
  eval "$action"
  wait_job "$merge_job" || return 1
  submit || return 1
  wait_job "$merge_job" || return 1
  if python3 - "$R" <<'PY'
import glob, json, sqlite3, sys
r = sys.argv[1]
m = sqlite3.connect(f"{r}/merged.db")
runs = m.execute("select id, status, settings from runs order by id").fetchall()
first = m.execute("select count(*) from evaluations where run_id = ?", (runs[0][0],)).fetchone()[0]
keys = [k for (k,) in m.execute("select config_key from evaluations where run_id = ?", (runs[-1][0],))]
own = sum(sqlite3.connect(f).execute("select count(*) from evaluations").fetchone()[0] for f in glob.glob(f"{r}/shard-*.db"))
dups = json.loads(runs[-1][2]).get("duplicates")
print(f"after the fault: merged run {runs[0][0]} {runs[0][1]} with {first} configurations; after resubmitting: run {runs[-1][0]} {runs[-1][1]} with {len(keys)} ({len(set(keys))} distinct, {dups} evaluated twice); evaluations in the shards' databases: {own}")
ok = runs[0][1] == "interrupted" and 0 < first < 96 and runs[-1][1] == "done" and len(keys) == len(set(keys)) == 96 and dups == 0 and own == 96
sys.exit(0 if ok else 1)
PY
  then echo "PASS $name: consistent after the fault, complete after resubmitting, each configuration evaluated once"
  else echo "FAIL $name"; tail -n 5 "$R"/*.log; return 1; fi
}

# scale: the wall time of a coordinated run of $SCALE_SPEC (an example:
# vector_add, 96 configurations) for $SCALE_EVALS evaluations (96) at
# 200 ms an evaluation on the simulated GPU, over 1 to 16 workers, per
# strategy ($SCALE_STRATEGIES; $SCALE_FLAGS added; $SCALE_WORKERS the
# worker counts, the first the baseline), with its speed-up and
# parallel efficiency against one worker: the tuning's own time (gtune's
# "evaluated ... in" line), not salloc's.
scale() {
  G=${GTUNE:-$SLURM_DIR/gtune}
  if [ -z "${GTUNE:-}" ]; then (cd "$ROOT" && CGO_ENABLED=0 go build -o "$G" ./cmd/gtune) || return 1; fi
  local spec=$ROOT/examples/${SCALE_SPEC:-vector_add}/spec.json R=$SLURM_DIR/results/scale evals=${SCALE_EVALS:-96}
  mkdir -p "$R"
  echo "strategy | evaluations | workers | wall (s) | speed-up | efficiency"
  # (the speed-up and efficiency against the first worker count)
  for st in ${SCALE_STRATEGIES:-brute_force random_sample genetic_algorithm pso bayes_opt}; do
    local base=""
    for w in ${SCALE_WORKERS:-1 2 4 8 16}; do
      local nodes=2 per=$((w / 2))
      if [ "$w" = 1 ]; then nodes=1 per=1; fi
      rm -f "$R/$st-$w.db"*
      local out
      out=$(salloc -Q -N $nodes --ntasks-per-node=$per "$G" tune "$spec" --backend sim --slurm --gpus-per-node $per --strategy "$st" \
        --max-evals "$evals" --seed 5 --sim-run-wall 200ms --db "$R/$st-$w.db" --no-compile-cache --no-progress ${SCALE_FLAGS:-} 2>&1)
      echo "$out" > "$R/$st-$w.log"
      python3 - "$out" "$base" "$w" "$st" <<'PY' > "$R/row"
import re, sys
out, base, w, st = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
m = re.search(r"evaluated (\d+), reused \d+, invalid \d+ in (?:(\d+)m)?([\d.]+)(ms|µs|s)\b", out)
if not m:
    print(f"{st} | - | {w} | failed: {out.strip().splitlines()[-1] if out.strip() else 'no output'} | | ")
    sys.exit(1)
n, mins, v, u = m.groups()
t = float(v) / {"s": 1, "ms": 1e3, "µs": 1e6}[u] + 60 * int(mins or 0)
b = float(base) if base else t
print(f"{st} | {n} | {w} | {t:.2f} | {b / t:.2f} | {100 * b / t / w:.0f} % | {t}")
PY
      local row; row=$(cat "$R/row")
      [ -z "$base" ] && base=${row##* | }
      echo "${row% | *}"
    done
  done
}

case "${1:-run}" in
  start) start ;;
  stop) stop ;;
  run)
    start >/dev/null || { stop; exit 1; }
    scenarios; rc=$?
    stop
    exit $rc ;;
  scale)
    start >/dev/null || { stop; exit 1; }
    scale; rc=$?
    stop
    exit $rc ;;
  *) echo "usage: $0 start|stop|run|scale" >&2; exit 2 ;;
esac
