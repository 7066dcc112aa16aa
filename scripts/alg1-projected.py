#!/usr/bin/env python3
"""Issue 50, seed 000: projection-guided single-kernel tuning replayed
over whole spaces measured on one GPU (scripts/device-alg1.sh).

For each spec: the configurations gtune project ranks fastest on the
GPU (its device profile measured by gtune probe in DB; the work emulated
from the PTX the run kept, --emulate, or declared by the spec), the first
K of them "measured" (their times looked up in the brute force), and the
best of those against the space's optimum. The model was fixed before
these runs (an independent check of it). With a second database of the
same spaces (B) the optimum's own noise: how far the best of run A
measured in run B is from run B's optimum.

    python3 scripts/alg1-projected.py GTUNE DB [DB_B] [K]
"""
import json
import sqlite3
import subprocess
import sys

gtune, db = sys.argv[1], sys.argv[2]
dbb = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].isdigit() else None
k = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 8
specs = ["examples/rodinia/streamcluster/spec.json", "examples/rodinia/particlefilter/spec.json", "examples/rodinia/lud/spec.json",
         "examples/rodinia/hotspot/spec.json", "examples/vector_add/spec.json", "examples/stencil/spec.json", "examples/matmul/spec.json"]


def measured(path, kernel):
    c = sqlite3.connect(path)
    return dict(c.execute("select e.config_key, e.objective from evaluations e join runs r on r.id = e.run_id "
                          "where r.kernel = ? and e.status = 'valid'", (kernel,)))


def projected(spec, emulate):
    args = [gtune, "project", spec, "--config", "all", "--devices", "h100_sxm", "--db", db, "--json"] + (["--emulate"] if emulate else [])
    doc = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return doc["kernel"], {c["key"]: c["projections"][0]["time_ms"] for c in doc["configurations"] if c["projections"]}


within = {True: 0, False: 0}
print("| kernel | space | optimum (ms) | emulated PTX: best of the %d projected fastest, gap | declared work: gap | the optimum's rank, emulated / declared | run B: A's optimum against B's |" % k)
print("|---|---|---|---|---|---|---|")
for spec in specs:
    row = []
    for emulate in (True, False):
        kernel, proj = projected(spec, emulate)
        meas = measured(db, kernel)
        best_key = min(meas, key=meas.get)
        order = sorted((c for c in proj if c in meas), key=proj.get)
        top = order[:k]
        got = min(top, key=meas.get)
        gap = meas[got] / meas[best_key] - 1
        within[emulate] += gap <= 0.02
        row.append((kernel, len(meas), best_key, meas[best_key], got, gap, order.index(best_key) + 1 if best_key in order else None, len(order)))
    (kernel, n, bk, bt, g1, gap1, r1, n1), (_, _, _, _, g2, gap2, r2, n2) = row
    noise = ""
    if dbb:
        mb = measured(dbb, kernel)
        kb = min(mb, key=mb.get)
        noise = "%.1f %% (B's optimum %s)" % (100 * (mb[bk] / mb[kb] - 1), kb)
    print("| %s | %d | (%s) %.3f | %s, %.1f %% | %s, %.1f %% | %s of %d / %s of %d | %s |" % (kernel, n, bk, bt, g1, 100 * gap1, g2, 100 * gap2, r1, n1, r2, n2, noise))
print("within 2 %% in %d evaluations: emulated PTX %d of %d, declared work %d of %d" % (k, within[True], len(specs), within[False], len(specs)))
