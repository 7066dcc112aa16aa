#!/usr/bin/env python3
"""Projection against measurement (issue: performance projection).

Usage: scripts/projection-check.py GTUNE H100_DIR H200_DIR PROFILES_DB
Each DIR holds what scripts/device-project.sh left on that GPU (probe.db,
kernels.db); PROFILES_DB holds both GPUs' measured profiles (the
projection anchored on a run on the other GPU, --from, needs both). For every example kernel, every configuration measured on
both GPUs: the projected time (gtune project --config all, with the
GPU's measured profile, and with its specification) against the measured
one; the projected H200/H100 ratio against the measured ratio; whether
the faster GPU was picked (either, where the two measured within 2 % of
each other); seed 003's normalized error
||T'_actual - T'_projected|| / sqrt(2) of the unit-length time vectors.
"""
import json, math, os, sqlite3, statistics, subprocess, sys

gtune, dirs, profiles = sys.argv[1], {'h100_sxm': sys.argv[2], 'h200': sys.argv[3]}, sys.argv[4]
specs = ['examples/vector_add/spec.json', 'examples/matmul/spec.json', 'examples/stencil/spec.json', 'examples/dgemm/spec.json',
         'examples/rodinia/hotspot/spec.json', 'examples/rodinia/lud/spec.json', 'examples/rodinia/particlefilter/spec.json',
         'examples/rodinia/streamcluster/spec.json', 'examples/concurrent/blackscholes/spec.json',
         'examples/concurrent/electrostatics/spec.json', 'examples/concurrent/ep/spec.json', 'examples/concurrent/smithwaterman/spec.json']

def measured(dev, kernel):
    db = sqlite3.connect(os.path.join(dirs[dev], 'kernels.db'))
    return dict(db.execute("select e.config_key, e.objective from evaluations e join runs r on r.id = e.run_id "
                           "where r.kernel = ? and e.status = 'valid'", (kernel,)))

def projected(spec, dev, profile):
    db = os.path.join(dirs[dev], 'probe.db') if profile == 'measured' else '/nonexistent/none.db'
    out = subprocess.run([gtune, 'project', spec, '--config', 'all', '--devices', dev, '--db', db, '--json'],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc['kernel'], {c['key']: c['projections'][0] for c in doc['configurations'] if c['projections']}

def run_of(dev, kernel):
    db = sqlite3.connect(os.path.join(dirs[dev], 'kernels.db'))
    return db.execute("select id from runs where kernel = ? order by id desc limit 1", (kernel,)).fetchone()[0]

def anchored(spec, kernel, src, dst):
    """dst's times projected from the run measured on src (gtune project --from)."""
    out = subprocess.run([gtune, 'project', spec, '--config', 'all', '--devices', dst, '--db', profiles,
                          '--from', f"{os.path.join(dirs[src], 'kernels.db')}:{run_of(src, kernel)}", '--json'],
                         check=True, capture_output=True, text=True).stdout
    return {c['key']: c['projections'][0]['time_ms'] for c in json.loads(out)['configurations'] if c['projections']}

def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]

rows = []
allrel = {p: [] for p in ('measured', 'specification')}
allratio = {p: [] for p in ('measured', 'specification')}
allpicked = {p: 0 for p in ('measured', 'specification')}
TIE = 0.02
allanch = []
for spec in specs:
    row = {'spec': spec}
    for prof in ('measured', 'specification'):
        proj, meas = {}, {}
        for dev in dirs:
            kernel, proj[dev] = projected(spec, dev, prof)
            meas[dev] = measured(dev, kernel)
        keys = [k for k in meas['h100_sxm'] if k in meas['h200'] and k in proj['h100_sxm'] and k in proj['h200']]
        rel = [abs(proj[d][k]['time_ms'] / meas[d][k] - 1) for d in dirs for k in keys]
        ratio = [abs((proj['h200'][k]['time_ms'] / proj['h100_sxm'][k]['time_ms']) / (meas['h200'][k] / meas['h100_sxm'][k]) - 1) for k in keys]
        # The right GPU: the one measured faster, or either where the two
        # measured within TIE of each other (a tie the noise decides).
        picked = sum(abs(meas['h200'][k] / meas['h100_sxm'][k] - 1) < TIE or
                     (proj['h200'][k]['time_ms'] < proj['h100_sxm'][k]['time_ms']) == (meas['h200'][k] < meas['h100_sxm'][k]) for k in keys)
        allpicked[prof] += picked
        norm = [math.dist(unit([meas['h100_sxm'][k], meas['h200'][k]]), unit([proj['h100_sxm'][k]['time_ms'], proj['h200'][k]['time_ms']])) / math.sqrt(2) for k in keys]
        bounds = sorted({proj[d][k]['bound'] for d in dirs for k in keys})
        allrel[prof] += rel
        allratio[prof] += ratio
        row[prof] = dict(kernel=kernel, n=len(keys), rel=statistics.median(rel), ratio=statistics.median(ratio),
                         picked=picked, norm=statistics.mean(norm), bounds='/'.join(bounds),
                         meas_ratio=statistics.median(meas['h200'][k] / meas['h100_sxm'][k] for k in keys),
                         proj_ratio=statistics.median(proj['h200'][k]['time_ms'] / proj['h100_sxm'][k]['time_ms'] for k in keys))
    anch = []
    for src, dst in (('h100_sxm', 'h200'), ('h200', 'h100_sxm')):
        a = anchored(spec, row['measured']['kernel'], src, dst)
        m = measured(dst, row['measured']['kernel'])
        anch += [abs(a[k] / m[k] - 1) for k in a if k in m]
    row['anchored'] = statistics.median(anch)
    allanch.extend(anch)
    rows.append(row)

print('| kernel | configs | bound (projected) | time error, measured profile (median) | time error, specification | H200/H100 measured | projected | ratio error | faster GPU picked | seed 003 error | error anchored on the other GPU\'s run |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for r in rows:
    m, s = r['measured'], r['specification']
    print(f"| {m['kernel']} | {m['n']} | {m['bounds']} | {100*m['rel']:.1f} % | {100*s['rel']:.1f} % | {m['meas_ratio']:.3f} | {m['proj_ratio']:.3f} | {100*m['ratio']:.1f} % | {m['picked']} of {m['n']} | {100*m['norm']:.1f} % | {100*r['anchored']:.1f} % |")
for prof in ('measured', 'specification'):
    print(f"all kernels, {prof} profile: time error median {100*statistics.median(allrel[prof]):.1f} %, "
          f"ratio error median {100*statistics.median(allratio[prof]):.1f} % over {len(allratio[prof])} configurations, "
          f"right GPU {allpicked[prof]} of {len(allratio[prof])} ({100*allpicked[prof]/len(allratio[prof]):.1f} %)")
print(f"anchored on the other GPU's run (gtune project --from), both directions: time error median {100*statistics.median(allanch):.1f} %, "
      f"90th percentile {100*sorted(allanch)[len(allanch)*9//10]:.1f} % over {len(allanch)} projections")
