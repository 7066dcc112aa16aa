#!/usr/bin/env python3
"""Projection of benchmark_hub's convolution against caches nobody here
measured (issue: performance projection).

Usage: scripts/projection-conv.py GTUNE PTX_DIR [PTXAS_DIR]
       scripts/projection-conv.py --caches DIR
With --caches, the projections are read from DIR/DEVICE.json, the Kernel
Tuner caches `gtune project --emulate --write-cache DIR` wrote (every
configuration whose PTX a tuning run kept, with that run's registers;
scripts/device-keep-ptx.sh), and, where DIR/conv-h100.json (the run itself,
exported) and DIR/h100_sxm.json are there, the run's GPU is compared too.
Otherwise PTX_DIR holds KEY.ptx (key's commas as underscores) for a sample of the
convolution's configurations (go run ./scripts/ptxjobs; nvcc -ptx on a
GPU host); PTXAS_DIR, when given, KEY.ptxas (ptxas -v for sm_80: the
registers per thread, passed as --registers). The figures are given for
all configurations and for those with use_shmem 1: the kernel source
benchmark_hub holds ignores use_shmem, while the caches' times show the
kernel they measured did not (use_shmem 0 is 1.6 times slower in the
median), so only use_shmem 1 projects the kernel that was measured. Each is projected by `gtune project --ptx` on the A100, RTX
A4000 and RTX A6000 from their specifications (no profile measured), and
compared with the times recorded in ../shared/datasets/benchmark_hub's
convolution_milo_{A100,A4000,A6000}.json.gz: the error of each ratio
between two GPUs, how often the fastest GPU is picked, seed 003's
normalized error of the three GPUs' times, and where each GPU's projected
best configuration ranks among the measured ones.
"""
import glob, gzip, json, math, os, statistics, subprocess, sys

cachedir = sys.argv[2] if sys.argv[1] == '--caches' else None
if not cachedir:
    gtune, ptxdir = sys.argv[1], sys.argv[2]
    ptxasdir = sys.argv[3] if len(sys.argv) > 3 else None
import re
def registers(name):
    if not ptxasdir:
        return None
    t = open(os.path.join(ptxasdir, name + '.ptxas')).read()
    m = re.search(r"entry function '_Z18convolution_kernel[^']*'.*?Used (\d+) registers", t, re.S)
    return int(m.group(1)) if m else None
spec = '.ext/benchmark_hub/kernels/convolution_milo.json'
gpus = {'a100_40gb': 'A100', 'rtx_a4000': 'A4000', 'rtx_a6000': 'A6000'}
hub = os.path.join('..', 'shared', 'datasets', 'benchmark_hub')
caches = {}
for dev, tag in gpus.items():
    c = json.load(gzip.open(os.path.join(hub, f'convolution_milo_{tag}.json.gz')))
    caches[dev] = {k: v['time'] for k, v in c['cache'].items() if isinstance(v.get('time'), (int, float))}

def times(path):
    c = json.load(open(path))
    return {k: v['time'] for k, v in c['cache'].items() if isinstance(v.get('time'), (int, float))}

def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0] * len(v)
        for pos, i in enumerate(order):
            r[i] = pos
        return r
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    return 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry)) / (n * (n * n - 1))

proj, meas = {}, {}
if cachedir:
    pc = {d: times(os.path.join(cachedir, d + '.json')) for d in gpus}
    for k in caches['a100_40gb']:
        if all(k in caches[d] and k in pc[d] for d in gpus):
            proj[k], meas[k] = {d: pc[d][k] for d in gpus}, {d: caches[d][k] for d in gpus}
    for d in gpus:
        ks = [k for k in caches[d] if k in pc[d]]
        sk = [k for k in ks if k.split(',')[6] == '1']
        print(f'{gpus[d]}: {len(ks)} configurations measured there and projected; Spearman correlation of projected and measured times {spearman([pc[d][k] for k in ks], [caches[d][k] for k in ks]):.3f} ({spearman([pc[d][k] for k in sk], [caches[d][k] for k in sk]):.3f} over the {len(sk)} with use_shmem 1)')
    run, own = os.path.join(cachedir, 'conv-h100.json'), os.path.join(cachedir, 'h100_sxm.json')
    if os.path.exists(run) and os.path.exists(own):
        m, p = times(run), times(own)
        ks = [k for k in m if k in p]
        errs = sorted(abs(p[k] / m[k] - 1) for k in ks)
        print(f'H100 (the run\'s GPU, its specification profile): {len(ks)} configurations; time error median {100*statistics.median(errs):.1f} %, p90 {100*errs[len(errs)*9//10]:.1f} %; Spearman {spearman([p[k] for k in ks], [m[k] for k in ks]):.3f}')
        for d in gpus:
            kk = [k for k in ks if k in caches[d]]
            print(f'  H100 measured against {gpus[d]} measured: Spearman {spearman([m[k] for k in kk], [caches[d][k] for k in kk]):.3f} over {len(kk)}')
for f in ([] if cachedir else sorted(glob.glob(os.path.join(ptxdir, '*.ptx')))):
    key = os.path.basename(f)[:-4].replace('_', ',')
    if not all(key in caches[d] for d in gpus):
        continue  # failed on some GPU: not comparable
    cmd = [gtune, 'project', spec, '--config', key, '--ptx', f, '--devices', ','.join(gpus), '--db', os.environ.get('DB', '/nonexistent/none.db'), '--json']
    r = registers(os.path.basename(f)[:-4])
    if r:
        cmd += ['--registers', str(r)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print('failed:', key, out.stderr.strip()[:200], file=sys.stderr)
        continue
    ps = {p['device']: p['time_ms'] for p in json.loads(out.stdout)['configurations'][0]['projections']}
    if len(ps) == len(gpus):
        proj[key], meas[key] = ps, {d: caches[d][key] for d in gpus}

if os.environ.get('DUMP'):
    json.dump({'projected': proj, 'measured': meas}, open(os.environ['DUMP'], 'w'))

def report(keys, title):
    print(title)
    print(f'{len(keys)} configurations valid on all three GPUs and projected')
    devs = list(gpus)
    for a, b in ((devs[0], devs[1]), (devs[0], devs[2]), (devs[2], devs[1])):
        errs = [abs((proj[k][a] / proj[k][b]) / (meas[k][a] / meas[k][b]) - 1) for k in keys]
        mr = statistics.median(meas[k][a] / meas[k][b] for k in keys)
        pr = statistics.median(proj[k][a] / proj[k][b] for k in keys)
        print(f'{gpus[a]}/{gpus[b]}: measured ratio median {mr:.3f}, projected {pr:.3f}; ratio error median {100*statistics.median(errs):.1f} %, p90 {100*sorted(errs)[len(errs)*9//10]:.1f} %')
    tie = 0.02
    right = 0
    for k in keys:
        best = min(devs, key=lambda d: meas[k][d])
        pick = min(devs, key=lambda d: proj[k][d])
        right += meas[k][pick] <= meas[k][best] * (1 + tie)
    print(f'fastest GPU picked (within 2 %): {right} of {len(keys)} ({100*right/len(keys):.1f} %)')
    def unit(v):
        n = math.sqrt(sum(x * x for x in v)); return [x / n for x in v]
    norm = [math.dist(unit([meas[k][d] for d in devs]), unit([proj[k][d] for d in devs])) / math.sqrt(2) for k in keys]
    print(f'seed 003 normalized error: mean {100*statistics.mean(norm):.1f} %, median {100*statistics.median(norm):.1f} %')
    for d in devs:
        order = sorted(keys, key=lambda k: meas[k][d])
        pbest = min(keys, key=lambda k: proj[k][d])
        rank = order.index(pbest) + 1
        print(f'{gpus[d]}: the projected best {pbest} is measured rank {rank} of {len(keys)}, {meas[d][pbest] if False else meas[pbest][d]:.3f} ms against the best {meas[order[0]][d]:.3f} ms ({100*(meas[pbest][d]/meas[order[0]][d]-1):.1f} % slower)')

report(sorted(proj), 'all configurations')
report(sorted(k for k in proj if k.split(',')[6] == '1'), 'use_shmem 1: the kernel that was measured')
