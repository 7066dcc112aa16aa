#!/bin/sh
# Issue 50, seed 001: gtune schedule's default (the symbiotic order, then
# refined by measurement: order_search from it, 5 repeats an order, a
# move only where the U test says the repeats differ) against every
# launch order of each set, on one GPU. Per set in $SETS:
#   1. gtune schedule SET (the default --refine 40 --refine-repeat 5) into
#      a fresh database: what the default costs, on a GPU no order was
#      measured on before;
#   2. every order measured 5 times (tune --orders --strategy brute_force
#      --repeat 5), reusing the refinement's orders;
#   3. gtune schedule SET again: its refinement now reuses what step 1
#      measured (the same path through the same data), and both orders
#      are ranked by the median of their repeats among all 720.
# Read-only (time only; no GPU setting changed). Carried: .bin/gtune.
# Writes $OUT/t4f.tar.gz; prints a line a set last.
set -u
OUT=${OUT:-/tmp/t4f}
SETS=${SETS:-bsblk-6 epbswarp-6 epbsmix-6}
G=${GTUNE:-.bin/gtune}
W=examples/concurrent/workloads
R=$OUT/t4f
mkdir -p "$R"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,temperature.gpu --format=csv > "$R/smi.csv"
for x in $SETS; do
	db=$R/$x.db
	t0=$(date +%s)
	"$G" schedule "$W/$x.yaml" --backend "${BACKEND:-cuda}" --profile model --db "$db" --json > "$R/$x-first.json" 2> "$R/$x-first.err"
	t1=$(date +%s)
	timeout -s INT "${LIMIT:-280}" "$G" tune "$W/$x.yaml" --backend "${BACKEND:-cuda}" --orders --strategy brute_force --repeat 5 --energy=false \
		--db "$db" --no-progress > "$R/$x-sweep.txt" 2>&1
	t2=$(date +%s)
	"$G" export 2 --db "$db" > "$R/$x-sweep.json" 2>> "$R/$x-sweep.txt"
	"$G" schedule "$W/$x.yaml" --backend "${BACKEND:-cuda}" --profile model --db "$db" --json > "$R/$x-final.json" 2> "$R/$x-final.err"
	t3=$(date +%s)
	echo "$x: schedule $((t1 - t0)) s, sweep $((t2 - t1)) s, ranking $((t3 - t2)) s" >> "$R/times.txt"
	rm -f "$db"
done
tar czf "$OUT/t4f.tar.gz" -C "$OUT" t4f
cat "$R/times.txt"
for x in $SETS; do
	python3 - "$R/$x-first.json" "$R/$x-final.json" "$x" "$R/$x-sweep.json" <<'PY'
import json, sys
first, final = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sweep = [v for v in json.load(open(sys.argv[4]))["cache"].values() if isinstance(v.get("time"), (int, float))]
def pct(order):
    t = [v["time"] for v in sweep if v.get("order") == order]
    return "unmeasured" if not t else "%.1f" % (100.0 * sum(v["time"] > t[0] for v in sweep) / (len(sweep) - 1))
def rk(r):
    return "none" if not r else "%.1f (n %d, %.4g ms, %.2f %% from best)" % (r["Percentile"], r["N"], r["Value"], 100 * r["FromBest"])
rf, rf0 = final.get("refined") or {}, first.get("refined") or {}
print("%s: model order %s %s; refined %s measured %s in the first call, %s; the first call's refined order %s at %s among the sweep's %d" % (
    sys.argv[3], final["order"], rk(final.get("ranking")), rf.get("order"), rf0.get("measured"), rk(rf.get("ranking")), rf0.get("order"), pct(rf0.get("order")), len(sweep)))
PY
done
