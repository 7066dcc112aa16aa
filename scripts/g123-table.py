#!/usr/bin/env python3
"""The thesis's Tables 3.4-3.7 from scripts/g123-table.sh's runs.

For each simulated GPU and kernel, the best energy (J, a launch), the best
energy efficiency (the spec's metric per W) and the best performance (that
metric's numerator) over each run: the GPU at its default settings
("none"), and G1, G2, G3 (autotuning-energy-efficiency-power-capping.md
eq. 3.2-3.4); then each strategy's gain over the default settings, as
Tables 3.5 and 3.7 give it (energy: the part saved; efficiency and
performance: the relative rise).

    python3 scripts/g123-table.py /tmp/g123
"""
import json
import os
import sys

STRATS = ["none", "g1", "g2", "g3"]


def best(path):
    with open(path) as f:
        cache = json.load(f)["cache"]
    rows = [r for r in cache.values() if isinstance(r.get("time"), (int, float)) and isinstance(r.get("energy"), (int, float))]
    eff = next(k for k in rows[0] if k.endswith("/W"))  # GB/s/W, GFLOPS/W or GFLOP/s/W
    perf = "GB/s" if eff == "GB/s/W" else "GFLOP/s"
    e = min(rows, key=lambda r: r["energy"])
    x = max(rows, key=lambda r: r[eff])
    p = max(rows, key=lambda r: r[perf])
    return {"n": len(rows), "energy": e["energy"], "eff": x[eff], "perf": p[perf], "eff_name": eff, "perf_name": perf,
            "energy_at": e, "eff_at": x}


def settings(r):
    parts = []
    for k, unit in (("nvml_gr_clock", "MHz"), ("nvml_mem_clock", "MHz mem"), ("nvml_pwr_limit", "W")):
        if k in r:
            parts.append("%s %s" % (r[k], unit))
    return ", ".join(parts) or "default"


def main():
    root = sys.argv[1]
    devices, kernels = [], []
    for name in sorted(os.listdir(root)):
        if not name.endswith(".json"):
            continue
        d, k, g = name[:-5].rsplit("-", 2)
        if d not in devices:
            devices.append(d)
        if k not in kernels:
            kernels.append(k)
    notes = []
    print("| GPU | kernel | objective | none | G1 | G2 | G3 | G1 / G2 / G3 against none |")
    print("|---|---|---|---|---|---|---|---|")
    for d in devices:
        for k in kernels:
            res = {}
            for g in STRATS:
                p = os.path.join(root, "%s-%s-%s.json" % (d, k, g))
                if os.path.exists(p):
                    res[g] = best(p)
            if "none" not in res:
                continue
            base = res["none"]
            for obj, label in (("energy", "energy (mJ)"), ("eff", base["eff_name"]), ("perf", base["perf_name"])):
                vals, gains = [], []
                for g in STRATS:
                    if g not in res:
                        vals.append("—")
                        if g != "none":
                            gains.append("—")
                        continue
                    v = res[g][obj]
                    vals.append("%.1f" % (1e3 * v) if obj == "energy" else ("%.2f" % v if obj == "eff" else "%.0f" % v))
                    if g != "none":
                        gain = 1 - v / base[obj] if obj == "energy" else v / base[obj] - 1
                        gains.append("%.1f %%" % (100 * gain))
                print("| %s | %s (%d configurations) | %s | %s | %s |" % (d, k, base["n"], label, " | ".join(vals), " / ".join(gains)))
            notes.append("%s %s, least energy at: %s" % (d, k, "; ".join("%s %s" % (g.upper(), settings(res[g]["energy_at"])) for g in ("g1", "g2", "g3") if g in res)))
    print()
    for n in notes:
        print("- " + n)


if __name__ == "__main__":
    main()
