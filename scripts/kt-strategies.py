#!/usr/bin/env python3
"""Kernel Tuner 1.4's strategies in its simulation mode on the recorded
caches gtune bench-strategies replays (issue 35: the table against Kernel
Tuner), with the same figures: per cache, strategy and budget the mean
fraction of the optimum (optimum / best time found, 0 when nothing valid
was found) and the share of exact random search's gap to the optimum it
closes, (fraction - random) / (1 - random), random being the expected
fraction of B configurations drawn without replacement from the searched
space (benchmark.Problem.RandomFraction, computed the same way here).

Each (cache, strategy, budget, seed) is its own tune_kernel call told
max_fevals = budget, on a fresh copy of the cache, with numpy's and
Python's global generators seeded from a hash of the cache, strategy and
seed index (Kernel Tuner's strategies draw from them). Restrictions are
the T1 spec's Conditions, the search space Kernel Tuner builds from the
cache's tune_params; the space is checked to have the cache's number of
configurations.

Needs numpy and scipy (Debian: python3-numpy python3-scipy) and Kernel
Tuner 1.4 at .ext/kernel_tuner (+ .ext/py: python-constraint), as the
conformance suite (scripts/conformance/kt_run.py installs the same guards).

Usage: /usr/bin/python3 scripts/kt-strategies.py [--seeds N] [--budgets 25,100,400]
           [--strategy NAME ...] [--cache FILE ...] [--jobs N] [--json OUT] [--partial RUNS.jsonl [--resume]]
"""
import argparse
import gzip
import hashlib
import json
import math
import os
import random
import statistics as st
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
HUB = os.path.join(ROOT, "..", "shared", "datasets", "benchmark_hub")
DEFAULT_STRATEGIES = ["random_sample", "bayes_opt", "genetic_algorithm", "pso", "diff_evo", "dual_annealing",
                      "simulated_annealing", "greedy_ils", "greedy_mls", "firefly_algorithm", "basinhopping",
                      "adaptive_tabu_greywolf", "hybrid_vndx"]


def random_fraction(sorted_valid, n, m):
    """Exact expected optimum/best of m draws without replacement from n
    configurations whose valid times are sorted_valid (the others invalid)."""
    v = len(sorted_valid)
    if m <= 0 or v == 0:
        return 0.0
    if m >= n:
        return 1.0
    opt = sorted_valid[0]
    p = m / n
    e = 0.0
    for r in range(1, min(v, n - m + 1) + 1):
        e += opt / sorted_valid[r - 1] * p
        if n - r > 0:
            p *= (n - r - m + 1) / (n - r)
    return e


def seed_of(cache, strategy, k):
    h = hashlib.sha256(f"{cache}\0{strategy}\0{k}".encode()).digest()
    return int.from_bytes(h[:4], "little")


def load(cache_path):
    doc = json.load(gzip.open(cache_path) if cache_path.endswith(".gz") else open(cache_path))
    name = os.path.basename(cache_path).split(".json")[0]
    kernel = name.rsplit("_", 1)[0]
    spec = json.load(open(os.path.join(os.path.dirname(cache_path), "specs", kernel + ".T1.json")))
    cons = [c["Expression"] for c in spec["ConfigurationSpace"].get("Conditions", [])]
    times = sorted(v["time"] for v in doc["cache"].values() if isinstance(v.get("time"), (int, float)))
    return name, doc, cons, times


_KT = None
_DOCS = {}


def _init_worker(caches):
    """Imports Kernel Tuner behind the conformance suite's guards and loads
    the caches to replay, once, before any worker is forked."""
    global _KT
    sys.path.insert(0, os.path.join(ROOT, "scripts", "conformance"))
    import kt_run  # noqa: E402
    _KT = kt_run.import_kernel_tuner(os.path.join(ROOT, ".ext"))
    for cp in caches:
        name, doc, cons, times = load(cp)
        _DOCS[name] = (doc, cons, times)


def _run_one(task):
    """One tune_kernel call: (cache name, strategy, budget, seed index) ->
    fraction of the optimum of the best valid time it found (0 if none).
    The cache is copied fresh into a file of this process's own, because
    Kernel Tuner may write to the cache it simulates from."""
    import numpy as np
    name, s, b, k = task
    doc, cons, times = _DOCS[name]
    path = os.path.join(tempfile.gettempdir(), f"kt-strategies-{os.getpid()}-{name}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    sd = seed_of(name, s, k)
    np.random.seed(sd)
    random.seed(sd)
    res, _ = _KT.tune_kernel(doc["kernel_name"], "__global__ void k(){}", doc["problem_size"], [], doc["tune_params"],
                             restrictions=cons, strategy=s, strategy_options={"max_fevals": b},
                             simulation_mode=True, cache=path, quiet=True, verbose=False, lang="CUDA")
    valid = [r["time"] for r in res if isinstance(r.get("time"), (int, float))]
    return task, (times[0] / min(valid) if valid else 0.0)


def _mean_row(problem, s, budgets, rs):
    return {"problem": problem, "strategy": s, "budgets": budgets,
            "fraction_of_optimum": [st.mean(r["fraction_of_optimum"][i] for r in rs) for i in range(len(budgets))],
            "gap_closed": [st.mean(g) if (g := [r["gap_closed"][i] for r in rs if r["gap_closed"][i] is not None]) else None
                           for i in range(len(budgets))]}


def _line(problem, s, fr, gaps, tail=""):
    return (f"{problem:>26} {s:>24} " + " ".join(f"{f:.3f}" for f in fr) + "  gap " +
            " ".join("-" if g is None else f"{g:.3f}" for g in gaps) + tail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budgets", default="25,100,400")
    ap.add_argument("--strategy", action="append")
    ap.add_argument("--cache", action="append")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes; each (cache, strategy, budget, seed) is one task, so results do not depend on it")
    ap.add_argument("--json")
    ap.add_argument("--partial", help="append each finished run to this JSON-lines file as it ends (cache, strategy, budget, seed, fraction), so that a run cut short keeps what it did")
    ap.add_argument("--resume", action="store_true",
                    help="take the runs already in the --partial file instead of running them again (a cut call, or more seeds on top of fewer: seed k is the same run either way)")
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    strategies = a.strategy or DEFAULT_STRATEGIES
    caches = a.cache or sorted(os.path.join(HUB, f) for f in os.listdir(HUB) if f.endswith(".json.gz") and "_T4" not in f)
    t00 = time.time()
    # Loaded (and Kernel Tuner imported) once here; forked workers inherit both.
    _init_worker(caches)
    names = list(_DOCS)
    # Longest first: a 400-evaluation run of a slow strategy started last
    # would hold the whole pool up.
    tasks = [(name, s, b, k) for b in sorted(budgets, reverse=True) for name in names for s in strategies for k in range(a.seeds)]
    got = {}
    if a.resume:
        if not a.partial:
            ap.error("--resume needs --partial")
        want = set(tasks)
        if os.path.exists(a.partial):
            for line in open(a.partial):
                name, s_, b, k, f = json.loads(line)
                if (name, s_, b, k) in want:
                    got[(name, s_, b, k)] = f
        tasks = [t for t in tasks if t not in got]
        print(f"--resume: {len(got)} runs from {a.partial}, {len(tasks)} to run", file=sys.stderr, flush=True)

    def record(results):
        for i, (task, f) in enumerate(results):
            got[task] = f
            if a.partial:
                with open(a.partial, "a") as pf:
                    pf.write(json.dumps(list(task) + [f]) + "\n")
            if (i + 1) % max(1, len(tasks) // 20) == 0:
                print(f"{i + 1} of {len(tasks)} runs ({time.time() - t00:.0f} s)", file=sys.stderr, flush=True)

    if a.jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(a.jobs) as pool:
            record(pool.imap_unordered(_run_one, tasks, chunksize=1))
    else:
        record(map(_run_one, tasks))
    rows = []
    for name in names:
        doc, _, times = _DOCS[name]
        n = len(doc["cache"])
        for s in strategies:
            fr = [st.mean(got[(name, s, b, k)] for k in range(a.seeds)) for b in budgets]
            row = {"problem": name, "strategy": s, "runs": a.seeds, "budgets": budgets, "fraction_of_optimum": fr,
                   "random_fraction": [random_fraction(times, n, b) for b in budgets]}
            row["gap_closed"] = [(f - r) / (1 - r) if r < 1 else None for f, r in zip(fr, row["random_fraction"])]
            rows.append(row)
            print(_line(name, s, fr, row["gap_closed"]), flush=True)
    means = []
    families = sorted({r["problem"].rsplit("_", 1)[0] for r in rows})
    for s in strategies:
        rs = [r for r in rows if r["strategy"] == s]
        groups = [("mean", rs)]
        if len(families) > 1:
            groups += [("mean " + fam, [r for r in rs if r["problem"].rsplit("_", 1)[0] == fam]) for fam in families]
        for problem, group in groups:
            m = _mean_row(problem, s, budgets, group)
            means.append(m)
            print(_line(problem, s, m["fraction_of_optimum"], m["gap_closed"]))
    print(f"{len(caches)} caches, {len(strategies)} strategies, {a.seeds} seeds, budgets {budgets}, {a.jobs} jobs: {time.time() - t00:.0f} s")
    if a.json:
        json.dump({"tool": "kernel_tuner", "version": getattr(_KT, "__version__", "1.4"), "seeds": a.seeds,
                   "results": rows, "mean": means}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
