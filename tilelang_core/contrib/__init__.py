"""``tilelang.contrib``: toolchain queries TileLang scripts make (``contrib.nvcc``)."""

__all__ = ["nvcc"]


def __getattr__(name: str):
    if name == "nvcc":
        import importlib

        return importlib.import_module(".nvcc", __name__)
    raise AttributeError(f"module 'tilelang_core.contrib' has no attribute {name!r}")
