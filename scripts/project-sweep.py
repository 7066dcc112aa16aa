#!/usr/bin/env python3
"""The projection from a spec's declared work against a measured sweep of
its whole space (performance-projection-heterogeneous-gpus.md section
IV-D, applied to configurations instead of GPUs): every configuration
projected on DEVICE (gtune project --config all, the device's
specification profile: no measured profile is read), against the valid
configurations of run RUN of DB measured on that GPU.

Prints how many configurations the projection says cannot launch, and how
many of those the GPU ran; Spearman's rank correlation of projected and
measured times and the median projected/measured ratio, over all
configurations projected and measured, those that spill registers
(observation local_memory > 0) and those that do not, and of the
projection's compute, global-memory and shared-memory terms alone over
those that do not spill; where the measured
fastest and the projected fastest rank in the other's order; and, where
the run holds Nsight Compute's DRAM throughput (gtune observe), the
declared DRAM bytes (the spec's Gtune.Simulation Bytes) over the bytes
that throughput implies (its share of PEAK_GBS, the GPU's DRAM peak in
GB/s, over the measured time).

    python3 scripts/project-sweep.py GTUNE SPEC DB [RUN] [DEVICE] [PEAK_GBS]
"""
import json
import math
import sqlite3
import statistics
import subprocess
import sys

gtune, spec_path, db_path = sys.argv[1:4]
run = int(sys.argv[4]) if len(sys.argv) > 4 else 1
device = sys.argv[5] if len(sys.argv) > 5 else 'h100_sxm'
peak = float(sys.argv[6]) if len(sys.argv) > 6 else 3350.0
DRAM = 'dram__throughput.avg.pct_of_peak_sustained_elapsed'

out = subprocess.run([gtune, 'project', spec_path, '--config', 'all', '--devices', device,
                      '--db', '/nonexistent/none.db', '--json'], capture_output=True, text=True, check=True)
confs = json.loads(out.stdout)['configurations']
projected = {c['key']: c['projections'][0] for c in confs if c['projections']}
unlaunchable = {c['key'] for c in confs if not c['projections']}

db = sqlite3.connect(db_path)
measured = {}
for key, eid in db.execute("select config_key, id from evaluations where run_id = ? and status = 'valid'", (run,)):
    measured[key] = dict(db.execute("select name, value from observations where evaluation_id = ? and launch = -1", (eid,)))


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    return statistics.correlation(ranks(a), ranks(b))


def pct(xs, q):
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]


print('%s on %s: %d configurations, %d projected, %d the projection says cannot launch; run %d: %d valid, %d of them among those'
      % (spec_path, device, len(confs), len(projected), len(unlaunchable), run, len(measured),
         len(unlaunchable & measured.keys())))
both = [k for k in measured if k in projected]
groups = [('all', both), ('spill registers', [k for k in both if measured[k].get('local_memory', 0) > 0]),
          ('do not spill', [k for k in both if measured[k].get('local_memory', 0) == 0])]
for name, keys in groups:
    if len(keys) < 3:
        continue
    m = [measured[k]['time'] for k in keys]
    p = [projected[k]['time_ms'] for k in keys]
    r = [x / y for x, y in zip(p, m)]
    print('  %-16s %4d: Spearman %+.3f, projected/measured median %.2f (10th-90th percentile %.2f-%.2f)'
          % (name, len(keys), spearman(m, p), statistics.median(r), pct(r, 0.1), pct(r, 0.9)))
fit = groups[2][1]
if len(fit) >= 3:
    m = [measured[k]['time'] for k in fit]
    print('  its terms alone, Spearman against measured time of those that do not spill: ' + ', '.join(
        '%s %+.3f' % (t, spearman(m, [projected[k].get(t, 0) for k in fit])) for t in ('compute_ms', 'global_ms', 'shared_ms')))
by_measured = sorted(both, key=lambda k: measured[k]['time'])
by_projected = sorted(both, key=lambda k: projected[k]['time_ms'])
print('  measured fastest %s (%.3f ms) is %d of %d projected; projected fastest %s (%.3f ms projected) is %d of %d measured (%.3f ms)'
      % (by_measured[0], measured[by_measured[0]]['time'], by_projected.index(by_measured[0]) + 1, len(both),
         by_projected[0], projected[by_projected[0]]['time_ms'], by_measured.index(by_projected[0]) + 1, len(both),
         measured[by_projected[0]]['time']))

spec = json.load(open(spec_path))
expr = spec.get('Gtune', {}).get('Simulation', {}).get('Bytes')
names = [p['Name'] for p in spec['ConfigurationSpace']['TuningParameters']]
consts = spec.get('Gtune', {}).get('Constants', {})
ratios = []
for k in measured:
    o = measured[k]
    if expr is None or DRAM not in o or o.get('local_memory', 0) > 0:
        continue
    env = dict(consts)
    env.update(zip(names, (float(v) for v in k.split(','))))
    declared = eval(expr, {'__builtins__': {}, 'max': max, 'min': min, 'ceil': math.ceil, 'floor': math.floor}, env)
    seen = o[DRAM] / 100 * peak * 1e9 * o['time'] / 1e3
    if seen > 0:
        ratios.append(declared / seen)
if ratios:
    print('  declared DRAM bytes over those ncu saw, %d configurations that do not spill: median %.1f (10th-90th percentile %.1f-%.1f)'
          % (len(ratios), statistics.median(ratios), pct(ratios, 0.1), pct(ratios, 0.9)))
