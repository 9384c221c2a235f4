"""Profiling toolkit: timing, achieved rates, roofline, kernel tables, GPU monitors.

- :func:`bench` (``timing``): device events / wall clock, warm-up, median and spread, rotated inputs;
- ``ops``: a device copy and GEMMs in FP32/TF32/BF16/FP16/FP8 with their bytes and FLOPs counted;
- ``roofline``: :func:`measure_ceilings` (measured once per device, cached) and :class:`Roofline`;
- ``trace``: :func:`profile_kernels` (torch.profiler -> kernel table), :func:`run_under_rocprof`;
- ``monitor``: :class:`Monitor` over amdsmi, nvidia-ml-py or psutil, sampling in the background.
"""

from rocmlab.profile.monitor import Monitor, MonitorUnavailable, open_source
from rocmlab.profile.roofline import Ceilings, Roofline, measure_ceilings
from rocmlab.profile.timing import BenchError, BenchResult, bench, rotation_count
from rocmlab.profile.traces import (
                                   KernelProfile,
                                   ProfileError,
                                   kernel_table,
                                   profile_kernels,
                                   read_chrome_trace,
                                   rocprof_tool,
                                   run_under_rocprof,
)

__all__ = ["BenchError", "BenchResult", "Ceilings", "KernelProfile", "Monitor", "MonitorUnavailable",
           "ProfileError", "Roofline", "bench", "kernel_table", "measure_ceilings", "open_source",
           "profile_kernels", "read_chrome_trace", "rocprof_tool", "rotation_count", "run_under_rocprof"]
