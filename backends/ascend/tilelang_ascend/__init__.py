"""tilelang-ascend: the TileLang-X backend for Huawei Ascend NPUs.

Installing this package is all it takes: its entry point registers the `ascend` target kind with
tilelang-core, and `target="auto"` finds the device.
"""

__version__ = "0.1.0"
