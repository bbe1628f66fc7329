"""tilelang-hip: the TileLang-X backend for AMD GPUs (HIP).

Installing this package is all it takes: its entry point registers the `hip` target kind with
tilelang-core, and `target="auto"` finds the device.
"""

__version__ = "0.1.0"
