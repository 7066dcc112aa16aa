#!/usr/bin/env python3
"""Summary of scripts/energy/cold.sh: the run-to-run spread of energy per
launch under each thermal policy and Kernel Tuner 1.4's NVMLObserver.

Usage: cold_summary.py OUTDIR
Reads OUTDIR/model-*.db and OUTDIR/steady_model-*.db (gtune) and
OUTDIR/kt-*.json (Kernel Tuner). For each way of measuring, each
configuration's coefficient of variation (sample standard deviation /
mean) over the rounds; printed: the median, 90th percentile and largest
over configurations, the temperature range, and the GPU time spent on
energy per configuration (median; gtune's energy_gpu_time, which includes
the lead-in and the first configuration's warm-up; Kernel Tuner's
continuous 1 s). Also each gtune run's fitted leakage slope.
"""
import glob
import json
import os
import re
import sqlite3
import statistics as st
import sys


def cv(xs):
    return st.stdev(xs) / st.mean(xs) if len(xs) > 1 and st.mean(xs) else float("nan")


def pct(xs, q):
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def gtune_runs(outdir, policy):
    """{round: {config: observations}} of the gtune runs of one policy."""
    runs = {}
    for path in glob.glob(os.path.join(outdir, f"{policy}-*.db")):
        m = re.search(r"-(\d+)\.db$", path)
        con = sqlite3.connect(path)
        run = {}
        for key, status, obs in con.execute("SELECT config_key, status, observations FROM evaluations"):
            if status == "valid":
                run[key] = json.loads(obs)
        runs[int(m.group(1))] = run
    return runs


def kt_runs(outdir):
    runs = {}
    for path in glob.glob(os.path.join(outdir, "kt-*.json")):
        m = re.search(r"-(\d+)\.json$", path)
        run = {}
        for r in json.load(open(path))["results"]:
            if isinstance(r.get("time"), (int, float)):
                run[f'{r["block_size_x"]},{r["work_per_thread"]}'] = {
                    "energy": r["nvml_energy"], "temperature": r.get("temperature"), "energy_gpu_time": 1.0}
        runs[int(m.group(1))] = run
    return runs


def row(name, runs, field):
    runs = [r for _, r in sorted(runs.items()) if r]
    if len(runs) < 2:
        print(f"| {name} | {len(runs)} runs: too few |")
        return
    keys = sorted(set.intersection(*[set(r) for r in runs]))
    cvs = [cv([r[k][field] for r in runs]) for k in keys]
    temps = [r[k].get("temperature") or 0 for r in runs for k in keys]
    gpu = [r[k].get("energy_gpu_time") or 0 for r in runs for k in keys]
    print(f"| {name} | {len(runs)} | {len(keys)} | {100*st.median(cvs):.3f} % | {100*pct(cvs, 0.9):.3f} % | "
          f"{100*max(cvs):.3f} % | {min(temps):.0f}–{max(temps):.0f} | {st.median(gpu):.3f} |")


def main():
    outdir = sys.argv[1]
    model = gtune_runs(outdir, "model")
    steady = gtune_runs(outdir, "steady_model")
    print("| measured as | runs | configurations | CV median | CV 90th pct | CV largest | temperature °C | GPU s per configuration (median) |")
    print("|---|---|---|---|---|---|---|---|")
    row("gtune, thermal none (model runs' energy_uncorrected)", model, "energy_uncorrected")
    row("gtune, thermal model", model, "energy")
    row("gtune, thermal steady (steady+model runs' energy_uncorrected)", steady, "energy_uncorrected")
    row("gtune, thermal steady+model", steady, "energy")
    row("Kernel Tuner 1.4 NVMLObserver", kt_runs(outdir), "energy")
    print()
    for policy, runs in (("model", model), ("steady+model", steady)):
        for r, run in sorted(runs.items()):
            if not run:
                print(f"{policy} round {r}: no valid configuration")
                continue
            obs = next(iter(run.values()), {})
            warm = max((o.get("warmup_time", 0) for o in run.values()), default=0)
            print(f"{policy} round {r}: leakage {obs.get('leakage_slope', float('nan')):.3f} W/°C "
                  f"(prior {bool(obs.get('leakage_prior'))}), warm-up {warm:.1f} s, "
                  f"temperatures {min(o.get('temperature', 0) for o in run.values()):.0f}–{max(o.get('temperature', 0) for o in run.values()):.0f} °C")


if __name__ == "__main__":
    main()
