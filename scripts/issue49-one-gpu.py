#!/usr/bin/env python3
"""Issue 49's "one GPU at hand" check from an H100's database alone.

Usage: scripts/issue49-one-gpu.py GTUNE H100.db [--emulate|none]

H100.db is what scripts/device-issue49.sh left on an H100 (its probes, a
random sample of every example kernel with the PTX kept). Each kernel's
configurations are projected onto the H100 and the H200 (the H200's
profile derived from the H100's probe: no H200 profile is in the
database), and compared with
- the H100's measured times (the time error, the measured rank of the
  configuration projected fastest on the H100);
- the H200/H100 best-time ratios measured on both GPUs in an earlier
  session (BENCHMARKS.md, "Projected against measured time": the median
  over a random 30 of the same seed, GPU-1b9fee09 and GPU-ee077263),
  MEASURED_RATIO below, since no H200 was lent for a per-configuration
  comparison.
Environment: ONLY / SKIP, comma-separated kernel names.
"""
import json, os, re, sqlite3, statistics, subprocess, sys

MEASURED_RATIO = {'vector_add': 0.801, 'matmul_kernel': 1.000, 'stencil_kernel': 0.911, 'dgemm_beast': 1.000,
                  'hotspot_step': 0.941, 'lud_internal': 0.998, 'particlefilter_likelihood': 0.835,
                  'streamcluster_cost': 0.900, 'blackscholes_iter': 0.999, 'coulomb_slice': 1.000,
                  'ep_gauss': 0.883, 'sw_score': 1.000}
G, db = sys.argv[1], sys.argv[2]
work = sys.argv[3] if len(sys.argv) > 3 else '--emulate'
runs = json.loads(subprocess.run([G,'runs','--db',db,'--json'],capture_output=True,text=True).stdout)
con = sqlite3.connect(db)
errs_all=[]; rerr=[]
print('| kernel | configs | bound (H200) | H100 time error (median) | H200/H100 projected (median) | measured (earlier 30) | ratio error | projected-best on H100: measured rank | H200 projected faster (within 2 %) | emulated: thread instructions, time |')
only = os.environ.get('ONLY')
skip = os.environ.get('SKIP', '')
for r in runs:
    if only and r['kernel'] not in only.split(','): continue
    if r['kernel'] in skip.split(','): continue
    spec = r['spec'][r['spec'].find('examples/'):]
    args = [G,'project',spec,'--config','all','--db',db,'--devices','h100_sxm,h200','--json','--quiet']
    if work != 'none': args.append(work)
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode: print(spec, out.stderr[:300]); continue
    em = re.search(r'\(([0-9]+) thread instructions, ([^ ]+) of emulation', out.stderr)
    emul = (em.group(1), em.group(2)) if em else out.stderr.strip()[-150:]
    d = json.loads(out.stdout)
    P = {}
    for c in d['configurations']:
        ps = {p['device']: p for p in c['projections']}
        if 'h100_sxm' in ps and 'h200' in ps: P[c['key']] = ps
    M = {k: v for k, v in con.execute("select config_key, objective from evaluations where run_id=? and status='valid'", (r['run'],))}
    ks = [k for k in P if k in M]
    if not ks: print(spec, 'nothing'); continue
    te = [abs(P[k]['h100_sxm']['time_ms']/M[k]-1) for k in ks]
    ratios = [P[k]['h200']['time_ms']/P[k]['h100_sxm']['time_ms'] for k in ks]
    kern = r['kernel']
    pr = statistics.median(ratios); mr = MEASURED_RATIO.get(kern)
    re_ = abs(pr/mr-1) if mr else float('nan'); rerr.append(re_)
    errs_all += te
    order = sorted(ks, key=lambda k: M[k]); pb = min(ks, key=lambda k: P[k]['h100_sxm']['time_ms'])
    bounds = sorted(set(P[k]['h200']['bound'] for k in ks))
    faster = sum(1 for x in ratios if x <= 1.02)
    print(f"| {kern} | {len(ks)} | {'/'.join(bounds)} | {100*statistics.median(te):.1f} % | {pr:.3f} | {mr:.3f} | {100*re_:.1f} % | {order.index(pb)+1} of {len(ks)} ({100*(M[pb]/M[order[0]]-1):.1f} % slower) | {faster} of {len(ks)} | {emul} |")
print(f"all: H100 time error median {100*statistics.median(errs_all):.1f} %; ratio error median over kernels {100*statistics.median(rerr):.1f} %")
