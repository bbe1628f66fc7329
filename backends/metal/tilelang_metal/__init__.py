"""tilelang-metal: the TileLang-X backend for Apple GPUs (Metal).

Installing this package is all it takes: its entry point registers the `metal` target kind with
tilelang-core, and `target="auto"` finds the device.
"""

__version__ = "0.1.0"
