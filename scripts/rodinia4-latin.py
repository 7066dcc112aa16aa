#!/usr/bin/env python3
"""Replay of a plan-only procedure for Table IV's four-kernel row
(issue 50, seed 000) over a brute-force run of rodinia-4 (every plan of
examples/workloads/rodinia-4.yaml measured, time, each kernel's launch
time stored), counting every plan it measures (no single-kernel runs).

The procedure: a Latin sweep (plan r sets every kernel to its r-th
candidate, cycling, for as many plans as the largest kernel space), each
kernel's candidates ranked by the mean of its own launch times in those
plans; the plan of each kernel's best; then, kernels by decreasing
launch time, the next-ranked candidates of one kernel at a time, a move
kept where the plan is faster, until the budget.

    python3 scripts/rodinia4-latin.py RODINIA.db [BUDGET]
"""
import random
import sqlite3
import statistics
import sys

db = sqlite3.connect(sys.argv[1])
budget = int(sys.argv[2]) if len(sys.argv) > 2 else 16
plans = {}
for eid, key, st in db.execute("select id, config_key, status from evaluations"):
    if st == "valid":
        plans[eid] = [tuple(int(x) for x in key.split(",")), None, [None] * 4]
for eid, launch, val in db.execute("select evaluation_id, launch, value from observations where name='time'"):
    if eid in plans:
        if launch < 0:
            plans[eid][1] = val
        elif launch < 4:
            plans[eid][2][launch] = val
plans = {k: (t, kt) for k, t, kt in plans.values()}
best = min(t for t, _ in plans.values())
L = H = [(x, y) for x in (8, 16, 32) for y in (8, 16, 32)]
S = P = [32, 64, 128, 256, 512, 1024]


def key(c, D):
    (lx, ly), s, (hx, hy), p = (D[k][c[k]] for k in range(4))
    return (lx, ly, s, hx, hy, p)


def run(D):
    seen, times = {}, [{} for _ in range(4)]

    def meas(c):
        k = key(c, D)
        if k not in seen:
            seen[k] = plans[k]
        return seen[k]

    for r in range(max(len(d) for d in D)):
        c = [r % len(D[k]) for k in range(4)]
        _, kt = meas(c)
        for k in range(4):
            times[k].setdefault(c[k], []).append(kt[k])
    rank = [sorted(times[k], key=lambda i: statistics.mean(times[k][i])) for k in range(4)]
    cur = [rank[k][0] for k in range(4)]
    curt, curkt = meas(cur)
    moved = True
    while len(seen) < budget and moved:
        moved = False
        for k in sorted(range(4), key=lambda k: -curkt[k]):
            for cand in rank[k][1:]:
                if len(seen) >= budget:
                    break
                c = list(cur)
                c[k] = cand
                if key(c, D) in seen:
                    continue
                t, kt = meas(c)
                if t < curt:
                    cur, curt, curkt, moved = c, t, kt, True
                    break
            if moved or len(seen) >= budget:
                break
    return len(seen), min(t for t, _ in seen.values()) / best - 1


print("plans %d, best %.4f ms, within 2 %%: %d" % (len(plans), best, sum(t <= 1.02 * best for t, _ in plans.values())))
for name, order in (("as written", lambda d: list(d)), ("reversed", lambda d: list(reversed(d))),
                    ("most threads first", lambda d: sorted(d, key=lambda c: -(c[0] * c[1] if isinstance(c, tuple) else c)))):
    n, gap = run([order(d) for d in (L, S, H, P)])
    print("candidates %s: %d plans, %.1f %% from the best" % (name, n, 100 * gap))
rng = random.Random(1)
gaps = sorted(run([rng.sample(d, len(d)) for d in (L, S, H, P)])[1] for _ in range(200))
print("200 random candidate orders: median %.1f %%, 90th percentile %.1f %%, within 2 %%: %d" % (
    100 * gaps[100], 100 * gaps[180], sum(g <= 0.02 for g in gaps)))
keys = list(plans)
r = sorted(min(plans[k][0] for k in rng.sample(keys, budget)) / best - 1 for _ in range(2000))
print("random sample of %d plans: median %.1f %%, within 2 %%: %.1f %% of 2000 draws" % (budget, 100 * r[1000], 100 * sum(x <= 0.02 for x in r) / 2000))
