#!/usr/bin/env bash
# Concurrent kernels on the real GPU (read-only: no clock, power-limit or
# mode change; ncu with --clock-control none). Stages, by name in $STAGES:
#   probe    the GPU as found, ncu's version and whether it has the metrics
#            package profile reads
#   orders6  every launch order of the six-kernel experiments in $SIX
#            (default all five of examples/concurrent/workloads), time;
#            those in $ENERGY (default none) with energy too (one
#            0.2 s window per order)
#   orders8  a uniform random sample of $SAMPLE8 (default 5,000) of the
#            40,320 launch orders of EpBsEsSw-8, one timed run each (all of
#            them, at about 20 ms an order, do not fit one call's 600 s;
#            $LIMIT8 bounds it alone)
#   energy   each set in $ENERGYSETS in its own database: every order with
#            energy (one 0.2 s window per order), then gtune schedule
#            ranks its order by energy and by time ($ELIMIT bounds each)
#   rodinia  the workload $RODINIA (default examples/workloads/rodinia-4.yaml):
#            Algorithm 3 (multi_occupancy_greedy) and Algorithm 4
#            (multi_occupancy_greedy_energy at the clocks as found), each
#            in its own database so that nothing is reused, then brute
#            force over the combined space into $DB ($LIMITBF bounds it)
#   alone    multi_alone_greedy on rodinia-4 and rodinia-4-full after each
#            spec alone, with energy; a random sample of the full space
#   serial   after rodinia: the best plan and the four kernels each at
#            its own optimum, on four streams and on one, with energy
#   schedule gtune schedule of every experiment in $EXPERIMENTS,
#            instruction mix from ncu and from the model (JSON), ranked
#            among the orders in $DB; an order the sample of orders8 lacks
#            is measured first, into a copy of $DB, so that the sample
#            stays uniform
#   refine   order_search from the ncu-profiled symbiotic order (needs the
#            schedule stage's JSON, in $SCHED, default $OUT), each
#            experiment in its own database
# Every run's evaluations are written as CSV (export): the databases are
# too large to bring back. Leaves concurrent.log, one JSON document per
# command and run<N>.csv per run of $DB, all in $OUT/concurrent.tgz (the
# device machine returns few files); $KEEPDB also packs $DB there, in
# 15 MB parts (db.tgz.aa, ...), so that a sweep cut off by the call's
# limit resumes from it ($RESTORE).
set -uo pipefail
OUT=${OUT:-/tmp/gtune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/concurrent.log") 2>&1
G=${GTUNE:-.bin/gtune}
BACKEND=${BACKEND:-cuda}
WORK=${WORK:-.bin} # the databases of the other stages
mkdir -p "$WORK"
DB=${DB:-.bin/concurrent.db}
# $RESTORE: a folder holding a previous call's db.tgz.* parts, to resume from
[[ -n "${RESTORE:-}" ]] && cat "$RESTORE"/db.tgz.* | tar xzf - -C "$(dirname "$DB")"
STAGES=${STAGES:-probe orders6 orders8 schedule refine}
SIX=${SIX:-epbswarp-6 bsblk-6 epshm-6 epbsshm-6 epbsmix-6}
ENERGY=${ENERGY:-}
SCHED=${SCHED:-$OUT}
W=examples/concurrent/workloads
EXPERIMENTS=${EXPERIMENTS:-epbswarp-6 bsblk-6 epshm-6 epbsshm-6 epbsmix-6 epbsessw-8}
has() { [[ " $STAGES " == *" $1 "* ]]; }
timed() { # name command...: runs it, prints its wall time
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  timeout -s INT "${LIMIT:-560}" "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
  echo "=== $name: rc $?, $(python3 -c "print(f'{$(date +%s.%N)-$t0:.1f}')") s"
  tail -3 "$OUT/$name.err"
}
export_csv() { # db prefix: one CSV per run (key's last field, status, time, energy, power, each launch's mean time)
  python3 - "$1" "$2" <<'PY'
import csv, json, sqlite3, sys, os
db, prefix = sqlite3.connect(sys.argv[1]), sys.argv[2]
for rid, in db.execute('select id from runs'):
    with open(f"{os.environ['OUT']}/{prefix}run{rid}.csv", 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['key', 'status', 'time_ms', 'energy_j', 'power_w', 'launch_times_ms'])
        for key, st, obs, la in db.execute('select config_key, status, observations, launches from evaluations where run_id=? order by id', (rid,)):
            o = json.loads(obs) if obs else {}
            lt = [round(sum(l['times_ms']) / len(l['times_ms']), 5) if l.get('times_ms') else '' for l in (json.loads(la) if la else [])]
            w.writerow([key, st, o.get('time', ''), o.get('energy', ''), o.get('power', ''), ' '.join(map(str, lt))])
PY
}
if has probe; then
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
  ncu --version | tail -1
  ncu --query-metrics --chip gh100 2>/dev/null > "$OUT/ncu-metrics.txt"
  for m in smsp__inst_executed smsp__sass_thread_inst_executed_op_fp32_pred_on smsp__sass_thread_inst_executed_op_fp64_pred_on \
           smsp__inst_executed_op_global_ld smsp__inst_executed_op_global_st dram__bytes_read dram__bytes_write; do
    grep -q "^$m " "$OUT/ncu-metrics.txt" && echo "ncu has $m" || echo "ncu LACKS $m"
  done
  rm -f "$OUT/ncu-metrics.txt"
fi
if has orders6; then
  for x in $SIX; do
    e=""; [[ " $ENERGY " == *" $x "* ]] && e=--energy
    [[ -z "$e" ]] && e=--energy=false
    timed "$x" "$G" tune "$W/$x.yaml" --backend "$BACKEND" --strategy brute_force --orders $e --db "$DB" --no-progress --json
  done
fi
if has orders8; then
  LIMIT=${LIMIT8:-${LIMIT:-560}} timed epbsessw-8 "$G" tune "$W/epbsessw-8.yaml" --backend "$BACKEND" --strategy random_sample --max-evals "${SAMPLE8:-5000}" --seed 1 --orders --energy=false --db "$DB" --no-progress --json
fi
if has orders6 || has orders8; then export_csv "$DB" ""; fi
if has rodinia; then
  # Algorithms 3 and 4 first, each in its own database so that nothing is
  # reused, then the brute force into $DB (resumed from $RESTORE when a
  # previous call was cut off; $LIMITBF bounds it alone).
  R=${RODINIA:-examples/workloads/rodinia-4.yaml}
  n=$(basename "$R" .yaml)
  rm -f "$WORK/$n"-alg*.db
  timed "$n-alg3" "$G" tune "$R" --backend "$BACKEND" --strategy multi_occupancy_greedy --db "$WORK/$n-alg3.db" --no-progress --json
  timed "$n-alg4" "$G" tune "$R" --backend "$BACKEND" --strategy multi_occupancy_greedy_energy --objective energy --db "$WORK/$n-alg4.db" --no-progress --json
  LIMIT=${LIMITBF:-${LIMIT:-560}} timed "$n-bf" "$G" tune "$R" --backend "$BACKEND" --strategy brute_force --db "$DB" --no-progress --json
  export_csv "$WORK/$n-alg3.db" "$n-alg3-"
  export_csv "$WORK/$n-alg4.db" "$n-alg4-"
  export_csv "$DB" "$n-bf-"
fi
if has serial; then
  # Running together against one after another, time and energy: the
  # brute force's best plan on its four streams and on one stream, and
  # each kernel at its own single-kernel optimum (brute force of its spec
  # alone, over the spec's whole space) on four streams and on one.
  R=${RODINIA:-examples/workloads/rodinia-4.yaml}
  n=$(basename "$R" .yaml)
  S=examples/rodinia
  SPECS="$S/lud/spec.json $S/streamcluster/spec.json $S/hotspot/spec.json $S/particlefilter/spec.json"
  best=$(python3 -c "import json; print(json.load(open('$OUT/$n-bf.json'))['best']['key'])")
  # The combined key's values per kernel: lud 2, streamcluster 1, hotspot 2, particle filter 1.
  read -r k1 k2 k3 k4 < <(python3 -c "v='$best'.split(','); print(','.join(v[0:2]), v[2], ','.join(v[3:5]), v[5])")
  rm -f "$WORK/serial.db"
  timed serial-best-together "$G" measure "$R" --config "$best" --energy --backend "$BACKEND" --db "$WORK/serial.db" --json
  timed serial-best-serial "$G" measure $SPECS --config "$k1" --config "$k2" --config "$k3" --config "$k4" --stream 0,0,0,0 --energy --backend "$BACKEND" --db "$WORK/serial.db" --json
  cfgs=()
  for k in lud streamcluster hotspot particlefilter; do
    timed "single-$k" "$G" tune "$S/$k/spec.json" --backend "$BACKEND" --strategy brute_force --db "$WORK/single.db" --no-progress --json
    cfgs+=(--config "$(python3 -c "import json; print(json.load(open('$OUT/single-$k.json'))['best']['key'])")")
  done
  timed serial-alone-together "$G" measure $SPECS "${cfgs[@]}" --energy --backend "$BACKEND" --db "$WORK/serial.db" --json
  timed serial-alone-serial "$G" measure $SPECS "${cfgs[@]}" --stream 0,0,0,0 --energy --backend "$BACKEND" --db "$WORK/serial.db" --json
fi
if has alone; then
  # multi_alone_greedy (Algorithm 3 from each kernel's times alone): each
  # spec brute-forced alone into one database, copied for each workload so
  # that nothing of the workload is reused; energy measured for every plan
  # it visits. Then a uniform random sample of $SAMPLE plans of the whole
  # combined space, time only, to place its choice there.
  S=examples/rodinia
  rm -f "$WORK"/alone*.db
  for k in lud streamcluster hotspot particlefilter; do
    timed "alone-$k" "$G" tune "$S/$k/spec.json" --backend "$BACKEND" --strategy brute_force --db "$WORK/alone.db" --no-progress --json
  done
  for w in rodinia-4 rodinia-4-full; do
    cp "$WORK/alone.db" "$WORK/alone-$w.db"
    timed "alone-greedy-$w" "$G" tune "examples/workloads/$w.yaml" --backend "$BACKEND" --strategy multi_alone_greedy --energy --db "$WORK/alone-$w.db" --no-progress --json
    export_csv "$WORK/alone-$w.db" "alone-$w-"
  done
  timed sample-full "$G" tune examples/workloads/rodinia-4-full.yaml --backend "$BACKEND" --strategy random_sample --max-evals "${SAMPLE:-2000}" --seed 3 --db "$WORK/sample.db" --no-progress --json
  export_csv "$WORK/sample.db" sample-full-
fi
if has schedule; then
  for x in $EXPERIMENTS; do
    for p in ${PROFILES:-ncu model}; do
      timed "schedule-$x-$p" "$G" schedule "$W/$x.yaml" --refine 0 --backend "$BACKEND" --profile "$p" --db "$DB" --json
      if ! python3 -c "import json,sys; sys.exit(0 if json.load(open('$OUT/schedule-$x-$p.json')).get('ranking') else 1)" 2>/dev/null; then
        # not among the measured orders (a sample): measure it alone into a copy
        order=$(python3 -c "import json; print(json.load(open('$OUT/schedule-$x-$p.json'))['order'])") || continue
        cp "$DB" "$WORK/rank-$x-$p.db"
        timed "measure-$x-$p" "$G" tune "$W/$x.yaml" --backend "$BACKEND" --orders --energy=false --strategy order_search --strategy-param "start=$order" --max-evals 1 --db "$WORK/rank-$x-$p.db" --no-progress --json
        timed "schedule-$x-$p" "$G" schedule "$W/$x.yaml" --refine 0 --backend "$BACKEND" --profile "$p" --db "$WORK/rank-$x-$p.db" --json
        rm -f "$WORK/rank-$x-$p.db"
      fi
    done
  done
fi
if has energy; then
  for x in ${ENERGYSETS:-epbsmix-6 epbsshm-6}; do
    rm -f "$WORK/energy-$x.db"
    LIMIT=${ELIMIT:-${LIMIT:-560}} timed "energy-$x" "$G" tune "$W/$x.yaml" --backend "$BACKEND" --strategy brute_force --orders --energy --db "$WORK/energy-$x.db" --no-progress --json
    for p in ${PROFILES:-ncu model}; do
      for o in energy time; do
        timed "energy-schedule-$x-$p-$o" "$G" schedule "$W/$x.yaml" --refine 0 --backend "$BACKEND" --profile "$p" --objective "$o" --db "$WORK/energy-$x.db" --json
      done
    done
    export_csv "$WORK/energy-$x.db" "energy-$x-"
  done
fi
if has refine; then
  for x in $EXPERIMENTS; do
    start=$(python3 -c "import json; print(json.load(open('$SCHED/schedule-$x-${REFINE_FROM:-ncu}.json'))['order'])")
    rm -f "$WORK/refine-$x.db"
    timed "refine-$x" "$G" tune "$W/$x.yaml" --backend "$BACKEND" --orders --strategy order_search --strategy-param "start=$start" --db "$WORK/refine-$x.db" --no-progress --json
    export_csv "$WORK/refine-$x.db" "refine-$x-"
  done
fi
ls -la "$OUT"
exec >/dev/null 2>&1
sleep 1 # tee's last lines
[[ -n "${KEEPDB:-}" ]] && tar czf - -C "$(dirname "$DB")" "$(basename "$DB")" | split -b 15M - "$OUT/db.tgz."
cd "$OUT" && tar czf concurrent.tgz --remove-files $(ls | grep -v -e '^db.tgz' -e '^concurrent.tgz$')
