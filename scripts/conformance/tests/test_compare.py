"""Tests of compare.py (standard library only; no GPU, no network)."""

import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.dirname(HERE)
sys.path.insert(0, CONF)

import compare  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(CONF))


def a100_dir():
    for d in (os.environ.get("A100_DIR"), os.path.join(ROOT, "shared", "datasets", "benchmark_hub"),
              os.path.join(ROOT, "..", "shared", "datasets", "benchmark_hub")):
        if d and os.path.exists(os.path.join(d, "convolution_milo_A100.json.gz")):
            return os.path.abspath(d)
    return None


def write_json(path, d):
    with open(path, "w") as f:
        json.dump(d, f)


def gtune_cache(names, entries, device="NVIDIA H100 80GB HBM3"):
    """A gtune export: closed, error markers in "time"."""
    cache = {}
    for params, t, times in entries:
        e = dict(params)
        e["time"] = t
        if times is not None:
            e["times"] = times
        cache[",".join(str(params[n]) for n in names)] = e
    return {"device_name": device, "kernel_name": "k", "problem_size": [4096, 4096],
            "tune_params_keys": names, "tune_params": {}, "objective": "time", "cache": cache}


def kt_cache_text(names, entries, device="NVIDIA H100 80GB HBM3", close=False):
    """A Kernel Tuner 1.4 cache as its process_cache/store_cache write it:
    errors as "__error__", left unterminated unless close."""
    head = {"device_name": device, "kernel_name": "k", "problem_size": [4096, 4096],
            "tune_params_keys": names, "tune_params": {}, "objective": "time", "cache": {}}
    text = json.dumps(head, indent="")[:-3]
    for params, t, times in entries:
        e = dict(params)
        if isinstance(t, str):
            e["__error__"] = t
        else:
            e["time"] = t
            if times is not None:
                e["times"] = times
        e["compile_time"] = 1000.0
        key = ",".join(str(params[n]) for n in names)
        text += "\n" + json.dumps({key: e})[1:-1] + ","
    if close:
        text = text[:-1] + "}\n}"
    return text


class ReadCache(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.d)

    def path(self, text):
        p = os.path.join(self.d, "c.json")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_unterminated_forms(self):
        names = ["a", "b"]
        entries = [({"a": 1, "b": 2}, 1.5, [1.5]), ({"a": 2, "b": 2}, "CompilationFailedConfig", None)]
        full = kt_cache_text(names, entries)
        c = compare.load_cache(self.path(full))
        self.assertTrue(c["__unterminated__"])
        self.assertEqual(sorted(c["cache"]), ["1,2", "2,2"])
        closed = compare.load_cache(self.path(kt_cache_text(names, entries, close=True)))
        self.assertNotIn("__unterminated__", closed)
        self.assertEqual(closed["cache"], {k: v for k, v in c["cache"].items()})
        # header only (no entry yet)
        self.assertEqual(compare.load_cache(self.path(kt_cache_text(names, [])))["cache"], {})
        # cut in the middle of the last entry: the complete ones are kept
        cut = full[:-25]
        self.assertEqual(list(compare.load_cache(self.path(cut))["cache"]), ["1,2"])

    def test_gzip_and_nan(self):
        import gzip
        p = os.path.join(self.d, "c.json")
        with gzip.open(p, "wt") as f:
            f.write('{"tune_params_keys": ["a"], "cache": {"1": {"a": 1, "time": NaN}, "2": {"a": 2, "time": 0.5}}}')
        c = compare.load_cache(p)
        self.assertEqual(compare.status_of(c["cache"]["1"]), "no time")
        self.assertEqual(compare.status_of(c["cache"]["2"]), "valid")

    def test_status(self):
        self.assertEqual(compare.status_of({"time": 1.0}), "valid")
        self.assertEqual(compare.status_of({"time": "RuntimeFailedConfig"}), "RuntimeFailedConfig")
        self.assertEqual(compare.status_of({"__error__": "InvalidConfig"}), "InvalidConfig")
        self.assertEqual(compare.status_of({"time": 1.0, "GFLOP/s": "CompilationFailedConfig"}), "CompilationFailedConfig")

    def test_norm_value(self):
        self.assertEqual(compare.norm_value("16"), 16)
        self.assertEqual(compare.norm_value(16.0), 16)
        self.assertEqual(compare.norm_value("0.5"), 0.5)
        self.assertEqual(compare.norm_value(True), 1)
        self.assertEqual(compare.norm_value("abc"), "abc")
        self.assertEqual(compare.canonical({"b": "2", "a": 1.0}), (("a", 1), ("b", 2)))


class Synthetic(unittest.TestCase):
    """Twenty configurations (a, b); Kernel Tuner's cache lists b before a."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.rd = os.path.join(self.d, "results", "convolution")
        os.makedirs(self.rd)

    def tearDown(self):
        shutil.rmtree(self.d)

    def build(self, gtune_best_shift=False):
        names = ["a", "b"]
        g, k = [], []
        configs = [{"a": a, "b": b} for a in range(1, 5) for b in (1, 2, 4, 8, 16)]
        self.keys = [f"{c['a']},{c['b']}" for c in configs]
        for i, c in enumerate(configs):
            t = 0.5 * (i + 1)            # KT time; exact binary fractions
            kt_times = [t - 0.25, t, t + 0.25]
            gt = 1.25 * t                # gtune time: exactly 1.25 x
            g_times = [gt - 0.25, gt, gt + 0.25]
            gs, ks = gt, t
            if i == 3:
                gs = "CompilationFailedConfig"          # valid in KT only
            if i == 5:
                ks = "RuntimeFailedConfig"              # valid in gtune only
            if i == 7:
                gs, ks = "CompilationFailedConfig", "RuntimeFailedConfig"  # both invalid, different kinds
            g.append((c, gs, None if isinstance(gs, str) else g_times))
            if i in (9, 11, 13):
                continue                                # 9: not evaluated, 11: aborted, 13: not in KT's space
            k.append((c, ks, None if isinstance(ks, str) else kt_times))
        if gtune_best_shift:
            # gtune finds config 1 fastest (0.3 ms against 1.25 x 0.5 for config 0), within KT's spread of config 0
            c, _, _ = g[1]
            g[1] = (c, 0.3, [0.3, 0.3, 0.3])
        write_json(os.path.join(self.rd, "gtune_cache.json"), gtune_cache(names, g))
        with open(os.path.join(self.rd, "kt_cache.json"), "w") as f:
            f.write(kt_cache_text(["b", "a"], k))
        write_json(os.path.join(self.rd, "gtune_run.json"), {"exit_status": 0, "wall_s": 30.0})
        kt_key = {i: f"{c['b']},{c['a']}" for i, c in enumerate(configs)}  # Kernel Tuner's order: b, a
        write_json(os.path.join(self.rd, "kt_run.json"), {
            "tune_kernel_wall_s": 57.0, "configurations": 19, "tune_params_keys": ["b", "a"],
            "aborted": {kt_key[11]: "RuntimeError: Kernel result verification failed for: a=3, b=2\nmore"},
            "searchspace": [{"size": 17, "not_in_space": [kt_key[13]]}]})
        write_json(os.path.join(self.rd, "published.json"), {"exit_status": 2, "message": "gtune: bad spec"})

    def test_counts_ratios_overhead(self):
        self.build()
        r = compare.compare_kernel("convolution", self.rd)
        self.assertEqual(r["sample"], 20)
        self.assertEqual(r["kt_evaluated"], 19)          # all but config 9
        self.assertEqual(r["kt_not_evaluated"], 1)
        self.assertEqual(r["gtune_valid"], 18)           # 20 - configs 3, 7
        self.assertEqual(r["gtune_valid_of_evaluated"], 17)
        # KT valid: 19 evaluated - 5 (RuntimeFailed) - 7 - 11 (aborted) - 13 (not in space)
        self.assertEqual(r["kt_valid"], 15)
        # valid in one only: 3 (KT), 5 (gtune), 11 and 13 (gtune; KT aborted / not in its space)
        self.assertEqual(r["symmetric_difference"], 4)
        ex = {e["key"]: (e["gtune"], e["kernel_tuner"]) for e in r["symmetric_difference_examples"]}
        self.assertEqual(ex[self.keys[3]], ("CompilationFailedConfig", "valid"))
        self.assertEqual(ex[self.keys[5]], ("valid", "RuntimeFailedConfig"))
        self.assertEqual(ex[self.keys[11]], ("valid", "aborted: RuntimeError: Kernel result verification failed for: a=3, b=2"))
        self.assertEqual(ex[self.keys[13]], ("valid", "not in Kernel Tuner's search space"))
        self.assertEqual(r["invalid_status_differs"], 1)
        self.assertEqual(r["time_ratio_gtune_over_kt"], {"n": 14, "median": 1.25, "min": 1.25, "max": 1.25})
        self.assertTrue(r["best"]["same"])
        self.assertEqual(r["best"]["gtune"]["key"], self.keys[0])
        self.assertEqual(r["gtune_overhead_s_per_config"], 1.5)
        self.assertEqual(r["kt_overhead_s_per_config"], 3.0)
        self.assertEqual(r["overhead_ratio_gtune_over_kt"], 0.5)
        md = compare.markdown({"kernels": [r]})
        self.assertIn("| valid in one only (must be 0) | 4 **MISMATCH** |", md)
        self.assertIn("| time gtune / KT: median [min, max] | 1.25 [1.25, 1.25] |", md)
        self.assertIn("| published T1: gtune exit (message) | 2 ok (gtune: bad spec) |", md)
        self.assertIn("| overhead ratio gtune / KT | 0.5 |", md)

    def test_different_best_within_spread(self):
        self.build(gtune_best_shift=True)
        r = compare.compare_kernel("convolution", self.rd)
        b = r["best"]
        self.assertFalse(b["same"])
        self.assertEqual(b["gtune"]["key"], self.keys[1])
        self.assertEqual(b["kernel_tuner"]["key"], self.keys[0])
        self.assertEqual(b["gtune_objective_of_kt_best"], 0.625)   # gtune's time of KT's best
        self.assertEqual(b["kt_objective_of_gtune_best"], 1.0)     # KT's time of gtune's best
        # gtune: [0.3, 0.3] vs [0.375, 0.875] do not overlap
        self.assertFalse(b["within_spread"])
        self.assertAlmostEqual(b["gtune_rel_gap"], (0.625 - 0.3) / 0.3)
        self.assertAlmostEqual(b["kt_rel_gap"], 1.0)

    def test_main_writes_files(self):
        self.build()
        md, js = os.path.join(self.d, "t.md"), os.path.join(self.d, "s.json")
        from io import StringIO
        old, sys.stdout = sys.stdout, StringIO()
        try:
            compare.main([os.path.join(self.d, "results"), "--md", md, "--json", js])
        finally:
            sys.stdout = old
        with open(js) as f:
            s = json.load(f)
        self.assertEqual([k["kernel"] for k in s["kernels"]], ["convolution"])
        with open(md) as f:
            self.assertIn("| | convolution |", f.read())


class HotspotObjective(unittest.TestCase):
    def test_gflops_not_time(self):
        d = tempfile.mkdtemp()
        try:
            rd = os.path.join(d, "hotspot")
            os.makedirs(rd)
            names = ["block_size_x", "temporal_tiling_factor"]
            fast = {"block_size_x": 32, "temporal_tiling_factor": 1}   # 1.0 ms: 251.7 GFLOP/s
            slow = {"block_size_x": 64, "temporal_tiling_factor": 10}  # 5.0 ms: 503.3 GFLOP/s
            entries = [(fast, 1.0, [1.0]), (slow, 5.0, [5.0])]
            write_json(os.path.join(rd, "gtune_cache.json"), gtune_cache(names, entries))
            with open(os.path.join(rd, "kt_cache.json"), "w") as f:
                f.write(kt_cache_text(names, entries))
            r = compare.compare_kernel("hotspot", rd)
            self.assertTrue(r["best"]["same"])
            self.assertEqual(r["best"]["gtune"]["key"], "64,10")
            self.assertAlmostEqual(r["best"]["gtune"]["objective"], 10 * 15 * 4096 * 4096 / 1e9 / 5e-3)
            self.assertEqual(r["a100_note"], "no recorded A100 cache for this kernel")
        finally:
            shutil.rmtree(d)


@unittest.skipIf(a100_dir() is None, "the recorded A100 caches (shared/datasets/benchmark_hub) are not here")
class IdentityA100(unittest.TestCase):
    """The recorded A100 cache as gtune's and as Kernel Tuner's results: every
    ratio is exactly 1."""

    def check(self, kernel, gz, n, valid):
        d = tempfile.mkdtemp()
        try:
            rd = os.path.join(d, kernel)
            os.makedirs(rd)
            src = os.path.join(a100_dir(), gz)
            shutil.copy(src, os.path.join(rd, "gtune_cache.json"))  # gzip, recognised by content
            shutil.copy(src, os.path.join(rd, "kt_cache.json"))
            write_json(os.path.join(rd, "gtune_run.json"), {"exit_status": 0, "wall_s": float(n)})
            write_json(os.path.join(rd, "kt_run.json"), {"tune_kernel_wall_s": 2.0 * n, "configurations": n})
            r = compare.compare_kernel(kernel, rd, a100_dir())
            self.assertEqual(r["sample"], n)
            self.assertEqual(r["kt_evaluated"], n)
            self.assertEqual(r["gtune_valid"], valid)
            self.assertEqual(r["kt_valid"], valid)
            self.assertEqual(r["symmetric_difference"], 0)
            self.assertEqual(r["invalid_status_differs"], 0)
            self.assertEqual(r["time_ratio_gtune_over_kt"], {"n": valid, "median": 1.0, "min": 1.0, "max": 1.0})
            self.assertEqual(r["gtune_over_a100"], {"n": valid, "median": 1.0, "min": 1.0, "max": 1.0})
            self.assertTrue(r["best"]["same"])
            self.assertEqual(r["gtune_overhead_s_per_config"], 1.0)
            self.assertEqual(r["kt_overhead_s_per_config"], 2.0)
            self.assertEqual(r["overhead_ratio_gtune_over_kt"], 0.5)
            return r
        finally:
            shutil.rmtree(d)

    def test_convolution(self):
        r = self.check("convolution", "convolution_milo_A100.json.gz", 4362, 4201)
        self.assertEqual(r["a100_device"], "NVIDIA A100-PCIE-40GB")
        # the recorded best: 1.318 ms (Kernel Tuner's own pick on the A100)
        self.assertAlmostEqual(r["best"]["gtune"]["objective"], min_time("convolution_milo_A100.json.gz"))

    def test_dedispersion(self):
        self.check("dedispersion", "dedispersion_milo_A100.json.gz", 11130, 11130)


def min_time(gz):
    c = compare.load_cache(os.path.join(a100_dir(), gz))
    return min(e["time"] for e in c["cache"].values() if compare.status_of(e) == "valid")


if __name__ == "__main__":
    unittest.main()
