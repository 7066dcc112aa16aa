#!/usr/bin/env python3
"""How far two brute forces of one workload agree at the top (issue 50,
seed 000, Table IV's four-kernel row): each run's plan times (the whole
plan's, from the results database), the median ratio between the runs,
and where each run's fastest plans and those within 2 % of its best lie
in the other run, relative to that run's best.

    python3 scripts/rodinia4-noise.py A.db B.db
"""
import sqlite3
import statistics
import sys


def plan_times(path):
    db = sqlite3.connect(path)
    keys = {eid: key for eid, key, st in db.execute("select id, config_key, status from evaluations") if st == "valid"}
    return {keys[eid]: t for eid, t in db.execute(
        "select evaluation_id, value from observations where name='time' and launch < 0") if eid in keys}


A, B = plan_times(sys.argv[1]), plan_times(sys.argv[2])
print("plans %d / %d; median ratio B/A %.4f" % (len(A), len(B), statistics.median(B[k] / A[k] for k in A if k in B)))
for x, y, nx, ny in ((A, B, "A", "B"), (B, A, "B", "A")):
    bx, by = min(x.values()), min(y.values())
    off = lambda k: "%+.1f %%" % (100 * (y[k] / by - 1))
    print("%s's best %.4f ms; its 5 fastest in %s: %s" % (nx, bx, ny, [off(k) for k in sorted(x, key=x.get)[:5]]))
    print("  within 2 %% of %s's best: %d plans; in %s: %s" % (nx, sum(x[k] <= 1.02 * bx for k in x), ny,
                                                          [off(k) for k in x if x[k] <= 1.02 * bx]))
