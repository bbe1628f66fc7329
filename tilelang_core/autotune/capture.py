"""``set_autotune_inputs``: tune on given tensors instead of random ones (TileLang's API).

    with set_autotune_inputs(q, k, v, cu_seqlens, max_seqlen):      # or one list of them
        kernel = tuned_attention(batch, heads, dim)                  # the search uses q, k, v, ...

The inputs are the kernel's inputs in parameter order (scalars included), as its call takes them.
Kernels whose inputs random data cannot stand in for (indices, offsets, scalars) need this. The
innermost ``with`` wins; each thread has its own stack, and a search reads it when it starts.
"""

from __future__ import annotations

import threading
from typing import Any

_local = threading.local()


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class AutotuneInputsCapture:
    """The context manager ``set_autotune_inputs`` returns."""

    __slots__ = ("tensors",)

    def __init__(self, tensors: list[Any]):
        self.tensors = tensors

    def __enter__(self) -> None:
        _stack().append(self)

    def __exit__(self, exc_type, exc, tb) -> None:
        _stack().pop()


def set_autotune_inputs(*args) -> AutotuneInputsCapture:
    """Inputs for the searches started inside the ``with`` block: ``set_autotune_inputs(a, b)`` or
    ``set_autotune_inputs([a, b])``."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return AutotuneInputsCapture(list(args[0]))
    return AutotuneInputsCapture(list(args))


def get_autotune_inputs() -> list[Any] | None:
    """The innermost ``set_autotune_inputs`` of this thread, or None outside any."""
    stack = _stack()
    return stack[-1].tensors if stack else None


__all__ = ["AutotuneInputsCapture", "get_autotune_inputs", "set_autotune_inputs"]
