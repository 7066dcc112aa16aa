"""Tests of kt_run.py without a GPU.

Need numpy and the fetched third-party code (CONFORMANCE_EXT, else
<repo>/.ext: benchmark_hub/kernels, kernel_tuner/, py/); skipped otherwise.
Kernel Tuner runs for real (its tuning scripts, search space, runner, cache
writing) either in its simulation mode on the recorded A100 caches or on
fakegpu.FakeGPU, a backend that fakes only compiling and launching.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(CONF))
sys.path.insert(0, CONF)
sys.path.insert(0, HERE)

import compare  # noqa: E402
import fakegpu  # noqa: E402

EXT = os.environ.get("CONFORMANCE_EXT") or os.path.join(ROOT, ".ext")
try:
    import numpy  # noqa: F401
    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False
HAVE_EXT = all(os.path.exists(os.path.join(EXT, p)) for p in
               ("benchmark_hub/kernels/convolution_milo.py", "kernel_tuner/kernel_tuner/interface.py", "py/constraint"))
SKIP = None if HAVE_NUMPY and HAVE_EXT else \
    f"needs numpy ({'ok' if HAVE_NUMPY else 'missing'}) and the fetched code in {EXT} ({'ok' if HAVE_EXT else 'missing'})"


def a100_dir():
    for d in (os.environ.get("A100_DIR"), os.path.join(ROOT, "shared", "datasets", "benchmark_hub"),
              os.path.join(ROOT, "..", "shared", "datasets", "benchmark_hub")):
        if d and os.path.exists(os.path.join(d, "convolution_milo_A100.json.gz")):
            return os.path.abspath(d)
    return None


# Configurations of each script's search space (checked against gtune space
# --list and Kernel Tuner's Searchspace: both spaces are identical), in the
# order of gtune's specs' parameters.
SAMPLES = {
    "convolution": (["block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "read_only", "use_padding",
                     "use_shmem", "use_cmem", "filter_height", "filter_width"],
                    ["32,4,1,4,1,0,0,1,15,15", "48,16,3,3,0,0,1,1,15,15", "80,8,1,1,1,0,1,1,15,15",
                     "112,8,1,1,1,1,1,1,15,15", "160,1,3,4,0,0,0,1,15,15", "208,1,4,4,1,0,0,1,15,15"]),
    "hotspot": (["grid_width", "grid_height", "block_size_x", "block_size_y", "tile_size_x", "tile_size_y",
                 "temporal_tiling_factor", "max_tfactor", "loop_unroll_factor_t", "sh_power"],
                ["4096,4096,2,32,8,2,10,10,5,0", "4096,4096,4,32,7,2,6,10,6,0", "4096,4096,8,16,5,2,8,10,8,1",
                 "4096,4096,16,8,1,7,4,10,4,0", "4096,4096,32,2,8,1,6,10,2,1", "4096,4096,96,1,2,5,4,10,4,0"]),
    "dedispersion": (["block_size_x", "block_size_y", "block_size_z", "tile_size_x", "tile_size_y", "tile_stride_x",
                      "tile_stride_y", "loop_unroll_factor_channel"],
                     ["1,152,1,1,8,0,1,0", "2,40,1,2,5,0,0,0", "2,160,1,2,8,1,1,0", "4,48,1,3,5,0,0,0",
                      "4,168,1,3,8,1,1,0", "8,56,1,4,5,0,0,0"]),
    "gemm": (["GEMMK", "MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI", "VWM", "VWN", "STRM", "STRN",
              "SA", "SB", "KREG", "PRECISION"],
             ["0,32,64,16,8,8,32,8,2,1,2,1,1,1,1,1,32", "0,64,16,16,8,8,16,16,2,1,1,1,1,1,1,1,32",
              "0,64,64,32,8,16,16,8,2,2,2,1,1,1,1,1,32", "0,64,128,32,16,8,16,16,2,2,2,1,1,1,1,1,32",
              "0,128,32,32,32,8,8,16,2,1,1,1,1,1,1,1,32", "0,128,128,16,8,16,8,8,2,1,4,1,1,1,1,1,32"]),
}


def ceil_div(a, b):
    return -(-a // b)


def expected_launch(kernel, p):
    """threads, grid as each script makes Kernel Tuner launch them."""
    if kernel == "convolution" or kernel == "hotspot":
        return ((p["block_size_x"], p["block_size_y"], 1),
                (ceil_div(4096, p["block_size_x"] * p["tile_size_x"]), ceil_div(4096, p["block_size_y"] * p["tile_size_y"]), 1))
    if kernel == "dedispersion":  # no grid_div: the block size alone
        return ((p["block_size_x"], p["block_size_y"], 1),
                (ceil_div(25000, p["block_size_x"]), ceil_div(2048, p["block_size_y"]), 1))
    return ((p["MDIMC"], p["NDIMC"], 1), (ceil_div(4096, p["MWG"]), ceil_div(4096, p["NWG"]), 1))


def write_sample(path, names, keys, reverse=True):
    """A gtune-like export whose tune_params_keys order differs from the
    script's (reversed), to exercise the re-keying."""
    order = list(reversed(names)) if reverse else list(names)
    cache = {}
    for k in keys:
        p = dict(zip(names, (int(x) for x in k.split(","))))
        cache[",".join(str(p[n]) for n in order)] = dict({n: p[n] for n in order}, time=1.0)
    with open(path, "w") as f:
        json.dump({"device_name": "gtune", "kernel_name": "k", "problem_size": [1], "tune_params_keys": order,
                   "tune_params": {}, "cache": cache}, f)


DRIVER = """
import sys
sys.path[:0] = [{conf!r}, {tests!r}]
import kt_run, fakegpu
if {fake!r}:
    kt_run.BACKEND_OVERRIDE = fakegpu.select
sys.exit(kt_run.main(sys.argv[1:]))
"""


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kt_run_test.")
        cls.kd = os.path.join(cls.tmp, "kernels")
        shutil.copytree(os.path.join(EXT, "benchmark_hub", "kernels"), cls.kd)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def kt_run(self, args, fake=False, env=None):
        e = dict(os.environ, CONFORMANCE_EXT=EXT, PYTHONDONTWRITEBYTECODE="1")
        e.update(env or {})
        code = DRIVER.format(conf=CONF, tests=HERE, fake=fake)
        p = subprocess.run([sys.executable, "-c", code] + args, env=e, capture_output=True, text=True, timeout=600)
        self.last_output = p.stdout + p.stderr
        return p.returncode

    def tune(self, kernel, sample, tag, fake=True, extra=(), env=None):
        cache = os.path.join(self.tmp, f"{tag}_kt_cache.json")
        rec = os.path.join(self.tmp, f"{tag}_kt_run.json")
        rc = self.kt_run(["tune", "--kernel", kernel, "--kernels-dir", self.kd, "--sample", sample,
                          "--cache", cache, "--json", rec, "--seed", "1"] + list(extra), fake=fake, env=env)
        with open(rec) as f:
            r = json.load(f)
        return rc, r, cache


@unittest.skipIf(SKIP, SKIP)
class Units(unittest.TestCase):
    def test_restriction(self):
        import kt_run
        keep = {"16,2,1", "32,1,1"}
        f = kt_run.make_sample_restriction(["x", "y", "z"], keep)
        self.assertTrue(f(16, 2, 1))
        self.assertFalse(f(16, 1, 1))
        self.assertTrue(f(x=32, y=1, z=1))      # util.check_restriction calls it with keywords
        keep.discard("32,1,1")                  # dropped after an abort: the function sees it
        self.assertFalse(f(32, 1, 1))
        # Kernel Tuner keeps it as a plain function (no lambda in its source)
        from inspect import getsource
        self.assertNotIn("lambda", getsource(f))

    def test_sample_keys(self):
        import kt_run
        tune_params = {"b": [1, 2], "a": [16, 32], "s": ["x", "y"]}
        sample = [{"a": "16", "b": 2.0, "s": "y"}, {"a": 32, "b": 1, "s": "x"}]
        self.assertEqual(kt_run.sample_keys(sample, tune_params), ["2,16,y", "1,32,x"])
        with self.assertRaises(ValueError):
            kt_run.sample_keys([{"a": 16, "b": 1}], tune_params)

    def test_guards(self):
        # Run in a child: the guards patch modules process-wide. The NVML
        # names are built by concatenation (see kt_run.py).
        code = r"""
import sys, types, subprocess
sys.path.insert(0, %r)
setter = "nvmlDevice" + "SetPowerManagementLimit"
resetter = "nvmlDevice" + "ResetGpuLockedClocks"
fake = types.ModuleType("pynvml")
setattr(fake, setter, lambda *a: "changed")
setattr(fake, resetter, lambda *a: "changed")
fake.nvmlDeviceGetPowerUsage = lambda *a: 100
sys.modules["pynvml"] = fake
import kt_run
kt = kt_run.import_kernel_tuner(%r)
import pynvml
import kernel_tuner.observers.nvml as ktnvml
assert ktnvml.pynvml is pynvml
assert pynvml.nvmlDeviceGetPowerUsage(0) == 100
for name in (setter, resetter):
    try:
        getattr(pynvml, name)(0, 1)
        raise SystemExit(name + " was not refused")
    except kt_run.GPUSettingRefused:
        pass
try:
    subprocess.run(["nvidia-smi", "-" + "pl", "100"])
    raise SystemExit("nvidia-smi power limit was not refused")
except kt_run.GPUSettingRefused:
    pass
try:
    subprocess.run(["/usr/bin/nvidia-smi", "-" + "lgc", "1000,1000"])
    raise SystemExit("nvidia-smi clocks were not refused")
except kt_run.GPUSettingRefused:
    pass
try:
    subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv"], capture_output=True)
except FileNotFoundError:
    pass  # allowed through the guard; no nvidia-smi on this machine
import jsonschema
try:
    jsonschema.validate({}, {})
    raise SystemExit("jsonschema stand-in did not raise")
except RuntimeError:
    pass
assert kt.__version__ == "1.4.0", kt.__version__
print("guards", kt_run.GUARDS)
""" % (CONF, EXT)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("'pynvml': '2 setter/resetter functions refused'", p.stdout)


@unittest.skipIf(SKIP, SKIP)
@unittest.skipIf(a100_dir() is None, "the recorded A100 caches are not here")
class Simulation(Base):
    """Kernel Tuner's simulation mode on the recorded A100 convolution cache."""

    def test_sample_selection(self):
        a100 = os.path.join(a100_dir(), "convolution_milo_A100.json.gz")
        c = compare.load_cache(a100)
        names = c["tune_params_keys"]
        valid = sorted(k for k, e in c["cache"].items() if compare.status_of(e) == "valid")
        invalid = sorted(k for k, e in c["cache"].items() if compare.status_of(e) != "valid")
        keys = valid[::97][:40] + invalid[::31][:5]      # 45 configurations, valid and invalid
        outside = "32,1,1,1,0,1,1,1,15,15"             # use_padding with block_size_x % 32 == 0: not in the space
        sample = os.path.join(self.tmp, "sim_sample.json")
        write_sample(sample, names, keys + [outside])
        rc, r, cache = self.tune("convolution", sample, "sim", fake=False, extra=["--simulation-cache", a100])
        self.assertEqual(rc, 0, self.last_output)
        self.assertIsNone(r["error"])
        self.assertEqual(r["sample_size"], 46)
        self.assertEqual(r["searchspace"][0]["size"], 45)
        self.assertEqual(r["searchspace"][0]["not_in_space"], [outside])
        self.assertEqual(r["results"], 45)
        self.assertEqual(r["configurations"], 45)
        self.assertEqual(r["device_name"], "NVIDIA A100-PCIE-40GB")
        self.assertEqual(r["tune_params_keys"], names)
        self.assertEqual(sorted(r["sample_keys"]), sorted(keys + [outside]))
        self.assertEqual(r["guards"]["jsonschema"], "stand-in (validate raises)")
        self.assertGreater(r["tune_kernel_wall_s"], 0)
        self.assertEqual(len(set(keys)), 45)
        opts = r["script_options"]
        self.assertEqual(opts["options"]["iterations"], 32)
        self.assertEqual(opts["options"]["grid_div_x"], ["block_size_x", "tile_size_x"])
        self.assertEqual(opts["options"]["cmem_args"], {"d_filter": {"dtype": "float32", "shape": [225]}})
        self.assertEqual(len(opts["restrictions"]), 4)


@unittest.skipIf(SKIP, SKIP)
class FakeGPU(Base):
    """Kernel Tuner's real runner and cache writing on a fake GPU."""

    def check_kernel(self, kernel, extra_env=None):
        names, keys = SAMPLES[kernel]
        sample = os.path.join(self.tmp, f"{kernel}_sample.json")
        write_sample(sample, names, keys)
        log = os.path.join(self.tmp, f"{kernel}_launches.log")
        env = {"FAKEGPU_LOG": log}
        env.update(extra_env or {})
        rc, r, cache = self.tune(kernel, sample, kernel, env=env)
        self.assertEqual(rc, 0, self.last_output)
        self.assertIsNone(r["error"])
        c = compare.load_cache(cache)
        self.assertNotIn("__unterminated__", c)          # closed by Kernel Tuner at the end
        self.assertEqual(c["device_name"], "Fake GPU")
        self.assertEqual(c["tune_params_keys"], names)
        self.assertEqual(sorted(c["cache"]), sorted(keys))
        for k, e in c["cache"].items():
            self.assertEqual(e["time"], fakegpu.time_of(k))
            self.assertEqual(len(e["times"]), 32)         # the scripts' iterations=32
            self.assertIn("compile_time", e)
            self.assertIn("benchmark_time", e)
        self.assertEqual(r["searchspace"][0]["size"], len(keys))
        self.assertEqual(r["configurations"], len(keys))
        # threads and grid as the scripts make Kernel Tuner launch them
        with open(log) as f:
            launches = {l.split()[0]: l.split(" ", 1)[1].strip() for l in f}
        for k in keys:
            p = dict(zip(names, (int(x) for x in k.split(","))))
            threads, grid = expected_launch(kernel, p)
            self.assertEqual(launches[k], f"threads={threads} grid={grid}", k)
        return r

    def test_convolution(self):
        self.check_kernel("convolution")

    def test_hotspot(self):
        r = self.check_kernel("hotspot")
        self.assertEqual(r["script_options"]["options"]["objective"], "GFLOP/s")

    def test_gemm(self):
        r = self.check_kernel("gemm")
        o = r["script_options"]
        self.assertEqual(o["options"]["block_size_names"], ["MDIMC", "NDIMC", "block_size_z"])
        self.assertEqual([a.get("value") for a in o["arguments"][:5]], [4096, 4096, 4096, 1, 1])
        self.assertEqual(o["arguments"][5], {"dtype": "float32", "shape": [4096, 4096]})

    def test_dedispersion(self):
        # prepare: the inputs and the reference through run_kernel of
        # dedispersion_naive (on the fake GPU: zeros), raw copies for gtune
        rec = os.path.join(self.tmp, "prepare.json")
        rc = self.kt_run(["prepare", "--kernels-dir", self.kd, "--seed", "1", "--json", rec], fake=True)
        self.assertEqual(rc, 0, self.last_output)
        with open(rec) as f:
            p = json.load(f)
        self.assertIsNone(p["error"])
        self.assertEqual(p["reference"], "gpu")
        self.assertEqual(p["shifts_dtype"], "float32")
        self.assertEqual({k: v["bytes"] for k, v in p["files"].items()},
                         {"input": 25650 * 1536, "shifts": 1536 * 4, "reference": 2048 * 25000 * 4})
        # the fake GPU computes nothing: the CPU spot check sees that
        self.assertEqual(p["cpu_spot_check"]["mismatches"], p["cpu_spot_check"]["n"])
        import numpy as np
        d = os.path.join(self.kd, "dedisp_milo")
        inp = np.load(os.path.join(d, "input_ref.npy"))
        self.assertEqual(inp.dtype, np.uint8)
        self.assertTrue(np.array_equal(np.fromfile(os.path.join(d, "input_ref.u8"), dtype=np.uint8), inp))
        sh = np.load(os.path.join(d, "shifts_ref.npy"))
        self.assertTrue(np.array_equal(np.fromfile(os.path.join(d, "shifts_ref.f32"), dtype="<f4"), sh))
        # the same seed gives the same input as the script's create_reference would draw
        np.random.seed(1)
        self.assertTrue(np.array_equal(np.random.randn(25650 * 1536).astype(np.uint8), inp))
        r = self.check_kernel("dedispersion")
        self.assertEqual(r["script_options"]["options"]["compiler_options"], [f"-I{d}"])
        self.assertEqual(r["script_options"]["options"]["answer"],
                         [None, {"dtype": "float32", "shape": [2048 * 25000]}, None])

    def test_sigterm(self):
        """The suite's time limit: SIGTERM while tuning leaves the record
        (timed_out, exit 124) and the cache Kernel Tuner wrote so far."""
        import signal
        import time
        names, keys = SAMPLES["convolution"]
        sample = os.path.join(self.tmp, "term_sample.json")
        write_sample(sample, names, keys)
        cache = os.path.join(self.tmp, "term_kt_cache.json")
        rec = os.path.join(self.tmp, "term_kt_run.json")
        e = dict(os.environ, CONFORMANCE_EXT=EXT, PYTHONDONTWRITEBYTECODE="1", FAKEGPU_SLEEP="0.03")
        code = DRIVER.format(conf=CONF, tests=HERE, fake=True)
        p = subprocess.Popen([sys.executable, "-c", code, "tune", "--kernel", "convolution", "--kernels-dir", self.kd,
                              "--sample", sample, "--cache", cache, "--json", rec],
                             env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        n = 0
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.2)
            if os.path.exists(cache):
                n = len(compare.load_cache(cache)["cache"])
                if n >= 2:
                    break
        self.assertIsNone(p.poll(), "finished before it could be stopped")
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=60)[0].decode()
        self.assertEqual(p.returncode, 124, out)
        with open(rec) as f:
            r = json.load(f)
        self.assertTrue(r["timed_out"])
        c = compare.load_cache(cache)
        self.assertTrue(c["__unterminated__"])
        self.assertGreaterEqual(len(c["cache"]), 2)
        self.assertLess(len(c["cache"]), 6)
        self.assertEqual(r["configurations"], len(c["cache"]))
        self.assertGreater(r["tune_kernel_wall_s"], 0)

    def test_abort_and_restart(self):
        """A configuration Kernel Tuner aborts on is dropped and the run resumes
        from the cache; a CUDA error that ends the context restarts the process."""
        names, keys = SAMPLES["convolution"]
        sample = os.path.join(self.tmp, "abort_sample.json")
        write_sample(sample, names, keys)
        env = {"FAKEGPU_COMPILE_ERROR": keys[1], "FAKEGPU_STICKY": keys[4]}
        rc, r, cache = self.tune("convolution", sample, "abort", env=env)
        self.assertEqual(rc, 3, self.last_output)         # restart requested
        self.assertTrue(r["restart"])
        self.assertEqual(sorted(r["aborted"]), sorted([keys[1], keys[4]]))
        self.assertIn("fake compile error", r["aborted"][keys[1]])
        self.assertIn("ILLEGAL_ADDRESS", r["aborted"][keys[4]])
        rc, r, cache = self.tune("convolution", sample, "abort", env=env, extra=["--resume"])
        self.assertEqual(rc, 0, self.last_output)
        self.assertEqual(r["processes"], 2)
        self.assertIsNone(r["error"])
        self.assertEqual(sorted(r["aborted"]), sorted([keys[1], keys[4]]))
        c = compare.load_cache(cache)
        self.assertEqual(sorted(c["cache"]), sorted(k for i, k in enumerate(keys) if i not in (1, 4)))
        self.assertEqual(r["configurations"], 6)           # 4 measured + 2 aborted
        self.assertEqual(r["searchspace"][-1]["size"], 4)
        self.assertGreaterEqual(len(r["calls"]), 3)
        self.assertEqual(r["tune_kernel_wall_s"], sum(x["wall_s"] for x in r["calls"]))


if __name__ == "__main__":
    unittest.main()
