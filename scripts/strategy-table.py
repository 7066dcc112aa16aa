#!/usr/bin/env python3
"""The table of issue 35: gtune's strategies against Kernel Tuner 1.4's on
the same replayed caches, per kernel family and budget.

Reads the JSON of `gtune bench-strategies --json` and of
`scripts/kt-strategies.py --json` (each as many times as the runs were
split, by budget or by strategy; a later file's (strategy, cache, budget)
replaces an earlier one's) and prints, in Markdown:

1. every strategy of both tools with the share of exact random search's
   gap to the optimum it closes at each budget, (fraction - random) /
   (1 - random), averaged over the caches and over each family's caches
   (a family is the cache name without its last "_GPU" part);
2. for each family and budget, Kernel Tuner's best strategy against
   gtune's default (`--default`, bayes_opt unless told) and gtune's best,
   and whether gtune's default is ahead.

Both tools compute the gap the same way against the same baseline
(benchmark.Problem.RandomFraction; kt-strategies.py's random_fraction), so
the figures are comparable cache by cache. Only (cache, budget) pairs that
both tools ran are averaged, so a mean never mixes different caches.

Usage: scripts/strategy-table.py --gtune FILE [--gtune FILE ...] --kt FILE [--kt FILE ...] [--default bayes_opt]
"""
import argparse
import json
import statistics as st


def load(paths, tool):
    """{(tool, strategy): {(problem, budget): gap}} from result files."""
    out = {}
    for p in paths:
        for r in json.load(open(p))["results"]:
            for b, g in zip(r["budgets"], r["gap_closed"]):
                if g is not None:
                    out.setdefault((tool, r["strategy"]), {})[(r["problem"], b)] = g
    return out


def family(problem):
    return problem.rsplit("_", 1)[0]


def fmt(x, d=3):
    return "" if x is None else f"{x:.{d}f}".replace("-", "−")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gtune", action="append", required=True)
    ap.add_argument("--kt", action="append", required=True)
    ap.add_argument("--default", default="bayes_opt", help="gtune's default strategy where the space is too large to brute-force")
    a = ap.parse_args()
    rows = load(a.gtune, "gtune")
    rows.update(load(a.kt, "Kernel Tuner 1.4"))
    # The (cache, budget) pairs both tools ran; a strategy that lacks one of
    # a budget's pairs has no mean at that budget.
    common = set().union(*(v for k, v in rows.items() if k[0] == "gtune")) & \
        set().union(*(v for k, v in rows.items() if k[0] != "gtune"))
    budgets = sorted({b for _, b in common})
    families = sorted({family(p) for p, _ in common})

    def mean(key, b, fam=None):
        want = [(p, bb) for p, bb in common if bb == b and (fam is None or family(p) == fam)]
        if not want or any(w not in rows[key] for w in want):
            return None
        return st.mean(rows[key][w] for w in want)

    caches = sorted({p for p, _ in common})
    print(f"{len(caches)} caches ({', '.join(caches)}); budgets {', '.join(map(str, budgets))}; gap closed, mean over the caches\n")
    head = ["tool", "strategy"] + [f"gap@{b}" for b in budgets] + [f"{f} {' / '.join(map(str, budgets))}" for f in families]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    def first(k):
        m = mean(k, budgets[0])
        return -9 if m is None else m

    for key in sorted(rows, key=lambda k: (k[0] != "gtune", -first(k))):
        cells = list(key) + [fmt(mean(key, b)) for b in budgets]
        cells += [" / ".join(fmt(mean(key, b, f), 2) for b in budgets) for f in families]
        print("| " + " | ".join(cells) + " |")

    print(f"\n| family | budget | Kernel Tuner 1.4's best | gtune {a.default} | gtune's best | {a.default} ahead |")
    print("|---|---|---|---|---|---|")
    behind = 0
    for f in families + [None]:
        for b in budgets:
            def best(tool):
                c = [(mean(k, b, f), k[1]) for k in rows if k[0] == tool and k[1] != "random_sample" and mean(k, b, f) is not None]
                return max(c) if c else (None, "")
            kg, ks = best("Kernel Tuner 1.4")
            gg, gs = best("gtune")
            d = mean(("gtune", a.default), b, f)
            ahead = d is not None and kg is not None and d > kg
            behind += not ahead
            print(f"| {f or 'all'} | {b} | {fmt(kg)} ({ks}) | {fmt(d)} | {fmt(gg)} ({gs}) | {'yes' if ahead else '**no**'} |")
    print(f"\n{a.default} is behind Kernel Tuner 1.4's best in {behind} of {len(budgets) * (len(families) + 1)} (family, budget) cells")


if __name__ == "__main__":
    main()
