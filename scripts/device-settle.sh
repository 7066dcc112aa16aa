#!/usr/bin/env bash
# Thermal policies against each other on cold H100s (issue 48, "a
# warm-up users can afford"), read-only on the GPUs. Stages ($STAGES):
#   cold  on a fresh host of four GPUs, at once: vector_add brute force
#         for energy, policy $P0 on GPU 0 and $P1 on GPU 1 (one GPU each,
#         both cold); and $ROUNDS rounds of $N configurations (random
#         sample, seed 3) for energy, $R2 on GPU 2 and $R3 on GPU 3, $COOL
#         s idle between rounds: the run-to-run spread of energy
#   all   vector_add brute force for energy over --devices all, under
#         each policy of $ALL in turn
#   calib vector_add brute force for energy (default thermal policy) over
#         the four GPUs twice, in the orders 0,1,2,3 and 3,2,1,0: the same
#         configuration measured on different GPUs, as measured and
#         calibrated across GPUs (tuner calibrate)
# Leaves $OUT/settle.tar.gz (databases, JSON summaries, log); prints the
# summary last. Needs .bin/gtune (linux/amd64).
set -uo pipefail
OUT=${OUT:-/tmp/settle}
RUNS=${RUNS:-/tmp/settle-runs} # packed into $OUT/settle.tar.gz at the end
mkdir -p "$OUT" "$RUNS"
LIMIT=${LIMIT:-200} # seconds any one run may take
G=${GTUNE:-.bin/gtune}
STAGES=${STAGES:-cold}
ROUNDS=${ROUNDS:-3}
N=${N:-30}
COOL=${COOL:-20}
P0=${P0:-settle}; P1=${P1:-steady}; R2=${R2:-settle}; R3=${R3:-steady}; ALL=${ALL:-settle steady}
spec=examples/vector_add/spec.json
has() { [[ " $STAGES " == *" $1 "* ]]; }
temps() { nvidia-smi --query-gpu=index,temperature.gpu,power.draw --format=csv,noheader | tr '\n' ';'; }
timed() { # name command...: its wall time, exit status and the GPUs' temperatures before
  local name=$1; shift
  local before; before=$(temps)
  local t0; t0=$(date +%s.%N)
  timeout "$LIMIT" "$@" > "$RUNS/$name.json" 2> "$RUNS/$name.err"
  local rc=$?
  echo "=== $name: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s; before: $before"
}
rounds() { # policy gpu
  for r in $(seq 1 "$ROUNDS"); do
    timed "rounds-$1-$r" "$G" tune $spec --backend cuda --device "$2" --objective energy --thermal "$1" --strategy random_sample --seed 3 \
      --max-evals "$N" --fresh --no-progress --json --db "$RUNS/rounds-$1-$r.db"
    [ "$r" -lt "$ROUNDS" ] && sleep "$COOL"
  done
}
if has cold; then
  nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv
  timed "vadd1-$P0" "$G" tune $spec --backend cuda --device 0 --objective energy --thermal "$P0" --no-progress --json --db "$RUNS/vadd1-$P0.db" > "$OUT/a.log" &
  timed "vadd1-$P1" "$G" tune $spec --backend cuda --device 1 --objective energy --thermal "$P1" --no-progress --json --db "$RUNS/vadd1-$P1.db" > "$OUT/b.log" &
  rounds "$R2" 2 > "$OUT/c.log" &
  rounds "$R3" 3 > "$OUT/d.log" &
  wait
  cat "$OUT"/[abcd].log
fi
if has all; then
  for p in $ALL; do
    timed "vadd4-$p" "$G" tune $spec --backend cuda --devices all --objective energy --thermal $p --no-progress --json --db "$RUNS/vadd4-$p.db"
  done
fi
if has calib; then
  timed calib-a "$G" tune $spec --backend cuda --devices 0,1,2,3 --objective energy --no-progress --json --db "$RUNS/calib-a.db"
  timed calib-b "$G" tune $spec --backend cuda --devices 3,2,1,0 --objective energy --no-progress --json --db "$RUNS/calib-b.db"
fi
python3 - "$RUNS" <<'PY'
import glob, json, os, sqlite3, statistics, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "vadd*.json")) + glob.glob(os.path.join(d, "calib*.json"))):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(os.path.basename(f), "no summary:", e); continue
    b = j.get("best") or {}
    if isinstance(b, list): b = b[0] if b else {}
    t = j.get("time", {})
    g = ["%d/%.1fs" % (x.get("evaluated", 0), x.get("busy_s", 0)) for x in (j.get("gpus") or [])]
    print(os.path.basename(f), "elapsed %.1f s" % j.get("elapsed_s", float("nan")), "warmup %.1f s" % t.get("warmup_s", 0), "gpus", g,
          "evaluated", j.get("evaluated"), "best", b.get("key"), (b.get("objectives") or {}).get("energy"), "steady", (b.get("observations") or {}).get("thermal_steady"), "|", j.get("thermal_note", ""))
def energies(db):
    out = {}
    for key, obs in sqlite3.connect(db).execute("SELECT config_key, observations FROM evaluations WHERE status='valid'"):
        o = json.loads(obs or "{}")
        if "energy" in o:
            out[key] = (o["energy"], "energy_warming" in o, o.get("thermal_steady"), o.get("temperature"), o.get("energy_uncorrected", o["energy"]))
    return out
def pairs(a, b):
    def load(db):
        out = {}
        for key, obs, gpu in sqlite3.connect(db).execute("SELECT config_key, observations, gpu FROM evaluations WHERE status='valid'"):
            o = json.loads(obs or "{}")
            if "energy" in o:
                out[key] = (o["energy"], o.get("energy_uncorrected", o["energy"]), gpu)
        return out
    A, B = load(a), load(b)
    keys = [k for k in A if k in B and A[k][2] != B[k][2]]
    for name, i in (("as measured", 1), ("calibrated", 0)):
        rs = [A[k][i] / B[k][i] for k in keys]
        m = statistics.median(rs)
        dev = sorted(abs(r / m - 1) * 100 for r in rs)
        print("calib %s: %d configurations measured on different GPUs in the two runs; ratio median %.4f, |deviation| median %.3f %% p90 %.3f %% max %.3f %%"
              % (name, len(keys), m, dev[len(dev) // 2], dev[int(.9 * len(dev))], dev[-1]))
if os.path.exists(os.path.join(d, "calib-b.db")):
    pairs(os.path.join(d, "calib-a.db"), os.path.join(d, "calib-b.db"))
for f in sorted(glob.glob(os.path.join(d, "calib-*.json"))):
    j = json.load(open(f)); print(os.path.basename(f), "elapsed %.1f s" % j["elapsed_s"], "|", j.get("thermal_note", ""))
for pol in ("settle", "steady", "anchor", "none"):
    dbs = sorted(glob.glob(os.path.join(d, "rounds-%s-*.db" % pol)))
    if not dbs: continue
    rs = [energies(x) for x in dbs]
    keys = set.intersection(*[set(r) for r in rs])
    cv = lambda k: statistics.stdev([r[k][0] for r in rs]) / statistics.mean([r[k][0] for r in rs]) * 100
    allcv = sorted(cv(k) for k in keys)
    steadyk = [k for k in keys if all(r[k][2] in (None, 1) for r in rs)]
    bests = []
    for r in rs:
        bk = min(r, key=lambda k: r[k][0]); bests.append((bk, r[bk][0], r[bk][3]))
    q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
    print(pol, "rounds", len(rs), "configs", len(keys), "CV median %.3f %% p90 %.3f %% max %.3f %%" % (q(allcv, .5), q(allcv, .9), allcv[-1] if allcv else float("nan")),
          "| steady in every round:", len(steadyk), "CV median %.3f %%" % q(sorted(cv(k) for k in steadyk), .5),
          "| best per round:", bests)
    rawcv = sorted(statistics.stdev([r[k][4] for r in rs]) / statistics.mean([r[k][4] for r in rs]) * 100 for k in keys)
    print(pol, "as measured (energy_uncorrected): CV median %.3f %% p90 %.3f %%" % (q(rawcv, .5), q(rawcv, .9)))
    print(pol, "temperatures per round:", [sorted({v[3] for v in r.values()}) for r in rs])
PY
tar czf "$OUT/settle.tar.gz" -C "$(dirname "$RUNS")" "$(basename "$RUNS")"
