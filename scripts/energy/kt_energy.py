#!/usr/bin/env python3
"""Kernel Tuner 1.4's energy measurement of gtune's vector_add example, for
the run-to-run repeatability comparison (scripts/energy/repeat.sh).

Kernel Tuner's NVMLObserver("nvml_energy") runs each configuration back to
back for continuous_duration (1 s) after the timed iterations and reports
energy per launch = the median of NVML's polled power readings (on Hopper
nvmlDeviceGetPowerUsage is a 1 s average) x the mean kernel time.

Usage: kt_energy.py KERNEL.cu CONFIGS.json OUT.json
CONFIGS.json: [[block_size_x, work_per_thread], ...] as gtune chose them.
"""
import json
import os
import sys
import time

# The conformance suite's guards: NVML setters refused, nvidia-smi
# read-only, stand-ins for what Kernel Tuner imports but this never uses.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "conformance"))
import kt_run  # noqa: E402


def main():
    kernel_path, configs_path, out_path = sys.argv[1:4]
    kernel_tuner = kt_run.import_kernel_tuner(os.path.join(ROOT, ".ext"))
    import numpy as np
    from kernel_tuner.observers.nvml import NVMLObserver

    configs = [tuple(c) for c in json.load(open(configs_path))]
    n = np.int32(268435456)
    a = np.random.rand(n).astype(np.float32)
    b = np.random.rand(n).astype(np.float32)
    c = np.zeros_like(a)
    observer = NVMLObserver(["nvml_energy", "nvml_power", "temperature", "core_freq"], device=0)
    t0 = time.perf_counter()
    # One tune_kernel call per configuration, in gtune's order: Kernel
    # Tuner turns a restriction function into source text and loses its
    # closure, so a sample cannot be passed as a restriction here.
    results = []
    source = open(kernel_path).read()
    for bs, wpt in configs:
        res, _ = kernel_tuner.tune_kernel(
            "vector_add", source, int(n), [c, a, b, n], {"block_size_x": [bs], "work_per_thread": [wpt]},
            grid_div_x=["block_size_x", "work_per_thread"],
            observers=[observer], iterations=7, lang="CUDA", quiet=True, verbose=False)
        results.extend(res)
    wall = time.perf_counter() - t0
    out = []
    for r in results:
        out.append({k: r.get(k) for k in ("block_size_x", "work_per_thread", "time", "nvml_energy", "nvml_power",
                                          "temperature", "core_freq", "benchmark_time", "compile_time")})
    json.dump({"wall_s": wall, "results": out}, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
