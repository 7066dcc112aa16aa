#!/bin/sh
# Issue 50, seed 001, energy: gtune schedule --objective energy (the
# symbiotic order, then refined by measured energy: order_search from it,
# REFINE_REPEAT repeats an order, a move only where the U test says the
# repeats differ) against every launch order of each set measured with
# energy, REPEAT times each, on every GPU of the host (--devices all; the
# energies calibrated across the GPUs), in random order (a sweep cut by
# LIMIT leaves a uniform sample of the orders), into a database of its own, so
# that the refined order is ranked by measurements other than those that
# chose it. Per set in $SETS, one call of the device tool each on a
# four-GPU host (about 4 min of sweep a set). Prints, a set, the
# percentile of energy (and of time) of the symbiotic order and of the
# refined one among the sweep's orders (the percentage of orders whose
# median is higher). Read-only: no GPU setting changed. Carried:
# .bin/gtune. Writes $OUT/t4e-SET.tar.gz.
set -u
OUT=${OUT:-/tmp/t4e}
SETS=${SETS:-bsblk-6}
G=${GTUNE:-.bin/gtune}
B=${BACKEND:-cuda}
W=examples/concurrent/workloads
for x in $SETS; do
	R=$OUT/t4e-$x
	mkdir -p "$R"
	command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,uuid,power.limit,temperature.gpu --format=csv > "$R/smi.csv"
	t0=$(date +%s)
	"$G" schedule "$W/$x.yaml" --backend "$B" --profile model --objective energy --refine-repeat "${REFINE_REPEAT:-3}" \
		--db "$R/first.db" --json > "$R/first.json" 2> "$R/first.err"
	t1=$(date +%s)
	timeout -s INT "${LIMIT:-420}" "$G" tune "$W/$x.yaml" --backend "$B" --devices "${DEVICES:-all}" --orders --strategy random_sample \
		--max-evals 720 --seed 1 --repeat "${REPEAT:-3}" --energy --objective energy --db "$R/sweep.db" --no-progress > "$R/sweep.txt" 2>&1
	t2=$(date +%s)
	"$G" export 1 --db "$R/sweep.db" > "$R/sweep.json" 2>> "$R/sweep.txt"
	echo "$x: schedule $((t1 - t0)) s, sweep $((t2 - t1)) s" > "$R/times.txt"
	rm -f "$R/first.db" "$R/sweep.db"
	tar czf "$OUT/t4e-$x.tar.gz" -C "$OUT" "t4e-$x"
	cat "$R/times.txt"
	python3 - "$R/first.json" "$R/sweep.json" "$x" <<'PY'
import json, sys
first = json.load(open(sys.argv[1]))
sweep = [v for v in json.load(open(sys.argv[2]))["cache"].values() if isinstance(v.get("energy"), (int, float))]
def pct(order, q):
    v = [s[q] for s in sweep if s.get("order") == order]
    return "unmeasured" if not v else "%.1f (%.4g)" % (100.0 * sum(s[q] > v[0] for s in sweep) / (len(sweep) - 1), v[0])
rf = first.get("refined") or {}
print("%s: %d orders with energy, %.4g-%.4g J; symbiotic %s: energy %s, time %s; refined %s (%s orders measured): energy %s, time %s" % (
    sys.argv[3], len(sweep), min(s["energy"] for s in sweep), max(s["energy"] for s in sweep), first["order"],
    pct(first["order"], "energy"), pct(first["order"], "time"), rf.get("order"), rf.get("measured"),
    pct(rf.get("order"), "energy"), pct(rf.get("order"), "time")))
PY
done
