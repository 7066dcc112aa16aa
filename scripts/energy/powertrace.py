#!/usr/bin/env python3
"""Power and energy-counter time series of vector_add loads, to find where
run-to-run energy differences come from (a diagnostic for the energy
protocol; gtune itself does not need it).

For each of the configurations (block_size_x, work_per_thread), in CYCLES
passes: SECONDS of back-to-back launches (about 30 ms of work kept
queued, as gtune's load does), then GAP seconds idle. Throughout it polls
NVML's energy counter every ~2 ms (recording each change with the
CPU time it was seen), the 1 s averaged power (nvmlDeviceGetPowerUsage),
temperature and SM clock every 50 ms, and reads the 20 ms power-sample
buffer. Reads only; never changes a setting.

Usage: powertrace.py KERNEL.cu OUT.json [CYCLES] [SECONDS] [GAP] [CONFIGS.json]
"""
import json
import sys
import time

import cupy as cp
import pynvml


def main():
    kernel_path, out_path = sys.argv[1:3]
    cycles = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    gap = float(sys.argv[5]) if len(sys.argv) > 5 else 0.5
    configs = json.load(open(sys.argv[6])) if len(sys.argv) > 6 else [[192, 2], [320, 2], [960, 2], [928, 1], [704, 2]]
    src = open(kernel_path).read()
    n = 1 << 28
    a = cp.random.rand(n, dtype=cp.float32)
    b = cp.random.rand(n, dtype=cp.float32)
    c = cp.zeros(n, dtype=cp.float32)
    kernels = {}
    for bs, wpt in configs:
        mod = cp.RawModule(code=src, options=(f"-Dblock_size_x={bs}", f"-Dwork_per_thread={wpt}"))
        kernels[(bs, wpt)] = mod.get_function("vector_add")
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    t_origin = time.perf_counter()
    wall_origin = time.time()
    energy, slow, loads, buf = [], [], [], []
    last_e = None
    last_sample_us = int(wall_origin * 1e6)
    last_read = [0.0]

    def read_samples():
        nonlocal last_sample_us
        try:
            _, samples = pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_TOTAL_POWER_SAMPLES, last_sample_us)
        except pynvml.NVMLError:
            return
        for s in samples:
            if s.timeStamp > last_sample_us:
                buf.append(((s.timeStamp / 1e6) - wall_origin, s.sampleValue.uiVal))
                last_sample_us = s.timeStamp

    def poll(force_slow=False, _t=[0.0]):
        nonlocal last_e
        now = time.perf_counter() - t_origin
        if now - last_read[0] >= 1.0:  # the buffer holds about 2.4 s
            last_read[0] = now
            read_samples()
        e = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        if e != last_e:
            energy.append((now, e))
            last_e = e
        if force_slow or now - _t[0] >= 0.05:
            _t[0] = now
            slow.append((now, pynvml.nvmlDeviceGetPowerUsage(h), pynvml.nvmlDeviceGetTemperature(h, 0),
                         pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)))

    for cyc in range(cycles):
        for bs, wpt in configs:
            k = kernels[(bs, wpt)]
            grid = ((n + bs * wpt - 1) // (bs * wpt),)
            start = time.perf_counter() - t_origin
            evs = []
            launches = 0
            s_ev, e_ev = cp.cuda.Event(), cp.cuda.Event()
            s_ev.record()
            while time.perf_counter() - t_origin - start < seconds:
                for _ in range(5):
                    k(grid, (bs,), (c, a, b, cp.int32(n)))
                launches += 5
                ev = cp.cuda.Event()
                ev.record()
                evs.append(ev)
                while len(evs) > 5:  # about 5 batches (~28 ms) queued
                    while not evs[0].done:
                        poll()
                        time.sleep(0.001)
                    evs.pop(0)
                poll()
            e_ev.record()
            e_ev.synchronize()
            end = time.perf_counter() - t_origin
            gpu_ms = cp.cuda.get_elapsed_time(s_ev, e_ev)
            loads.append({"cycle": cyc, "config": [bs, wpt], "start": start, "end": end, "launches": launches, "gpu_ms": gpu_ms})
            g0 = time.perf_counter()
            while time.perf_counter() - g0 < gap:
                poll()
                time.sleep(0.002)
    read_samples()
    # Sample times are wall-clock; the offset to perf_counter time is the
    # same t_origin/wall_origin pair taken together at the start.
    json.dump({"energy": energy, "slow": slow, "loads": loads, "samples": buf}, open(out_path, "w"))
    pynvml.nvmlShutdown()


if __name__ == "__main__":
    main()
