"""A stand-in GPU backend for testing kt_run.py without a GPU.

select() is installed as kt_run.BACKEND_OVERRIDE: Kernel Tuner's real
SequentialRunner, DeviceInterface, kernel-string preparation, argument
checks, verification, cache writing and the tuning scripts all run; only
compiling and launching are faked. Times are a deterministic function of the
configuration key (the tune_params values joined by commas).

Environment:
  FAKEGPU_COMPILE_ERROR="k1;k2"  compile raises a non-skippable error (Kernel
                                 Tuner aborts its run on it)
  FAKEGPU_STICKY="k1;k2"         the launch raises a CUDA error that ends a
                                 context (kt_run restarts the process)
  FAKEGPU_LOG=FILE               append one line per compile: key, threads, grid
  FAKEGPU_SLEEP=SECONDS          sleep this long in every launch
"""

import os
import time
import zlib


def time_of(key):
    """Milliseconds for a configuration key, deterministic."""
    return 1.0 + (zlib.crc32(key.encode()) % 1000) / 100.0


def select():
    import numpy as np
    from kernel_tuner.backends.backend import GPUBackend
    from kernel_tuner.observers.observer import BenchmarkObserver

    compile_error = set(filter(None, os.environ.get("FAKEGPU_COMPILE_ERROR", "").split(";")))
    sticky = set(filter(None, os.environ.get("FAKEGPU_STICKY", "").split(";")))
    log = os.environ.get("FAKEGPU_LOG")
    sleep = float(os.environ.get("FAKEGPU_SLEEP", "0"))

    class FakeTimeObserver(BenchmarkObserver):
        def __init__(self, dev):
            self.dev = dev
            self.times = []

        def after_finish(self):
            self.times.append(time_of(self.dev.last_key))

        def get_results(self):
            r = {"time": float(np.average(self.times)), "times": list(self.times)}
            self.times = []
            return r

    class FakeGPU(GPUBackend):
        units = {"time": "ms"}

        def __init__(self, device=0, iterations=7, compiler_options=None, observers=None):
            self.name = "Fake GPU"
            self.max_threads = 1024
            self.iterations = iterations
            self.compiler_options = compiler_options
            self.env = {"device_name": self.name, "iterations": iterations, "compiler_options": compiler_options}
            self.last_key = None
            self.observers = list(observers or []) + [FakeTimeObserver(self)]
            for obs in self.observers:
                obs.register_device(self)

        def ready_argument_list(self, arguments):
            return [a.copy() if isinstance(a, np.ndarray) else a for a in arguments]

        def compile(self, instance):
            key = ",".join(str(v) for v in instance.params.values())
            assert "#define kernel_tuner 1" in instance.kernel_string
            if log:
                with open(log, "a") as f:
                    f.write(f"{key} threads={tuple(instance.threads)} grid={tuple(instance.grid)}\n")
            if key in compile_error:
                raise RuntimeError(f"fake compile error for {key}")
            return key

        def run_kernel(self, func, gpu_args, threads, grid, stream=None):
            if func in sticky:
                raise RuntimeError(f"CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered ({func})")
            self.last_key = func
            if sleep:
                time.sleep(sleep)

        def start_event(self):
            pass

        def stop_event(self):
            pass

        def kernel_finished(self):
            return True

        def synchronize(self):
            pass

        def memset(self, allocation, value, size):
            allocation[:] = value

        def memcpy_dtoh(self, dest, src):
            np.copyto(dest, src)

        def memcpy_htod(self, dest, src):
            np.copyto(dest, src)

        def copy_constant_memory_args(self, cmem_args):
            pass

        def copy_shared_memory_args(self, smem_args):
            pass

        def copy_texture_memory_args(self, texmem_args):
            pass

    return FakeGPU


select.__name__ = "fakegpu.select"
