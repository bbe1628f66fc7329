"""TileLang's ``tilelang.utils.target`` (its releases up to mid 2026; DeepSeek's TileKernels import
``determine_target`` from here): the target a kernel compiles for.

    from tilelang_core.utils.target import determine_target
    determine_target()                      # "cuda:sm_90a" on an H200, "cpu" without a GPU
"""

from __future__ import annotations


def determine_target(target="auto", return_object: bool = False):
    """``target`` resolved as ``T.compile`` resolves it (``"auto"``: the active ``with Target``,
    ``TILELANG_TARGET``, else the best device present); a :class:`~tilelang_core.Target` with
    ``return_object=True``, else its name."""
    from ..target import resolve_target

    resolved = resolve_target(target)
    return resolved if return_object else str(resolved)


__all__ = ["determine_target"]
