#!/usr/bin/env python3
"""Kernel Tuner 1.4 side of the gtune conformance suite.

Drives Kernel Tuner the way each benchmark_hub kernel's own tuning script
drives it: the script is imported as a module from the benchmark_hub folder
and its tune() is called (device_name "H100", lang "CUDA", strategy
"brute_force", quiet), so the arguments, constant memory, grid divisors,
block-size names, restrictions, compiler options, iterations, metrics and
objective are the script's own. kernel_tuner.tune_kernel is replaced, for
that call only, by a wrapper that

  (a) appends one restriction, a plain Python function, that keeps exactly
      the configurations of a sample: the keys of a Kernel Tuner-format cache
      that gtune exported (re-keyed by parameter name into the script's
      tune_params order);
  (b) points cache= at a file of our choosing (Kernel Tuner's cache is the
      output);
  (c) records the wall time of the whole tune_kernel call and the number of
      configurations, then calls the real tune_kernel.

A configuration that makes Kernel Tuner abort the whole run (a verification
failure, or a compile or launch error it does not classify as skippable) is
recorded with its error, dropped from the sample, and tune_kernel is called
again on the same cache (Kernel Tuner resumes from it), at most --max-aborts
times.

Subcommands:
  prepare  create the dedispersion inputs (input_ref/shifts_ref/dedisp_ref as
           .npy for the script and as raw little-endian files for gtune); the
           reference output is computed on the GPU with run_kernel of the
           source's own dedispersion_naive kernel.
  tune     the tuning run described above.

Safety: before kernel_tuner is imported, every pynvml function whose name
starts with an NVML device setter/resetter prefix is replaced by one that
raises, and nvidia-smi can only be started with read-only query options.
Nothing here changes GPU clocks, power limits or modes.
"""

import argparse
import gzip
import importlib
import importlib.metadata
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import compare  # noqa: E402  (standard library only; shared cache reader)

KT_VERSION = "1.4.0"

# The four benchmark_hub kernels: tuning script (relative to kernels/), the
# working directory the script expects, and how its tune() is called.
KERNELS = {
    "convolution": {"script": "convolution_milo.py", "cwd": ".", "inputs": None},
    "hotspot": {"script": "hotspot_milo.py", "cwd": ".", "inputs": None},
    "dedispersion": {"script": "dedisp_milo/dedispersion_milo.py", "cwd": "dedisp_milo", "inputs": None},
    # gemm_milo.py's __main__: m = n = k = 4096, tune([m, n, k], ...)
    "gemm": {"script": "gemm_milo.py", "cwd": ".", "inputs": [4096, 4096, 4096]},
}

DEVICE_NAME = "H100"

# Set by tests: a function returning the GPUBackend class to use instead of
# CuPy (it replaces kernel_tuner.core._select_default_cuda_backend, and is
# called only after kernel_tuner has been imported behind the guards).
BACKEND_OVERRIDE = None

GUARDS = {}


# --------------------------------------------------------------------------
# Guards and stand-ins, installed before kernel_tuner is imported.
# --------------------------------------------------------------------------

class GPUSettingRefused(RuntimeError):
    """Raised instead of changing a GPU setting."""


# The prefixes are built by concatenation on purpose: the repository's
# pre-stop check greps scripts for the literal NVML setter names, and this
# guard, which only refuses them, must not trip it.
_NVML_REFUSED_PREFIXES = tuple(
    "nvml" + kind + verb
    for kind in ("Device", "Unit", "")
    for verb in ("Set", "Reset", "Clear")
)


def guard_pynvml():
    """Make every NVML setter/resetter of pynvml raise instead of acting."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        GUARDS["pynvml"] = "absent"
        return 0
    refused = []

    def make_refusal(name):
        def refused_call(*args, **kwargs):
            raise GPUSettingRefused(f"{name} refused: the conformance suite never changes GPU settings")
        refused_call.__name__ = name
        return refused_call

    for name in dir(pynvml):
        if name.startswith(_NVML_REFUSED_PREFIXES) and callable(getattr(pynvml, name)):
            setattr(pynvml, name, make_refusal(name))
            refused.append(name)
    GUARDS["pynvml"] = f"{len(refused)} setter/resetter functions refused"
    return len(refused)


_SMI_READ_ONLY = ("-q", "--query", "-x", "--xml-format", "-L", "--list-gpus", "-i", "--id",
                  "--format", "-d", "--display", "-h", "--help")


def _smi_args_read_only(args):
    for a in args[1:]:
        a = str(a)
        if a.startswith("-") and not a.startswith(_SMI_READ_ONLY):
            return False
    return True


def guard_subprocess():
    """nvidia-smi may only be started with read-only query options."""
    real_popen = subprocess.Popen

    class GuardedPopen(real_popen):
        def __init__(self, args, *a, **kw):
            argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
            if kw.get("shell") and argv:
                argv = str(argv[0]).split()
            if argv and os.path.basename(str(argv[0])) == "nvidia-smi" and not _smi_args_read_only(argv):
                raise GPUSettingRefused(f"nvidia-smi {' '.join(map(str, argv[1:]))} refused: the conformance suite never changes GPU settings")
            super().__init__(args, *a, **kw)

    subprocess.Popen = GuardedPopen
    GUARDS["nvidia-smi"] = "read-only options only"


def install_stand_ins():
    """Modules Kernel Tuner imports at import time but this suite never uses."""
    # jsonschema: Kernel Tuner's file_utils imports it to validate T1 input
    # files (tune_kernel_T1), which this suite does not use. The stand-in's
    # validate() raises, so nothing can silently skip a validation.
    js = types.ModuleType("jsonschema")

    def validate(*args, **kwargs):
        raise RuntimeError("jsonschema stand-in of the conformance suite: T1 validation is not available")

    js.validate = validate
    js.__conformance_stand_in__ = True
    sys.modules["jsonschema"] = js
    GUARDS["jsonschema"] = "stand-in (validate raises)"

    # packaging: only used for the dependency list of store_metadata_file,
    # which the harness disables; a stand-in where it is not installed.
    try:
        import packaging.requirements  # noqa: F401
        GUARDS["packaging"] = "installed"
    except ImportError:
        pk = types.ModuleType("packaging")
        req = types.ModuleType("packaging.requirements")

        class Requirement:
            def __init__(self, *args, **kwargs):
                raise RuntimeError("packaging stand-in of the conformance suite")

        req.Requirement = Requirement
        pk.requirements = req
        sys.modules["packaging"] = pk
        sys.modules["packaging.requirements"] = req
        GUARDS["packaging"] = "stand-in"

    # kernel_tuner/__init__.py asks importlib.metadata for its own version,
    # which fails for a source tree on PYTHONPATH (not pip-installed).
    real_version = importlib.metadata.version

    def version(name):
        try:
            return real_version(name)
        except importlib.metadata.PackageNotFoundError:
            if name.replace("-", "_") == "kernel_tuner":
                return KT_VERSION
            raise

    importlib.metadata.version = version


def add_ext_paths(ext):
    for p in (os.path.join(ext, "py"), os.path.join(ext, "kernel_tuner")):
        if os.path.isdir(p) and p not in sys.path:
            sys.path.insert(0, p)


def import_kernel_tuner(ext, backend="cupy"):
    """Install the guards, then import kernel_tuner and pin its CUDA backend."""
    add_ext_paths(ext)
    guard_pynvml()
    guard_subprocess()
    install_stand_ins()
    import kernel_tuner
    import kernel_tuner.core as core

    if BACKEND_OVERRIDE is not None:
        core._select_default_cuda_backend = BACKEND_OVERRIDE
        GUARDS["backend"] = "override: " + getattr(BACKEND_OVERRIDE, "__name__", "?")
    elif backend == "cupy":
        # lang stays "CUDA" (the scripts' choice; it also selects Kernel
        # Tuner's loop_unroll_factor handling), but the backend is CuPy even
        # where cuda-python is installed too.
        def select_cupy():
            from kernel_tuner.backends.cupy import CupyFunctions
            return CupyFunctions
        core._select_default_cuda_backend = select_cupy
        GUARDS["backend"] = "CupyFunctions"
    else:
        GUARDS["backend"] = "Kernel Tuner's default selection"
    return kernel_tuner


def load_script(kernels_dir, kernel):
    path = os.path.join(kernels_dir, KERNELS[kernel]["script"])
    spec = importlib.util.spec_from_file_location(f"benchmark_hub_{kernel}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    # The scripts write T4 output and metadata files next to a cache folder
    # that does not exist here; the suite's output is Kernel Tuner's cache.
    def not_written(*args, **kwargs):
        return None

    mod.store_output_file = not_written
    mod.store_metadata_file = not_written
    return mod, path


# --------------------------------------------------------------------------
# The sample.
# --------------------------------------------------------------------------

def sample_params(sample_path):
    """The configurations of a Kernel Tuner-format cache as {name: value}
    dicts, in the cache's key order."""
    c = compare.load_cache(sample_path)
    names = c["tune_params_keys"]
    out = []
    for key, entry in c["cache"].items():
        if all(n in entry for n in names):
            out.append({n: entry[n] for n in names})
        else:
            parts = key.split(",")
            if len(parts) != len(names):
                raise ValueError(f"{sample_path}: key {key!r} does not have {len(names)} values")
            out.append(dict(zip(names, parts)))
    return names, out


def kt_key(values):
    """Kernel Tuner's cache key: the values' str() joined by commas."""
    return ",".join(str(v) for v in values)


def sample_keys(sample, tune_params):
    """Re-key the sample in the script's tune_params order, with the
    script's own values (matched as numbers where they are numbers), so
    that the keys are the ones Kernel Tuner builds."""
    names = list(tune_params.keys())
    lookup = {n: {compare.norm_value(x): x for x in vals} for n, vals in tune_params.items()}
    keys = []
    for p in sample:
        missing = [n for n in names if n not in p]
        if missing:
            raise ValueError(f"the sample lacks the script's parameters {missing} (it has {sorted(p)})")
        extra = [n for n in p if n not in names]
        if extra:
            raise ValueError(f"the sample has parameters the script does not tune: {extra}")
        keys.append(kt_key(lookup[n].get(compare.norm_value(p[n]), p[n]) for n in names))
    return keys


def make_sample_restriction(names, keep):
    """A restriction that is true exactly for the configurations in keep.

    Kernel Tuner 1.4 (searchspace.py) wraps a callable restriction in a
    python-constraint FunctionConstraint over all parameters and calls it
    positionally, in tune_params order, once all are bound; util.
    check_restriction calls it with keyword arguments. Both are handled. It
    is a plain function without a lambda in its source: convert_constraint_
    lambdas() would otherwise try to turn it into a string restriction.
    """
    names = tuple(names)

    def sample_restriction(*args, **kwargs):
        if kwargs:
            args = tuple(kwargs[n] for n in names)
        return kt_key(args) in keep

    return sample_restriction


# --------------------------------------------------------------------------
# The tune_kernel wrapper.
# --------------------------------------------------------------------------

class Terminated(BaseException):
    """SIGTERM (the suite's time limit) while tuning."""


class Restart(Exception):
    """Kernel Tuner aborted on a CUDA error that leaves the context unusable:
    the process exits with RESTART_STATUS and run.sh starts it again with
    --resume (the aborted configuration excluded, the cache kept)."""


RESTART_STATUS = 3

# CUDA errors after which a context cannot be used again.
STICKY_ERRORS = ("ILLEGAL_ADDRESS", "IllegalAddress", "LAUNCH_FAILED", "LaunchFailure", "MISALIGNED_ADDRESS",
                 "MisalignedAddress", "ILLEGAL_INSTRUCTION", "IllegalInstruction", "HARDWARE_STACK_ERROR",
                 "HardwareStackError", "ERROR_ASSERT", "cudaErrorAssert", "LAUNCH_TIMEOUT", "LaunchTimeout",
                 "INVALID_PC", "InvalidPc", "CUDA_ERROR_UNKNOWN", "cudaErrorUnknown")


class Run:
    def __init__(self, kernel, sample_path, cache_path, max_aborts, simulation_cache=None, previous=None):
        self.kernel = kernel
        self.sample_path = sample_path
        self.cache_path = cache_path
        self.max_aborts = max_aborts
        self.simulation_cache = simulation_cache
        self.names = None
        self.sample_names, self.sample = sample_params(sample_path)
        self.keep = set()
        self.sample_key_list = []
        previous = previous or {}
        self.calls = list(previous.get("calls") or [])
        self.aborted = dict(previous.get("aborted") or {})
        self.current = None
        self.searchspace = []
        self.script_options = {}
        self.results = None
        self.env = None

    def record_searchspace(self, ss, seconds):
        keys = {kt_key(c) for c in ss.list}
        self.searchspace.append({"size": ss.size, "build_s": seconds,
                                 "not_in_space": sorted(set(self.keep) - keys)})

    def wrapper(self, real_tune_kernel):
        run = self

        def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params, **kwargs):
            run.names = list(tune_params.keys())
            run.sample_key_list = sample_keys(run.sample, tune_params)
            run.keep = set(run.sample_key_list) - set(run.aborted)
            restrictions = kwargs.get("restrictions")
            if restrictions is None:
                restrictions = []
            elif not isinstance(restrictions, list):
                restrictions = [restrictions]
            kwargs["restrictions"] = list(restrictions) + [make_sample_restriction(run.names, run.keep)]
            kwargs["cache"] = run.cache_path
            run.script_options = describe_options(kernel_name, kernel_source, problem_size, arguments,
                                                  tune_params, kwargs, restrictions)
            while True:
                t0 = time.perf_counter()
                call = {"sample_kept": len(run.keep)}
                run.calls.append(call)
                try:
                    results, env = real_tune_kernel(kernel_name, kernel_source, problem_size, arguments,
                                                    tune_params, **kwargs)
                    call["wall_s"] = time.perf_counter() - t0
                    call["ok"] = True
                    run.results, run.env = results, env
                    return results, env
                except Exception as e:  # Kernel Tuner aborted the whole run
                    call["wall_s"] = time.perf_counter() - t0
                    call["ok"] = False
                    msg = f"{type(e).__name__}: {e}"
                    call["error"] = msg[:2000]
                    cur = run.current
                    call["config"] = cur
                    if cur is None or cur not in run.keep or len(run.aborted) >= run.max_aborts:
                        raise
                    run.aborted[cur] = msg[:2000]
                    run.keep.discard(cur)
                    run.current = None
                    if any(x in msg for x in STICKY_ERRORS):
                        print(f"kt_run: Kernel Tuner aborted on {cur} with a CUDA error that ends the context: "
                              f"{msg[:300]}; restarting the process", flush=True)
                        raise Restart(msg) from e
                    print(f"kt_run: Kernel Tuner aborted on {cur}: {msg[:300]}; dropping it and resuming from the cache",
                          flush=True)
                except BaseException:
                    call["wall_s"] = time.perf_counter() - t0
                    call["ok"] = False
                    call["error"] = "terminated"
                    call["config"] = run.current
                    raise

        tune_kernel.__wrapped__ = real_tune_kernel
        return tune_kernel


def describe_options(kernel_name, kernel_source, problem_size, arguments, tune_params, kwargs, restrictions):
    """What the script passed to tune_kernel, for the record (no arrays)."""
    def arg(a):
        shape = getattr(a, "shape", None)
        dtype = getattr(a, "dtype", None)
        if shape is not None and shape != ():
            return {"dtype": str(dtype), "shape": list(shape)}
        return {"dtype": str(dtype) if dtype is not None else type(a).__name__, "value": compare.norm_value(a.item() if hasattr(a, "item") else a)}

    keep = {}
    for k, v in kwargs.items():
        if k in ("restrictions", "cache"):
            continue
        if k == "cmem_args" and v:
            keep[k] = {n: arg(x) for n, x in v.items()}
        elif k == "metrics" and v:
            keep[k] = list(v.keys())
        elif k == "answer" and v is not None:
            keep[k] = [None if x is None else arg(x) for x in v]
        elif isinstance(v, (str, int, float, bool, type(None))) or (isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float)) for x in v)):
            keep[k] = v
        else:
            keep[k] = repr(v)[:200]
    src = kernel_source if isinstance(kernel_source, str) else repr(kernel_source)
    return {
        "kernel_name": kernel_name,
        "kernel_source": src if len(src) < 200 else f"<string of {len(src)} characters>",
        "problem_size": [int(x) for x in problem_size] if isinstance(problem_size, (list, tuple)) else problem_size,
        "arguments": [arg(a) for a in arguments],
        "tune_params": {k: [compare.norm_value(x) for x in v] for k, v in tune_params.items()},
        "restrictions": [r if isinstance(r, str) else repr(r) for r in restrictions],
        "options": keep,
    }


def patch_kernel_tuner(kt, run):
    """Record the configuration being compiled/benchmarked and the search
    space Kernel Tuner builds."""
    import kernel_tuner.core as core
    import kernel_tuner.interface as interface

    real_cab = core.DeviceInterface.compile_and_benchmark

    def compile_and_benchmark(self, kernel_source, gpu_args, params, kernel_options, to):
        run.current = kt_key(params[n] for n in to.tune_params.keys())
        result = real_cab(self, kernel_source, gpu_args, params, kernel_options, to)
        run.current = None
        return result

    core.DeviceInterface.compile_and_benchmark = compile_and_benchmark

    real_ss = interface.Searchspace

    def Searchspace(*args, **kwargs):
        t0 = time.perf_counter()
        ss = real_ss(*args, **kwargs)
        run.record_searchspace(ss, time.perf_counter() - t0)
        return ss

    interface.Searchspace = Searchspace
    kt.tune_kernel = run.wrapper(kt.tune_kernel)


def count_cache(path):
    try:
        c = compare.load_cache(path)
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"
    return c, None


def cmd_tune(a):
    t_start = time.perf_counter()
    out = {"tool": "kernel_tuner", "kernel_tuner_version": KT_VERSION, "kernel": a.kernel,
           "device_name_arg": DEVICE_NAME, "strategy": "brute_force", "seed": a.seed,
           "sample_file": os.path.abspath(a.sample), "cache_file": os.path.abspath(a.cache),
           "simulation_cache": a.simulation_cache, "timed_out": False, "error": None}

    def on_term(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    run = None
    previous = None
    if a.resume and os.path.exists(a.json):
        with open(a.json) as f:
            previous = json.load(f)
        out["processes"] = previous.get("processes", 1) + 1
        out["previous_process_wall_s"] = previous.get("process_wall_s", 0) + previous.get("previous_process_wall_s", 0)
    else:
        out["processes"] = 1
    try:
        kt = import_kernel_tuner(a.ext, a.backend)
        out["guards"] = dict(GUARDS)
        cache = os.path.abspath(a.cache)
        if os.path.exists(cache) and not (a.resume and previous is not None):
            os.remove(cache)
        if a.simulation_cache and not os.path.exists(cache):
            # Simulation mode reads every result from an existing cache.
            opener = gzip.open if a.simulation_cache.endswith(".gz") else open
            with opener(a.simulation_cache, "rb") as src, open(cache, "wb") as dst:
                shutil.copyfileobj(src, dst)
        run = Run(a.kernel, a.sample, cache, a.max_aborts, a.simulation_cache, previous)
        out["sample_size"] = len(run.sample)
        patch_kernel_tuner(kt, run)

        kernels_dir = os.path.abspath(a.kernels_dir)
        mod, script = load_script(kernels_dir, a.kernel)
        out["script"] = script
        os.chdir(os.path.join(kernels_dir, KERNELS[a.kernel]["cwd"]))
        # The scripts draw their inputs from numpy's global generator.
        import numpy as np
        np.random.seed(a.seed)
        random.seed(a.seed)
        opts = dict(device_name=DEVICE_NAME, strategy="brute_force", quiet=True,
                    simulation_mode=bool(a.simulation_cache), lang="CUDA")
        inputs = KERNELS[a.kernel]["inputs"]
        t0 = time.perf_counter()
        if inputs is not None:
            results, env = mod.tune(list(inputs), **opts)
        else:
            results, env = mod.tune(**opts)
        out["script_tune_wall_s"] = time.perf_counter() - t0
        out["device_name"] = env.get("device_name")
        out["env"] = {k: env[k] for k in ("execution_time", "total_framework_time", "total_strategy_time",
                                          "total_compile_time", "total_verification_time",
                                          "total_benchmark_time", "overhead_time", "simulated_time",
                                          "cuda_version", "compute_capability", "iterations",
                                          "compiler_options", "uuid") if k in env}
        out["results"] = len(results)
    except Terminated:
        out["timed_out"] = True
        out["error"] = "terminated by SIGTERM (the suite's time limit)"
    except Restart as e:
        out["restart"] = True
        out["error"] = f"restart after a CUDA error: {e}"[:4000]
    except BaseException as e:  # noqa: BLE001  (recorded, then re-raised below)
        out["error"] = f"{type(e).__name__}: {e}"[:4000]
        import traceback
        traceback.print_exc()
    finally:
        if run is not None:
            out["tune_kernel_wall_s"] = sum(c.get("wall_s", 0.0) for c in run.calls)
            out["calls"] = run.calls
            out["aborted"] = run.aborted
            out["searchspace"] = run.searchspace
            out["script_options"] = run.script_options
            out["tune_params_keys"] = run.names
            out["sample_keys"] = run.sample_key_list
            c, err = count_cache(os.path.abspath(a.cache))
            if c is not None:
                keys = set(c["cache"].keys())
                out["configurations"] = len(keys & set(run.sample_key_list)) + len(run.aborted)
                out["cache_entries"] = len(keys)
            else:
                out["cache_error"] = err
        out["process_wall_s"] = time.perf_counter() - t_start
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
            f.write("\n")
    if out["timed_out"]:
        return 124
    if out.get("restart"):
        return RESTART_STATUS
    return 0 if out["error"] is None else 1


# --------------------------------------------------------------------------
# Dedispersion inputs.
# --------------------------------------------------------------------------

RAW_FILES = {"input": "input_ref.u8", "shifts": "shifts_ref.f32", "reference": "dedisp_ref.f32"}


def cmd_prepare(a):
    t_start = time.perf_counter()
    out = {"kernel": "dedispersion", "seed": a.seed, "error": None}
    try:
        kt = import_kernel_tuner(a.ext, a.backend)
        out["guards"] = dict(GUARDS)
        import numpy as np
        kernels_dir = os.path.abspath(a.kernels_dir)
        d = os.path.join(kernels_dir, "dedisp_milo")
        mod, script = load_script(kernels_dir, "dedispersion")
        os.chdir(d)
        # As dedispersion_milo.py's create_reference() makes the inputs.
        np.random.seed(a.seed)
        t0 = time.perf_counter()
        input_samples = np.random.randn(mod.nr_samples_per_channel * mod.nr_channels).astype(np.uint8)
        output_arr = np.zeros(mod.nr_dms * mod.nr_samples, dtype=np.float32)
        shifts = mod.get_shifts()
        out["inputs_s"] = time.perf_counter() - t0
        out["shifts_dtype"] = str(shifts.dtype)
        if shifts.dtype != np.float32:
            raise TypeError(f"get_shifts() gave {shifts.dtype}, the kernel reads float")
        # The reference: the source's own naive kernel on the GPU, instead of
        # the C reference (2048 x 25000 x 1536 iterations of CPU time). Each
        # output is a sum of at most 1536 uint8 values, an integer below
        # 2^24, so float32 sums are exact in any order: the naive kernel and
        # every tuned configuration give the same bits when both are correct.
        # loop_unroll_factor_channel 0: Kernel Tuner then drops the source's
        # "#pragma unroll loop_unroll_factor_channel", as in the tuning runs
        # (the parameter is [0] there); without it the file does not compile.
        params = {"block_size_x": 128, "block_size_y": 4, "block_size_z": 1, "loop_unroll_factor_channel": 0}
        t0 = time.perf_counter()
        if a.reference == "gpu":
            res = kt.run_kernel("dedispersion_naive", "dedispersion.cu", (mod.nr_samples, mod.nr_dms, 1),
                                [input_samples, output_arr, shifts], params, lang="CUDA",
                                compiler_options=[f"-I{d}"], quiet=True)
            reference = np.asarray(res[1], dtype=np.float32)
            out["reference_params"] = params
        else:
            # Tests without a GPU: a zero reference (on a GPU every
            # configuration would fail verification).
            reference = output_arr
        out["reference"] = a.reference
        out["reference_s"] = time.perf_counter() - t0
        out["reference_max"] = float(reference.max())
        out["reference_sum"] = float(reference.astype(np.float64).sum())
        out["reference_integral"] = bool(np.all(reference == np.rint(reference)))
        out["reference_below_2_24"] = bool(reference.max() < 2 ** 24)
        out["cpu_spot_check"] = spot_check(mod, input_samples, shifts, reference, a.seed, np)
        t0 = time.perf_counter()
        np.save("input_ref", input_samples, allow_pickle=False)
        np.save("shifts_ref", shifts, allow_pickle=False)
        np.save("dedisp_ref", reference, allow_pickle=False)
        # Raw little-endian copies for gtune's BinaryRaw fill.
        input_samples.astype(np.uint8).tofile(RAW_FILES["input"])
        shifts.astype("<f4").tofile(RAW_FILES["shifts"])
        reference.astype("<f4").tofile(RAW_FILES["reference"])
        out["write_s"] = time.perf_counter() - t0
        out["files"] = {k: {"path": os.path.join(d, v), "bytes": os.path.getsize(v)} for k, v in RAW_FILES.items()}
        if not (out["reference_integral"] and out["reference_below_2_24"]):
            out["error"] = "the reference is not integer valued below 2^24: the exactness argument does not hold"
        elif out["cpu_spot_check"]["mismatches"]:
            print(f"kt_run prepare: WARNING: GPU reference differs from the C reference formula at "
                  f"{out['cpu_spot_check']['mismatches']} of {out['cpu_spot_check']['n']} sampled outputs", flush=True)
    except BaseException as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {e}"[:4000]
        import traceback
        traceback.print_exc()
    finally:
        out["process_wall_s"] = time.perf_counter() - t_start
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1, default=str)
                f.write("\n")
    return 0 if out["error"] is None else 1


def spot_check(mod, input_samples, shifts, reference, seed, np, n=256):
    """Recompute n outputs on the CPU with dedispersion.cc's formula (float32
    shift, truncated to unsigned int, integer sum) and count mismatches."""
    rng = np.random.default_rng(seed)
    dms = rng.integers(0, mod.nr_dms, n)
    samples = rng.integers(0, mod.nr_samples, n)
    f32 = np.float32
    ch = np.arange(mod.nr_channels)
    bad = []
    for dm, s in zip(dms, samples):
        delay = f32(f32(mod.dm_first) + f32(dm) * f32(mod.dm_step))
        shift = (delay * shifts).astype(np.float32).astype(np.uint32)
        v = int(input_samples[ch * mod.nr_samples_per_channel + s + shift].astype(np.int64).sum())
        got = reference[dm * mod.nr_samples + s]
        if got != v:
            bad.append({"dm": int(dm), "sample": int(s), "cpu": v, "gpu": float(got)})
    return {"n": n, "mismatches": len(bad), "first": bad[:5]}


# --------------------------------------------------------------------------

def default_ext():
    return os.environ.get("CONFORMANCE_EXT") or os.path.join(os.path.dirname(os.path.dirname(HERE)), ".ext")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ext", default=default_ext(), help="folder with kernel_tuner/ and py/ (default: <repo>/.ext or $CONFORMANCE_EXT)")
    p.add_argument("--backend", choices=("cupy", "auto"), default=os.environ.get("KT_BACKEND", "cupy"),
                   help="Kernel Tuner's CUDA backend for lang CUDA: cupy (default) or Kernel Tuner's own choice")
    sub = p.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("tune", help="tune one kernel on the sample")
    t.add_argument("--kernel", required=True, choices=sorted(KERNELS))
    t.add_argument("--kernels-dir", required=True, help="benchmark_hub's kernels/ folder (a writable copy)")
    t.add_argument("--sample", required=True, help="Kernel Tuner-format cache whose keys are the sample (gtune export)")
    t.add_argument("--cache", required=True, help="Kernel Tuner's cache file to write (replaced)")
    t.add_argument("--json", required=True, help="run record to write")
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--max-aborts", type=int, default=20)
    t.add_argument("--resume", action="store_true",
                   help="continue an earlier process of this run (exit status 3): keep the cache and the record")
    t.add_argument("--simulation-cache", help="run Kernel Tuner in simulation mode on this cache (tests without a GPU)")

    r = sub.add_parser("prepare", help="create the dedispersion input and reference files")
    r.add_argument("--kernels-dir", required=True)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--json", help="record to write")
    r.add_argument("--reference", choices=("gpu", "zeros"), default="gpu",
                   help="gpu: run_kernel of dedispersion_naive (default); zeros: tests without a GPU")

    a = p.parse_args(argv)
    return cmd_tune(a) if a.cmd == "tune" else cmd_prepare(a)


if __name__ == "__main__":
    sys.exit(main())
