#!/usr/bin/env python3
"""Overhead per configuration from a gtune results database.

Usage: scripts/overhead.py DB

For each run: configurations, medians (min-max) of compile_ms,
benchmark_ms and framework_ms, the median wall time per configuration
(differences of consecutive finished_at stamps, the first configuration
left out), the median overhead other than the timed launches (wall per
configuration minus 8 x the configuration's mean launch time: one warm-up
and 7 timed launches) and the run's whole wall time (started_at to
ended_at). The figures of BENCHMARKS.md's overhead table.
"""
import sqlite3
import statistics
import sys
from datetime import datetime


def ts(s):
    # RFC 3339 with nanoseconds: keep microseconds for datetime.
    if s is None:
        return None
    s = s.replace("Z", "+00:00")
    head, _, tail = s.partition(".")
    frac, _, zone = tail.partition("+")
    return datetime.fromisoformat(f"{head}.{frac[:6]:0<6}+{zone}")


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{statistics.median(xs):.3g} [{min(xs):.3g}–{max(xs):.3g}]"


def main():
    db = sqlite3.connect(sys.argv[1])
    runs = db.execute("SELECT id, spec_path, started_at, ended_at FROM runs ORDER BY id").fetchall()
    print("run | spec | configurations | compile (ms) | benchmark (ms) | framework (ms) | wall per configuration (ms) | overhead other than the timed launches (ms) | whole run (s)")
    for rid, spec, start, end in runs:
        rows = db.execute(
            "SELECT compile_ms, benchmark_ms, framework_ms, finished_at, json_extract(observations, '$.time') "
            "FROM evaluations WHERE run_id = ? ORDER BY id", (rid,)).fetchall()
        if not rows:
            continue
        fin = [ts(r[3]) for r in rows]
        wall = [(b - a).total_seconds() * 1e3 for a, b in zip(fin, fin[1:])]
        over = [w - 8 * r[4] for w, r in zip(wall, rows[1:]) if r[4] is not None]
        whole = (ts(end) - ts(start)).total_seconds() if end else float("nan")
        wmed = statistics.median(wall) if wall else float("nan")
        print(f"{rid} | {spec} | {len(rows)} | {med([r[0] for r in rows])} | {med([r[1] for r in rows])} | "
              f"{med([r[2] for r in rows])} | {wmed:.1f} | {med(over)} | {whole:.1f}")


if __name__ == "__main__":
    main()
