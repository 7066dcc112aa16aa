#!/usr/bin/env python3
"""How reproducible the top of a launch-order sweep is (issue 50, seed
001): two whole sweeps of one set (Kernel Tuner exports of `gtune tune
SET.yaml --orders --repeat 5`, as scripts/table4-refine.sh writes them),
their Spearman agreement, where the top 1 % of each lies in the other,
and an additive position model (each kernel's mean time at each
position; the best of all assignments) fitted on a whole sweep and on
20-40 sampled orders, ranked in the other sweep.

    python3 scripts/table4-sweeps.py A-sweep.json B-sweep.json
"""
import itertools
import json
import random
import statistics as st
import sys


def load(p):
    d = json.load(open(p))
    return {v["order"]: v["time"] for v in d["cache"].values() if isinstance(v.get("time"), (int, float))}


def pct(times, o):
    t = times[o]
    return 100 * sum(v > t for v in times.values()) / (len(times) - 1)


def ranks(v):
    s = sorted(v)
    return [(2 * s.index(x) + s.count(x) + 1) / 2 for x in v]


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = st.mean(ra), st.mean(rb)
    return sum((x - ma) * (y - mb) for x, y in zip(ra, rb)) / (
        sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** .5


def fit(data):
    cells, mu = {}, st.mean(data.values())
    for o, t in data.items():
        for p, k in enumerate(o.split(">")):
            cells.setdefault((k, p), []).append(t)
    return {kp: st.mean(v) - mu for kp, v in cells.items()}


def best_order(w, names):
    return ">".join(min(itertools.permutations(names), key=lambda perm: sum(w.get((k, p), 0.0) for p, k in enumerate(perm))))


A, B = load(sys.argv[1]), load(sys.argv[2])
keys = sorted(set(A) & set(B))
names = sorted(set(keys[0].split(">")))
print("orders in both %d, Spearman %.3f" % (len(keys), spearman([A[k] for k in keys], [B[k] for k in keys])))
for x, y, nx, ny in ((A, B, "A", "B"), (B, A, "B", "A")):
    top = sorted(x, key=x.get)[:max(1, len(x) // 100)]
    print("top 1 %% of %s in %s: %s" % (nx, ny, [round(pct(y, o), 1) for o in top]))
    print("  position model fitted on all of %s: %.1f in %s" % (nx, pct(y, best_order(fit(x), names)), ny))
    rng = random.Random(1)
    for m in (20, 30, 40):
        ps = sorted(pct(y, best_order(fit({k: x[k] for k in rng.sample(list(x), m)}), names)) for _ in range(300))
        print("  fitted on %d sampled orders of %s: median %.1f in %s, >= 99 in %d of 300" % (m, nx, ps[150], ny, sum(p >= 99 for p in ps)))
