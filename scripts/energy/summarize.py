#!/usr/bin/env python3
"""Run-to-run repeatability of energy per launch: gtune's runs (SQLite
databases) against Kernel Tuner's (kt_energy.py JSON), same configurations.

Usage: summarize.py OUTDIR   (reads OUTDIR/gtune-*.db and OUTDIR/kt-*.json)
Prints, per tool: for each configuration the mean energy per launch over
the runs and its coefficient of variation (sample standard deviation /
mean), then the median and largest CV over configurations and the GPU
time spent on energy per configuration.
"""
import glob
import json
import os
import sqlite3
import statistics as st
import sys


def gtune_runs(outdir):
    runs = []
    for path in sorted(glob.glob(os.path.join(outdir, "gtune-*.db"))):
        con = sqlite3.connect(path)
        rows = con.execute("SELECT config_key, status, observations FROM evaluations").fetchall()
        run = {}
        for key, status, obs in rows:
            if status == "valid":
                run[key] = json.loads(obs)
        runs.append(run)
    return runs


def kt_runs(outdir):
    runs = []
    for path in sorted(glob.glob(os.path.join(outdir, "kt-*.json"))):
        doc = json.load(open(path))
        run = {}
        for r in doc["results"]:
            if isinstance(r.get("time"), (int, float)):
                run[f'{r["block_size_x"]},{r["work_per_thread"]}'] = {
                    "energy": r["nvml_energy"], "time": r["time"], "temperature": r.get("temperature"),
                    "sm_clock": r.get("core_freq"), "power": r.get("nvml_power"), "energy_gpu_time": 1.0}
        runs.append(run)
    return runs


def cv(xs):
    return st.stdev(xs) / st.mean(xs) if len(xs) > 1 and st.mean(xs) else float("nan")


def report(name, runs):
    if not runs:
        print(f"{name}: no runs")
        return
    keys = sorted(set.intersection(*[set(r) for r in runs]), key=lambda k: tuple(int(x) for x in k.split(",")))
    print(f"\n{name}: {len(runs)} runs, {len(keys)} configurations in every run")
    print(f"{'config':>10} {'energy J':>10} {'CV %':>7} {'time CV %':>9} {'temp C':>12} {'SM MHz':>12} {'GPU s':>6}")
    cvs, tcvs, gpu = [], [], []
    for k in keys:
        es = [r[k]["energy"] for r in runs]
        ts = [r[k]["time"] for r in runs]
        temps = [r[k].get("temperature") or 0 for r in runs]
        clocks = [r[k].get("sm_clock") or 0 for r in runs]
        g = [r[k].get("energy_gpu_time") or 0 for r in runs]
        cvs.append(cv(es))
        tcvs.append(cv(ts))
        gpu.extend(g)
        print(f"{k:>10} {st.mean(es):10.5f} {100*cvs[-1]:7.3f} {100*tcvs[-1]:9.3f} {min(temps):5.0f}-{max(temps):<5.0f} "
              f"{min(clocks):5.0f}-{max(clocks):<5.0f} {st.median(g):6.3f}")
    print(f"run-to-run energy CV: median {100*st.median(cvs):.3f} %, max {100*max(cvs):.3f} %; "
          f"time CV median {100*st.median(tcvs):.3f} %; GPU time on energy per configuration median {st.median(gpu):.3f} s")


def main():
    outdir = sys.argv[1]
    report("gtune", gtune_runs(outdir))
    report("Kernel Tuner NVMLObserver", kt_runs(outdir))


if __name__ == "__main__":
    main()
