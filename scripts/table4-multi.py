#!/usr/bin/env python3
"""Rows of Table IV (multi-kernel) from scripts/table4-multi-sim.sh's runs.

Usage: scripts/table4-multi.py DIR DEVICE

DIR holds, for one simulated device: bf.db (brute force by time), alg3.json
and alone.json (the procedures' runs, gtune tune --json), ebf.db (brute
force by energy over configuration x SM clock), alg4.json, space.json
(gtune space --json). Each procedure's choice is the best configuration its
run reports; its time (energy) is taken from the brute force's figure of
the same plan, so that a procedure is judged with the same measurements as
the optimum. "energy saved" and "time lost" compare the choice with the
fastest plan of the energy brute force (any clock).
"""
import json
import sqlite3
import sys


def table(db, name):
    out = {}
    for key, status, obs in sqlite3.connect(db).execute(
            "SELECT config_key, status, observations FROM evaluations ORDER BY id"):
        if status != "valid" or not obs:
            continue
        out[key] = json.loads(obs)[name] if name != "both" else json.loads(obs)
    return out


def main():
    d, dev = sys.argv[1], sys.argv[2]
    space = json.load(open(f"{d}/space.json"))
    clocks = 1
    for line in open(f"{d}/rodinia-4-clocks.yaml"):
        if "nvml_gr_clock" in line:
            clocks = len(json.loads(line.split(":", 1)[1]))
    t = table(f"{d}/bf.db", "time")
    e = table(f"{d}/ebf.db", "both")
    topt = min(t.values())
    kopt = min(t, key=t.get)
    eopt_key = min(e, key=lambda k: e[k]["energy"])
    fast_key = min(e, key=lambda k: e[k]["time"])
    comb, red = space["combined"], space["reduced"]
    print(f"| {dev} | procedure | space | reduced | plans measured | choice | its figure | brute-force optimum | gap | energy saved vs fastest | time lost vs fastest |")
    for name, label in (("alg3", "Algorithm 3"), ("alone", "multi_alone_greedy")):
        r = json.load(open(f"{d}/{name}.json"))
        k = r["best"]["key"]
        n = r["evaluated"] + r["reused"]
        print(f"| {dev} | {label} (time) | {comb} | {red} | {n} | {k} | {t[k]:.4g} ms | {kopt} {topt:.4g} ms | {100 * (t[k] / topt - 1):.1f} % | | |")
    r = json.load(open(f"{d}/alg4.json"))
    k = r["best"]["key"]
    n = r["evaluated"] + r["reused"]
    ek, eo, ef = e[k]["energy"], e[eopt_key]["energy"], e[fast_key]["energy"]
    print(f"| {dev} | Algorithm 4 (energy) | {comb * clocks} | {red * clocks} | {n} | {k} | {ek:.4g} J | {eopt_key} {eo:.4g} J | {100 * (ek / eo - 1):.1f} % | "
          f"{100 * (1 - ek / ef):.1f} % (optimum: {100 * (1 - eo / ef):.1f} %) | {100 * (e[k]['time'] / e[fast_key]['time'] - 1):.1f} % |")
    print(f"fastest plan of the energy brute force: {fast_key}, {e[fast_key]['time']:.4g} ms, {ef:.4g} J")


if __name__ == "__main__":
    main()
