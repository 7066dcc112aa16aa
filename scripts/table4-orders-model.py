#!/usr/bin/env python3
"""How well can any model rank a set's launch orders on a GPU (issue 50,
seed 001: the simulated round model against the H100's measured orders)?

Reads Kernel Tuner caches (gtune export) of sweeps over every launch
order of one workload: two measured sweeps A and B (independent
measurements of the same orders) and the simulator's. Prints Spearman's
rank correlation of the simulator with each sweep; of the two sweeps with
each other (the measurement's reliability: no model can correlate with
one sweep better than about its square root); of an additive model of
position effects (a kernel at a position, 36 effects for six kernels)
fitted on one sweep and scored on the other; and of the first kernel
alone.

    python3 scripts/table4-orders-model.py SIM.json A.json B.json
"""
import json
import statistics
import sys


def load(p):
    d = json.load(open(p))["cache"]
    return {v["order"]: v["time"] for v in d.values() if isinstance(v.get("time"), (int, float))}


def ranks(x):
    r = [0] * len(x)
    for i, j in enumerate(sorted(range(len(x)), key=lambda i: x[i])):
        r[j] = i
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    n = len(x)
    mx, my = sum(rx) / n, sum(ry) / n
    c = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return c / (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5


def positional(d, keys):
    """An additive model of position effects fitted to d by backfitting."""
    ks = keys[0].split(">")
    mu = statistics.mean(d[o] for o in keys)
    eff = {(k, p): 0.0 for k in ks for p in range(len(ks))}
    for _ in range(30):
        for k in ks:
            for p in range(len(ks)):
                res = [d[o] - mu - sum(eff[(kk, pp)] for pp, kk in enumerate(o.split(">")) if pp != p)
                       for o in keys if o.split(">")[p] == k]
                eff[(k, p)] = statistics.mean(res)
    return lambda o: mu + sum(eff[(kk, pp)] for pp, kk in enumerate(o.split(">")))


sim, a, b = (load(p) for p in sys.argv[1:4])
keys = sorted(set(sim) & set(a) & set(b))
col = lambda d: [d[o] for o in keys]
fa, fb = positional(a, keys), positional(b, keys)
first = {}
for o in keys:
    first.setdefault(o.split(">")[0], []).append(a[o])
print("%d orders: simulator against A %.3f, against B %.3f; A against B %.3f; positions fitted on A -> B %.3f, on B -> A %.3f; first kernel alone (A) -> B %.3f" % (
    len(keys), spearman(col(sim), col(a)), spearman(col(sim), col(b)), spearman(col(a), col(b)),
    spearman([fa(o) for o in keys], col(b)), spearman([fb(o) for o in keys], col(a)),
    spearman([statistics.mean(first[o.split(">")[0]]) for o in keys], col(b))))
