#!/usr/bin/env python3
"""Summary of scripts/table4-repeats.sh: for each six-kernel set, how
well two independent sweeps of every launch order (each order measured R
times per sweep) agree on the orders' ranking, by the median and by the
fastest of each order's repeats, and where gtune's model-profiled order
ranks in each sweep with the interval from the repeats' noise.

Usage: table4-repeats.py T4R.tar.gz   (standard library only)
"""
import csv
import io
import json
import re
import statistics as st
import sys
import tarfile


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and xs[order[j]] == xs[order[i]]:
            j += 1
        for k in range(i, j):
            r[order[k]] = (i + j + 1) / 2
        i = j
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = st.mean(ra), st.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


STATS = {"median": st.median, "fastest": min}


def main():
    tar = tarfile.open(sys.argv[1])
    files = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if m.isfile() and "/" in m.name}
    read = lambda n: tar.extractfile(files[n]).read().decode()
    sweeps = {}
    for name in files:
        m = re.match(r"(.+)-([AB])\.csv$", name)
        if not m:
            continue
        rows = {}
        for r in csv.DictReader(io.StringIO(read(name))):
            if r["status"] == "valid" and r["repeat_times_ms"]:
                rows[r["key"]] = [float(x) for x in r["repeat_times_ms"].split()]
        sweeps.setdefault(m.group(1), {})[m.group(2)] = rows
    log = read("table4-repeats.log") if "table4-repeats.log" in files else ""
    print("| set | orders | repeats per sweep | worst / best (median, A) | statistic | Spearman A vs B | split-half A / B | gtune's order: percentile A [95 %] | B [95 %] | pooled A+B |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for x in sorted(sweeps):
        s = sweeps[x]
        if set(s) != {"A", "B"}:
            print(f"| {x} | sweeps {sorted(s)} only |")
            continue
        keys = sorted(set(s["A"]) & set(s["B"]))
        reps = min(len(v) for sw in s.values() for v in sw.values())
        meds = [st.median(s["A"][k]) for k in keys]
        for name, f in STATS.items():
            a = [f(s["A"][k]) for k in keys]
            b = [f(s["B"][k]) for k in keys]
            pooled = [f(s["A"][k] + s["B"][k]) for k in keys]
            halves = []
            for sw in "AB":
                h = [len(s[sw][k]) // 2 for k in keys]
                halves.append(spearman([f(s[sw][k][:n]) for k, n in zip(keys, h)], [f(s[sw][k][n:]) for k, n in zip(keys, h)]))
            cells = []
            chosen_key = None
            for sw in "AB":
                fn = f"{x}-{sw}-{name}.json"
                try:
                    doc = json.loads(read(fn))
                    r = doc.get("ranking") or {}
                    rp = r.get("repeated") or {}
                    cells.append(f"{r.get('Percentile', float('nan')):.1f} [{rp.get('percentile_low', float('nan')):.1f}, {rp.get('percentile_high', float('nan')):.1f}]")
                    chosen = r.get("Value")
                    if chosen is not None and chosen_key is None:
                        vals = a if sw == "A" else b
                        chosen_key = next((k for k, v in zip(keys, vals) if abs(v - chosen) < 1e-9), None)
                except (KeyError, ValueError):
                    cells.append("—")
            pooled_pct = "—"
            if chosen_key is not None:
                v = pooled[keys.index(chosen_key)]
                others = [p for k, p in zip(keys, pooled) if k != chosen_key]
                pooled_pct = f"{100 * (sum(p > v for p in others) + sum(p == v for p in others) / 2) / len(others):.1f}"
            print(f"| {x} | {len(keys)} | {reps} | {max(meds) / min(meds):.3f} | {name} | {spearman(a, b):.3f} | "
                  f"{halves[0]:.3f} / {halves[1]:.3f} | {cells[0]} | {cells[1]} | {pooled_pct} |")
    print()
    for x in sorted(sweeps):
        name = f"{x}-R.csv"
        if name not in files or set(sweeps[x]) != {"A", "B"}:
            continue
        rows = {r["key"]: [float(v) for v in r["repeat_times_ms"].split()] for r in csv.DictReader(io.StringIO(read(name)))
                if r["status"] == "valid" and r["repeat_times_ms"]}
        if not rows:
            continue
        best = min(rows, key=lambda k: st.median(rows[k]))
        s = sweeps[x]
        pooled = {k: st.median(s["A"][k] + s["B"][k]) for k in set(s["A"]) & set(s["B"])}
        if best in pooled:
            v = pooled[best]
            others = [p for k, p in pooled.items() if k != best]
            pct = 100 * (sum(p > v for p in others) + sum(p == v for p in others) / 2) / len(others)
            print(f"{x}: order_search (confirmed moves) measured {len(rows)} orders; its best by median, "
                  f"{best.rsplit(',', 1)[-1]}, is at the {pct:.1f}th percentile of the pooled sweeps by median")
    print()
    for line in log.splitlines():
        if " s" in line and ("sweep" in line or "order_search" in line):
            print(line)


if __name__ == "__main__":
    main()
