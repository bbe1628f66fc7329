"""tilelang-cuda: the TileLang-X backend for NVIDIA GPUs.

Installing this package is all it takes: its entry point registers the `cuda` target kind with
tilelang-core, and `target="auto"` finds the device.
"""

__version__ = "0.1.0"
