#!/usr/bin/env python3
"""Compare gtune and Kernel Tuner on the conformance sample (standard library only).

Reads, for each kernel, a results folder RESULTS/KERNEL/ with

  gtune_cache.json   gtune's results exported as a Kernel Tuner cache
                     (gtune export --format kerneltuner); its keys are the sample
  gtune_run.json     {"exit_status", "wall_s", ...} written by run.sh
  gtune_tune.json    gtune tune --json output (optional)
  kt_cache.json      Kernel Tuner's cache (closed or not: a run cut short
                     leaves it unterminated)
  kt_run.json        kt_run.py's record (wall time of tune_kernel, aborted
                     configurations, ...)
  published.json     gtune on the published T1 file (dedispersion, gemm):
                     {"exit_status", "message"} (optional)

and the recorded A100 caches (convolution_milo_A100.json.gz,
dedispersion_milo_A100.json.gz; there are none for hotspot and gemm), and
prints a Markdown table (one column per kernel) and writes a JSON summary.

Configurations are matched by parameter name and value, not by key string,
so caches whose tune_params orders differ still line up.
"""

import argparse
import gzip
import json
import math
import os
import statistics
import sys

MARKERS = ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig", "ErrorConfig")

# Each kernel: its objective as the tuning script sets it. Objective values
# are computed from time (ms) and the configuration, so both tools are
# ranked the same way whatever metrics their caches carry.
KERNELS = {
    "convolution": {"a100": "convolution_milo_A100.json.gz", "objective": "time", "higher_is_better": False},
    # hotspot_milo.py: objective="GFLOP/s", GFLOP/s = temporal_tiling_factor
    # * 15 * 4096 * 4096 / 1e9 / (time / 1e3): it depends on the
    # configuration, so it does NOT order like time.
    "hotspot": {"a100": None, "objective": "GFLOP/s", "higher_is_better": True},
    "dedispersion": {"a100": "dedispersion_milo_A100.json.gz", "objective": "time", "higher_is_better": False},
    "gemm": {"a100": None, "objective": "time", "higher_is_better": False},
}
ORDER = ["convolution", "hotspot", "dedispersion", "gemm"]


def objective_value(kernel, params, t):
    """The script's objective for a time t (ms) of a configuration."""
    if t is None:
        return None
    if KERNELS.get(kernel, {}).get("objective") == "GFLOP/s":
        return params["temporal_tiling_factor"] * 15 * 4096 * 4096 / 1e9 / (t / 1e3)
    return t


# ---------------------------------------------------------------------------
# Reading caches.
# ---------------------------------------------------------------------------

def read_text(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    return b.decode("utf-8")


def load_cache(path):
    """A Kernel Tuner cache, closed or not (Kernel Tuner appends entries as
    '\\n"key": {...},' after a header ending in '"cache": {'); gzip is
    recognised by content. NaN and Infinity are accepted."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    t = text.rstrip()
    candidates = [t.rstrip(",") + "}\n}", t.rstrip(",") + "}", t.rstrip(",") + "\n}"]
    # Cut inside an entry: keep what precedes the last complete one.
    cut = t.rfind("},\n")
    if cut > 0:
        candidates.append(t[:cut + 1] + "}\n}")
    for c in candidates:
        try:
            d = json.loads(c)
            d["__unterminated__"] = True
            return d
        except json.JSONDecodeError:
            continue
    raise ValueError(f"{path}: not a Kernel Tuner cache (closed or unterminated)")


def load_json(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def norm_value(v):
    """Parameter values compared as numbers where they are numbers."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        for conv in (int, float):
            try:
                return norm_value(conv(v))
            except ValueError:
                pass
    return v


def status_of(entry):
    """'valid', or the error marker (Kernel Tuner 1.4 writes "__error__";
    older caches and gtune's export write the marker as "time")."""
    err = entry.get("__error__")
    if isinstance(err, str) and err:
        return err
    for v in entry.values():
        if isinstance(v, str) and v in MARKERS:
            return v
    t = entry.get("time")
    if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
        return "valid"
    return "no time"


class Results:
    """One tool's results, keyed by a canonical configuration."""

    def __init__(self, cache, label):
        self.label = label
        self.device = cache.get("device_name")
        self.names = list(cache.get("tune_params_keys") or [])
        self.unterminated = bool(cache.get("__unterminated__"))
        self.by_canon = {}
        for key, e in cache.get("cache", {}).items():
            if self.names and all(n in e for n in self.names):
                params = {n: e[n] for n in self.names}
            else:
                params = dict(zip(self.names, key.split(",")))
            canon = canonical(params)
            times = e.get("times") if isinstance(e.get("times"), list) else None
            self.by_canon[canon] = {"key": key, "params": {n: norm_value(v) for n, v in params.items()},
                                    "status": status_of(e), "time": e.get("time"), "times": times}

    def valid(self, canon):
        r = self.by_canon.get(canon)
        return r is not None and r["status"] == "valid"


def canonical(params):
    return tuple(sorted((n, norm_value(v)) for n, v in params.items()))


# ---------------------------------------------------------------------------
# The comparison.
# ---------------------------------------------------------------------------

def stats(xs):
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def best_of(kernel, res, canons):
    hib = KERNELS.get(kernel, {}).get("higher_is_better", False)
    best = None
    for c in canons:
        r = res.by_canon.get(c)
        if r is None or r["status"] != "valid":
            continue
        v = objective_value(kernel, r["params"], r["time"])
        if best is None or (v > best[1] if hib else v < best[1]):
            best = (c, v)
    return best


def spread(kernel, r):
    """[low, high] of the objective over a configuration's recorded times."""
    ts = r["times"] or [r["time"]]
    vs = [objective_value(kernel, r["params"], t) for t in ts if isinstance(t, (int, float)) and t > 0]
    return (min(vs), max(vs)) if vs else None


def compare_kernel(kernel, d, a100_dir=None):
    """The comparison for one kernel from its results folder d."""
    out = {"kernel": kernel, "objective": KERNELS.get(kernel, {}).get("objective", "time")}
    gpath = os.path.join(d, "gtune_cache.json")
    kpath = os.path.join(d, "kt_cache.json")
    grun = load_json(os.path.join(d, "gtune_run.json")) or {}
    krun = load_json(os.path.join(d, "kt_run.json")) or {}
    gtj = load_json(os.path.join(d, "gtune_tune.json")) or {}
    pub = load_json(os.path.join(d, "published.json"))
    prep = load_json(os.path.join(d, "prepare.json"))
    out["gtune_exit_status"] = grun.get("exit_status")
    out["gtune_invalid_by_status"] = gtj.get("invalid_by_status")
    out["kt_error"] = krun.get("error")
    out["kt_timed_out"] = krun.get("timed_out")
    out["kt_device"] = krun.get("device_name")
    if pub is not None:
        out["published_t1"] = pub
    if prep is not None:
        out["prepare"] = {k: prep.get(k) for k in ("error", "reference_s", "cpu_spot_check", "reference_integral")}
    if not os.path.exists(gpath):
        skipped = load_json(os.path.join(d, "skipped.json"))
        out["error"] = f"skipped: {skipped.get('reason')}" if skipped else "no gtune results (gtune_cache.json missing)"
        return out
    g = Results(load_cache(gpath), "gtune")
    out["gtune_device"] = g.device
    sample = list(g.by_canon.keys())
    out["sample"] = len(sample)
    k = Results(load_cache(kpath), "kernel_tuner") if os.path.exists(kpath) else None
    out["kt_cache_unterminated"] = k.unterminated if k else None

    # Kernel Tuner statuses outside its cache: configurations it aborted on
    # and configurations of the sample its search space does not contain.
    names = krun.get("tune_params_keys") or (k.names if k else g.names)
    extra_status = {}
    for key, msg in (krun.get("aborted") or {}).items():
        extra_status[canonical(dict(zip(names, key.split(","))))] = "aborted: " + msg.splitlines()[0][:160]
    for ss in krun.get("searchspace") or []:
        for key in ss.get("not_in_space") or []:
            extra_status.setdefault(canonical(dict(zip(names, key.split(",")))), "not in Kernel Tuner's search space")

    def kt_status(c):
        if k is not None and c in k.by_canon:
            return k.by_canon[c]["status"]
        return extra_status.get(c, "not evaluated")

    evaluated = [c for c in sample if kt_status(c) != "not evaluated"]
    out["kt_evaluated"] = len(evaluated)
    out["kt_not_evaluated"] = len(sample) - len(evaluated)
    gvalid = {c for c in evaluated if g.valid(c)}
    kvalid = {c for c in evaluated if kt_status(c) == "valid"}
    out["gtune_valid"] = sum(1 for c in sample if g.valid(c))
    out["gtune_valid_of_evaluated"] = len(gvalid)
    out["kt_valid"] = len(kvalid)
    diff = sorted(gvalid ^ kvalid)
    out["symmetric_difference"] = len(diff)
    out["symmetric_difference_examples"] = [
        {"key": g.by_canon[c]["key"], "gtune": g.by_canon[c]["status"], "kernel_tuner": kt_status(c)} for c in diff[:5]]
    inv_diff = [c for c in evaluated if c not in gvalid and c not in kvalid and g.by_canon[c]["status"] != kt_status(c)]
    out["invalid_status_differs"] = len(inv_diff)
    out["invalid_status_examples"] = [
        {"key": g.by_canon[c]["key"], "gtune": g.by_canon[c]["status"], "kernel_tuner": kt_status(c)} for c in inv_diff[:5]]

    both = sorted(gvalid & kvalid)
    ratios = [g.by_canon[c]["time"] / k.by_canon[c]["time"] for c in both]
    out["time_ratio_gtune_over_kt"] = stats(ratios)

    bg = best_of(kernel, g, both)
    bk = best_of(kernel, k, both) if k else None
    if bg and bk:
        same = bg[0] == bk[0]
        best = {"gtune": {"key": g.by_canon[bg[0]]["key"], "objective": bg[1]},
                "kernel_tuner": {"key": g.by_canon[bk[0]]["key"], "objective": bk[1]},
                "same": same}
        if not same:
            # Each tool's objective of the other's best, and whether it lies
            # within that tool's measured spread (the ranges of the per-launch
            # times of the two configurations overlap).
            g_other = objective_value(kernel, g.by_canon[bk[0]]["params"], g.by_canon[bk[0]]["time"])
            k_other = objective_value(kernel, k.by_canon[bg[0]]["params"], k.by_canon[bg[0]]["time"])
            best["gtune_objective_of_kt_best"] = g_other
            best["kt_objective_of_gtune_best"] = k_other
            best["within_spread"] = overlap(spread(kernel, g.by_canon[bg[0]]), spread(kernel, g.by_canon[bk[0]])) and \
                overlap(spread(kernel, k.by_canon[bk[0]]), spread(kernel, k.by_canon[bg[0]]))
            best["gtune_rel_gap"] = rel_gap(bg[1], g_other)
            best["kt_rel_gap"] = rel_gap(bk[1], k_other)
        out["best"] = best

    gw, kw = grun.get("wall_s"), krun.get("tune_kernel_wall_s")
    gn = len(sample)
    kn = krun.get("configurations")
    if kn is None:
        kn = len(evaluated)
    out["gtune_wall_s"] = gw
    out["kt_wall_s"] = kw
    out["kt_process_wall_s"] = krun.get("process_wall_s")
    out["gtune_overhead_s_per_config"] = gw / gn if gw is not None and gn else None
    out["kt_overhead_s_per_config"] = kw / kn if kw is not None and kn else None
    if out["gtune_overhead_s_per_config"] and out["kt_overhead_s_per_config"]:
        out["overhead_ratio_gtune_over_kt"] = out["gtune_overhead_s_per_config"] / out["kt_overhead_s_per_config"]

    a100 = KERNELS.get(kernel, {}).get("a100")
    if a100 and a100_dir and os.path.exists(os.path.join(a100_dir, a100)):
        a = Results(load_cache(os.path.join(a100_dir, a100)), "A100")
        shared = [c for c in sample if g.valid(c) and a.valid(c)]
        out["gtune_over_a100"] = stats([g.by_canon[c]["time"] / a.by_canon[c]["time"] for c in shared])
        out["a100_device"] = a.device
    elif a100:
        out["gtune_over_a100"] = None
        out["a100_note"] = "A100 cache not found"
    else:
        out["a100_note"] = "no recorded A100 cache for this kernel"
    return out


def overlap(a, b):
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def rel_gap(best, other):
    if best is None or other is None or best == 0:
        return None
    return abs(other - best) / abs(best)


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------

def fmt(v, nd=3):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:.0f}"
        return f"{v:.{nd}g}" if abs(v) < 1 else f"{v:.{nd + 1}g}"
    return str(v)


def fmt_stats(s):
    if not s:
        return "–"
    return f"{fmt(s['median'], 4)} [{fmt(s['min'], 4)}, {fmt(s['max'], 4)}]"


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(summary):
    ks = [r["kernel"] for r in summary["kernels"]]
    rows = []

    def row(label, f):
        vals = []
        for r in summary["kernels"]:
            try:
                vals.append(cell(f(r)))
            except Exception:  # noqa: BLE001
                vals.append("–")
        rows.append("| " + label + " | " + " | ".join(vals) + " |")

    row("configurations in the sample", lambda r: fmt(r.get("sample")))
    row("evaluated by Kernel Tuner", lambda r: fmt(r.get("kt_evaluated")) + (" (timed out)" if r.get("kt_timed_out") else "") + (" (error)" if r.get("kt_error") and not r.get("kt_timed_out") else ""))
    row("valid in gtune", lambda r: fmt(r.get("gtune_valid")) + ("" if r.get("gtune_valid") == r.get("gtune_valid_of_evaluated") else f" ({r.get('gtune_valid_of_evaluated')} of those KT evaluated)"))
    row("valid in Kernel Tuner", lambda r: fmt(r.get("kt_valid")))
    row("valid in one only (must be 0)", lambda r: fmt(r.get("symmetric_difference")) + (" **MISMATCH**" if r.get("symmetric_difference") else ""))
    row("invalid in both, status differs", lambda r: fmt(r.get("invalid_status_differs")))
    row("time gtune / KT: median [min, max]", lambda r: fmt_stats(r.get("time_ratio_gtune_over_kt")))
    row("objective", lambda r: r["objective"] + (" (max)" if KERNELS.get(r["kernel"], {}).get("higher_is_better") else " (min)"))
    row("best, gtune", lambda r: f"{r['best']['gtune']['key']} ({fmt(r['best']['gtune']['objective'], 4)})")
    row("best, Kernel Tuner", lambda r: f"{r['best']['kernel_tuner']['key']} ({fmt(r['best']['kernel_tuner']['objective'], 4)})")
    row("same best", lambda r: "yes" if r["best"]["same"] else
        f"no; within spread: {fmt(r['best'].get('within_spread'))} (gap gtune {fmt(100 * r['best']['gtune_rel_gap'], 2)} %, KT {fmt(100 * r['best']['kt_rel_gap'], 2)} %)")
    row("wall s, gtune / KT", lambda r: f"{fmt(r.get('gtune_wall_s'))} / {fmt(r.get('kt_wall_s'))}")
    row("overhead s/config, gtune / KT", lambda r: f"{fmt(r.get('gtune_overhead_s_per_config'))} / {fmt(r.get('kt_overhead_s_per_config'))}")
    row("overhead ratio gtune / KT", lambda r: fmt(r.get("overhead_ratio_gtune_over_kt")))
    row("gtune H100 / A100 time: median (n)", lambda r: (f"{fmt(r['gtune_over_a100']['median'], 4)} (n={r['gtune_over_a100']['n']})" if r.get("gtune_over_a100") else (r.get("a100_note") or "–")))
    row("published T1: gtune exit (message)", lambda r: (f"{r['published_t1'].get('exit_status')}" + (" ok" if r['published_t1'].get('exit_status') == 2 else " **expected 2**") + f" ({r['published_t1'].get('message', '')[:120]})") if r.get("published_t1") else "n/a")
    row("gtune exit status", lambda r: fmt(r.get("gtune_exit_status")))
    head = "| | " + " | ".join(ks) + " |\n|---|" + "---|" * len(ks)
    lines = [head] + rows
    notes = []
    for r in summary["kernels"]:
        for ex in r.get("symmetric_difference_examples") or []:
            notes.append(f"- {r['kernel']}: {ex['key']}: gtune {ex['gtune']}, Kernel Tuner {ex['kernel_tuner']}")
        if r.get("error"):
            notes.append(f"- {r['kernel']}: {r['error']}")
        if r.get("kt_error"):
            notes.append(f"- {r['kernel']}: Kernel Tuner: {r['kt_error'].splitlines()[0][:200]}")
    if notes:
        lines += ["", "Notes:"] + notes
    return "\n".join(lines) + "\n"


def summarize(results_dir, kernels=None, a100_dir=None):
    if kernels is None:
        kernels = [k for k in ORDER if os.path.isdir(os.path.join(results_dir, k))]
        kernels += sorted(k for k in os.listdir(results_dir)
                          if k not in kernels and os.path.isdir(os.path.join(results_dir, k)))
    return {"results_dir": os.path.abspath(results_dir), "a100_dir": a100_dir,
            "kernels": [compare_kernel(k, os.path.join(results_dir, k), a100_dir) for k in kernels]}


def main(argv=None):
    p = argparse.ArgumentParser(description="Compare gtune and Kernel Tuner results of the conformance suite.")
    p.add_argument("results", help="results folder with one sub-folder per kernel")
    p.add_argument("--kernels", nargs="*", help="kernels to compare (default: every sub-folder)")
    p.add_argument("--a100-dir", default=os.environ.get("A100_DIR"), help="folder with the recorded A100 caches")
    p.add_argument("--md", help="write the Markdown table here too")
    p.add_argument("--json", help="write the JSON summary here")
    a = p.parse_args(argv)
    s = summarize(a.results, a.kernels or None, a.a100_dir)
    md = markdown(s)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1, default=str)
            f.write("\n")
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
