#!/bin/sh
# How a configuration over the power limit settles (issue 50, seed 004:
# the DGEMM sweep measured its capped configurations at a median 715 W
# and up to 808 W against the 700 W limit, in the limiter's first
# seconds). On one GPU (run on the device machine from the repository
# root; OUT is where results go): the sweep's most efficient
# configuration (656 W) and then its fastest (807 W), in that order as
# in a sweep, each measured as the sweep measures (the default energy
# trials, 0.3-0.5 s windows), the first after the steady warm-up, the
# second right after it; nvidia-smi samples power
# (instant and averaged), SM clock, temperature and the power-cap event
# every 100 ms throughout. Read-only: nothing on the GPU is set.
# Carried: .bin/gtune.
set -u
G=${GTUNE:-.bin/gtune}
S=examples/dgemm/.limiter.json
python3 - > "$S" <<'PY'
import json, sys
s = json.load(open("examples/dgemm/spec.json"))
# The two configurations: 16,16,64,128,32 with A/B thread shapes
# 16x16/16x16 (most efficient) and 32x8/8x32 (fastest), simd 1.
one = {"dim_m": 16, "dim_n": 16, "blk_m": 64, "blk_n": 128, "blk_k": 32, "simd": 1}
for p in s["ConfigurationSpace"]["TuningParameters"]:
    if p["Name"] in one:
        p["Values"], p["Default"] = "[%d]" % one[p["Name"]], one[p["Name"]]
two = {"blk_m_a": [16, 32], "blk_n_a": [16, 8], "blk_m_b": [16, 8], "blk_n_b": [16, 32]}
for p in s["ConfigurationSpace"]["TuningParameters"]:
    if p["Name"] in two:
        p["Values"], p["Default"] = str(two[p["Name"]]), two[p["Name"]][0]
s["ConfigurationSpace"]["Conditions"].append({
    "Expression": "blk_m_a * blk_n_a == 256 and blk_m_b * blk_n_b == 256 and (blk_m_a == 16) == (blk_m_b == 16)",
    "Parameters": ["blk_m_a", "blk_n_a", "blk_m_b", "blk_n_b"]})
ref = s["Gtune"].get("Reference", {}).get("Configuration")
if ref is not None:
    ref.update(one)
    ref.update({k: v[0] for k, v in two.items()})
json.dump(s, sys.stdout, indent=1)
PY
Q=timestamp,power.draw.instant,power.draw.average,clocks.sm,temperature.gpu,clocks_event_reasons.sw_power_cap
if command -v nvidia-smi > /dev/null; then
	nvidia-smi --query-gpu=$Q --format=csv -i 0 > /dev/null 2>&1 || Q=timestamp,power.draw,clocks.sm,temperature.gpu
	nvidia-smi --query-gpu=$Q --format=csv,nounits -i 0 -lms 100 > "$OUT/trace.csv" &
	T=$!
fi
"$G" tune "$S" --backend "${BACKEND:-cuda}" --device 0 --strategy brute_force --energy --fresh --db "$OUT/lim.db" --no-progress > "$OUT/tune.txt" 2>&1
[ -n "${T:-}" ] && kill "$T"
rm -f "$S"
tail -6 "$OUT/tune.txt"
python3 - "$OUT/lim.db" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for k, o in c.execute("select config_key, observations from evaluations order by id"):
    o = json.loads(o or "{}")
    tr = [o[x] for x in sorted(o) if x.startswith("energy_trial_")]
    print(k, "time %.3f ms, power %.1f W, SM %.0f MHz, %s °C, trials (J): %s" % (
        o.get("time", 0), o.get("power", 0), o.get("sm_clock", 0), o.get("temperature"), ", ".join("%.4g" % t for t in tr)))
PY
