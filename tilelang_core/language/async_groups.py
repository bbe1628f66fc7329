"""TileLang's hand-written async copies: ``T.ptx_cp_async`` of ``T.access_ptr`` pointers, the groups
``T.ptx_commit_group()`` / ``T.ptx_wait_group(n)``, and ``T.cp_async_barrier_noinc`` (language/
barriers.py), as its kernels use them to load ahead (its minference example prefetches the next
K/V tile with ``T.Parallel(..., prefer_async=True)`` and waits with ``T.ptx_wait_group(1)``; its
sparse MLA producer warpgroup gathers KV rows with ``T.ptx_cp_async`` and arrives when they land)::

    for i, j in T.Parallel(64, 64, prefer_async=True):
        K_s[stage, i, j] = K[row[i], j]
    T.ptx_commit_group()
    ...
    T.ptx_wait_group(0)          # this thread's copies so far have landed

    T.ptx_cp_async(T.access_ptr(KV_s[stage, r, c], "w", 8), T.access_ptr(KV[b, row, c], "r", 8), 8)
    T.cp_async_barrier_noinc(kv_ready[stage])   # an arrival once this thread's copies landed

A ``T.Parallel`` loop's stores are performed as written (``prefer_async`` is a hint TileLang-X
does not take: they complete before the next statement), and so is ``T.ptx_cp_async``: one
aligned vector copy of 4, 8 or 16 bytes (language/vector_access.py: its alignment is proved or
refused), zeros where ``predicate`` is false, as cp.async's. Landing earlier than cp.async would
is what every wait allows, so the waits never find these copies in flight; they still wait for
any async copy the thread issued (cp.async where the backend has it) and are dropped where it has
none. Inside a ``T.Pipelined`` loop, whose async groups the software pipeline counts, they are
refused. (A performance gap, not a meaning one: TileLang overlaps these loads.) As in TileLang,
two ``T.ptx_cp_async`` writes are never ordered against each other by an inserted barrier (a
producer's gathers under ``if is_kv_valid[...]`` need none between them).
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from ..ir.async_writes import ASYNC_WRITE
from .kernel import current_kernel
from .vector_access import _GLOBAL, _SHARED, _load, _store, start_of


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


def access_ptr(base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim: int = 0):
    """The address of ``base`` (an element ``A[i, j]``, a region's first element, a buffer's
    start) plus ``offset`` elements along the last dimension. ``access_type`` and the extents
    say what the pointer is for (TileLang's checks); the ops that take the pointer say how much
    they move."""
    current_kernel("T.access_ptr")
    if access_type not in ("r", "w", "rw", 1, 2, 3):
        raise FrontendError(f"T.access_ptr access_type must be 'r', 'w' or 'rw' (or 1, 2, 3), got {access_type!r}")
    if ignore_last_ndim:
        raise FrontendError("T.access_ptr(ignore_last_ndim=...) is not supported")
    del extents, extent
    start = start_of(base)
    if start is None:
        raise FrontendError(f"T.access_ptr takes a buffer, a region or an element, got {base!r}")
    buffer, indices = start
    if not (isinstance(offset, int) and offset == 0):
        indices = indices[:-1] + [indices[-1] + offset]
    return tirx.address_of(tirx.BufferLoad(buffer, indices))


def _pointee(ptr, what: str):
    if isinstance(ptr, tirx.Call) and ptr.op.name == "tirx.address_of" and isinstance(ptr.args[0], tvm.ir.TensorLoad):
        return ptr.args[0]
    if isinstance(ptr, (tvm.ir.TensorLoad, tvm.ir.TensorRegion)) or tirx.is_buffer_var(ptr):
        return ptr
    raise FrontendError(f"T.ptx_cp_async {what} must be a T.access_ptr (or an element), got {ptr!r}")


def ptx_cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate=None):
    """Copy ``num_elems`` elements (4, 8 or 16 bytes) from global memory to shared memory, zeros
    where ``predicate`` is false (module docstring: performed as one vector copy)."""
    current_kernel("T.ptx_cp_async")
    dst, src = _pointee(dst_access_ptr, "destination"), _pointee(src_access_ptr, "source")
    n = num_elems.value if isinstance(num_elems, tirx.IntImm) else num_elems
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise FrontendError(f"T.ptx_cp_async num_elems must be a positive constant, got {num_elems!r}")
    dst_buffer = dst.source if not tirx.is_buffer_var(dst) else dst
    src_buffer = src.source if not tirx.is_buffer_var(src) else src
    bits = [tvm.runtime.DataType(str(b.ty.dtype)).bits for b in (dst_buffer, src_buffer)]
    if bits[0] != bits[1]:
        raise FrontendError(f"T.ptx_cp_async copies bytes between elements of one size: '{dst_buffer.name}' "
                            f"is {dst_buffer.ty.dtype}, '{src_buffer.name}' {src_buffer.ty.dtype}")
    nbytes = n * bits[0] // 8
    if nbytes not in (4, 8, 16):
        raise FrontendError(f"T.ptx_cp_async moves 4, 8 or 16 bytes (cp.async's sizes); {n} x {dst_buffer.ty.dtype} "
                            f"is {nbytes}")
    value = _load("ptx_cp_async", nbytes, _GLOBAL, "global")(src, pred=predicate)
    # marked as an async copy's write: two of them never need a barrier between them (TileLang's
    # rule, simt/transform/shared_races.py); what reads them still does
    with B.attr(tirx.const(0, "int32"), ASYNC_WRITE, tirx.const(1, "int32")):
        _store("ptx_cp_async", nbytes, _SHARED, "shared")(dst, value)


__all__ = ["access_ptr", "ptx_commit_group", "ptx_cp_async", "ptx_wait_group"]
