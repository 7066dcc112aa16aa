#!/bin/sh
# Issue 50, seed 001: gtune schedule's default (the symbiotic order, then
# refined by measurement: order_search from it, 5 repeats an order, a
# move only where the U test says the repeats differ) against every
# launch order of each set, on one GPU. Per set in $SETS:
#   1. gtune schedule SET (the default --refine 40 --refine-repeat 5) into
#      a fresh database: what the default costs, on a GPU no order was
#      measured on before;
#   2. every order measured 5 times (tune --orders --strategy brute_force
#      --repeat 5) into a database of its own, so that the refined order
#      is ranked by measurements other than those that chose it (ranked
#      by the ones that chose it, it is favoured by their noise: the
#      winner of 26 noisy comparisons);
#   3. the symbiotic order and the refined one ranked by the sweep's
#      medians among all 720 (the percentage of orders slower).
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
		--db "$db.sweep" --no-progress > "$R/$x-sweep.txt" 2>&1
	t2=$(date +%s)
	"$G" export 1 --db "$db.sweep" > "$R/$x-sweep.json" 2>> "$R/$x-sweep.txt"
	echo "$x: schedule $((t1 - t0)) s, sweep $((t2 - t1)) s" >> "$R/times.txt"
	rm -f "$db.sweep"
	rm -f "$db"
done
tar czf "$OUT/t4f.tar.gz" -C "$OUT" t4f
cat "$R/times.txt"
for x in $SETS; do
	python3 - "$R/$x-first.json" "$R/$x-sweep.json" "$x" <<'PY'
import json, sys
first = json.load(open(sys.argv[1]))
sweep = [v for v in json.load(open(sys.argv[2]))["cache"].values() if isinstance(v.get("time"), (int, float))]
def pct(order):
    t = [v["time"] for v in sweep if v.get("order") == order]
    return "unmeasured" if not t else "%.1f (%.4g ms)" % (100.0 * sum(v["time"] > t[0] for v in sweep) / (len(sweep) - 1), t[0])
best = min(v["time"] for v in sweep)
rf = first.get("refined") or {}
print("%s: %d orders, best %.4g ms; symbiotic order %s at %s; refined %s (%s orders measured, %s ms) at %s in the sweep" % (
    sys.argv[3], len(sweep), best, first["order"], pct(first["order"]), rf.get("order"), rf.get("measured"),
    "%.4g" % rf["ranking"]["Value"] if rf.get("ranking") else "?", pct(rf.get("order"))))
PY
done
