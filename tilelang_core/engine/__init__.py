"""``tilelang.engine``: TileLang's lowering entry points. ``lower`` is here; the source
post-processing callbacks are in :mod:`.callback`."""

from ..jit.compiler import lower

__all__ = ["lower"]
