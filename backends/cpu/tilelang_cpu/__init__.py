"""tilelang-cpu: the TileLang-X backend for the host CPU: reference backend.

Installing this package is all it takes: its entry point registers the `cpu` target kind with
tilelang-core, and `target="auto"` finds the device.
"""

__version__ = "0.1.0"
