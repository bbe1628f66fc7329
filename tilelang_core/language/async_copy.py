"""TileLang's own async-copy groups, ``T.ptx_commit_group()`` and ``T.ptx_wait_group(n)``, as its
kernels use them around copies they load ahead (its minference example prefetches the next K/V
tile with ``T.Parallel(..., prefer_async=True)`` and waits with ``T.ptx_wait_group(1)``)::

    for i, j in T.Parallel(64, 64, prefer_async=True):
        K_s[stage, i, j] = K[row[i], j]
    T.ptx_commit_group()
    ...
    T.ptx_wait_group(0)          # this thread's copies so far have landed

A ``T.Parallel`` loop's stores are performed as written (``prefer_async`` is a hint TileLang-X
does not take: they complete before the next statement), so the waits never find a copy of them
in flight; they still wait for any async copy the thread issued (cp.async where the backend has it)
and are dropped where it has none. Inside a ``T.Pipelined`` loop, whose async groups the software
pipeline counts, they are refused.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from .kernel import current_kernel


def ptx_commit_group():
    """Close this thread's group of async copies issued since the last commit."""
    current_kernel("T.ptx_commit_group")
    B.evaluate(I.call("cp_async_commit", "void"))


def ptx_wait_group(num):
    """Wait until at most ``num`` of this thread's committed groups are still in flight."""
    current_kernel("T.ptx_wait_group")
    value = num.value if isinstance(num, tirx.IntImm) else num
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FrontendError(f"T.ptx_wait_group needs a constant count of groups (0 or more), got {num!r}")
    B.evaluate(I.call("cp_async_wait", "void", tirx.const(value, "int32")))


__all__ = ["ptx_commit_group", "ptx_wait_group"]
