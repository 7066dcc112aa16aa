#!/usr/bin/env python3
"""Figure 9's occupancy levels (autotuning-gemm-energy-beast.md section
3.5, first row: "If the data are broken into four subsets based on the
four distinct values for occupancy and the mean for each set is
calculated and plotted, an inverse correlation between energy efficiency
and occupancy emerges"): a profiled run's valid configurations grouped by
achieved occupancy (ncu's sm__warps_active, % of peak) rounded to the
nearest STEP % (default 12.5: 8 of an H100 SM's 64 warps), with the mean
and median GFLOP/s and GFLOP/s/W of each level, of all its configurations
and of those that do not spill registers (observation local_memory 0).

    python3 scripts/figure9-occupancy.py DB [RUN] [STEP]
"""
import collections
import json
import sqlite3
import statistics
import sys

db = sqlite3.connect(sys.argv[1])
run = int(sys.argv[2]) if len(sys.argv) > 2 else 1
step = float(sys.argv[3]) if len(sys.argv) > 3 else 12.5
levels = collections.defaultdict(list)
for obs, met in db.execute("select observations, metrics from evaluations where run_id=? and status='valid'", (run,)):
    o, m = json.loads(obs), json.loads(met)
    occ = o.get("sm__warps_active.avg.pct_of_peak_sustained_active")
    if occ is None or "GFLOP/s" not in m or "GFLOP/s/W" not in m:
        continue
    levels[round(occ / step) * step].append((m["GFLOP/s"], m["GFLOP/s/W"], o.get("local_memory", 0) > 0))


def row(v):
    if not v:
        return "%6d  %12s  %6s  %14s  %6s" % (0, "-", "-", "-", "-")
    p, e = [x[0] for x in v], [x[1] for x in v]
    return "%6d  %12.0f  %6.0f  %14.2f  %6.2f" % (len(v), statistics.mean(p), statistics.median(p), statistics.mean(e), statistics.median(e))


print("occupancy  | all: configurations  GFLOP/s mean  median  GFLOP/s/W mean  median | no spill: the same")
for lv in sorted(levels):
    v = levels[lv]
    print("%8.1f %%  | %s | %s" % (lv, row(v), row([x for x in v if not x[2]])))
