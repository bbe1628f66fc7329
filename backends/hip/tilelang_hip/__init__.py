"""tilelang-hip: the TileLang-X backend for AMD GPUs (HIP).

Installing this package is all it takes: its entry point registers the `hip` target kind with
tilelang-core, and `target="auto"` finds the device. How it compiles and what is verified how:
backends/hip/README.md (pipeline.py for the stages).
"""

__version__ = "0.1.0"
