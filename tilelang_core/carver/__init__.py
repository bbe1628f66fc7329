"""``tilelang.carver``: TileLang's device descriptions (``carver.arch``).

Only the device queries that kernels use to size their grids are provided
(``carver.arch.driver.get_num_sms()``, ``carver.arch.CUDA(...)``); TileLang's roller-based
config search (``carver.template``, ``carver.roller``) is not: tune with ``tilelang.autotune``.
"""

from . import arch

__all__ = ["arch"]


def __getattr__(name: str):
    if name in ("template", "roller", "matmul_analysis"):
        from ..errors import TileLangError

        raise TileLangError(f"tilelang.carver.{name} (TileLang's roller config search) is not part of "
                            "TileLang-X; search configs with @tilelang.autotune(configs=...) instead")
    raise AttributeError(f"module 'tilelang_core.carver' has no attribute {name!r}")
