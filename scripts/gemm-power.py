#!/usr/bin/env python3
"""cuBLAS GEMM or an elementwise a·x + y (through CuPy) on one GPU: time,
FLOP rate and board power.

A reference point for the power model fitted by `gtune probe --power`
(model.FitPowerModel): a kernel whose power the model must predict from
its activity, which `ncu` measures on one launch (--once).

    python3 scripts/gemm-power.py [--op gemm|axpy] [--dtype float32|float64] [--n N] [--seconds S]
    ncu --clock-control none --metrics ... python3 scripts/gemm-power.py --once

Power: NVML's total-energy counter (read-only) over S seconds of
back-to-back GEMMs after a 2 s warm-up, divided by the wall time; time per
GEMM from CUDA events over the same launches. Nothing on the GPU is set.
"""
import argparse
import json
import time

import cupy as cp
import pynvml


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", default="gemm", choices=["gemm", "axpy"])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--once", action="store_true", help="one GEMM after one warm-up (for ncu)")
    a = ap.parse_args()
    cp.cuda.Device(a.device).use()
    rng = cp.random.default_rng(1)
    shape = (a.n, a.n) if a.op == "gemm" else (a.n,)
    x = rng.standard_normal(shape, dtype=cp.float64).astype(a.dtype)
    y = rng.standard_normal(shape, dtype=cp.float64).astype(a.dtype)
    out = cp.empty_like(x)
    axpy = cp.ElementwiseKernel("T x, T y", "T z", "z = (T)1.0001 * x + y", "gemm_power_axpy")

    def step():
        if a.op == "gemm":
            cp.matmul(x, y, out=out)
        else:
            axpy(x, y, out)

    step()
    cp.cuda.Device().synchronize()
    if a.once:
        step()
        cp.cuda.Device().synchronize()
        return
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(a.device)
    t0 = time.time()
    while time.time() - t0 < 2:
        step()
        cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
    w0 = time.time()
    start.record()
    n = 0
    while time.time() - w0 < a.seconds:
        for _ in range(10):
            step()
        n += 10
        stop.record()
        stop.synchronize()
    w1 = time.time()
    e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
    ms = cp.cuda.get_elapsed_time(start, stop) / n
    flops = 2.0 * a.n ** 3 if a.op == "gemm" else 2.0 * a.n
    print(json.dumps({
        "op": a.op, "dtype": a.dtype, "n": a.n, "gemms": n, "ms": ms, "gflops": flops / (ms / 1e3) / 1e9,
        "power_w": (e1 - e0) / 1e3 / (w1 - w0), "wall_s": w1 - w0,
        "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        "uuid": pynvml.nvmlDeviceGetUUID(h),
    }))


if __name__ == "__main__":
    main()
