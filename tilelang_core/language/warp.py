"""Warp-level intrinsics: TileLang's votes, ballots, shuffles, warp reductions, lane and warp
queries, and the bit scans that go with ballot masks.

Each returns an expression (a ``tl.intrin.*`` call, tilelang_core/ir/intrinsics.py) that every
backend lowers its own way: CUDA to ``__ballot_sync``/``__shfl_sync``/..., HIP to the wave's
ballot and ``ds_bpermute``, Metal to ``simd_ballot``/``simd_shuffle``; the cpu backend, which runs
a block's threads one after another, refuses the collective ones. Names, arguments and result
types are TileLang's (``T.ballot_sync`` -> uint64, ``T.any_sync`` -> int32,
``T.match_any_sync`` -> uint32, ...). Lane masks are 32-bit, as on CUDA.

Collective ops (votes, shuffles, warp reductions, ``T.sync_warp``, ``T.shuffle_elect``) must be
executed by every lane the mask names (the whole warp by default) together, outside
``T.Parallel`` loops; ``T.syncthreads_*`` by every thread of the block.

Example::

    with T.Kernel(1, threads=32):
        tx = T.get_thread_binding()
        first = T.__ffs(T.ballot_sync(X[tx] > 0)) - 1   # lowest lane with a positive value
        total = T.warp_reduce_sum(X[tx])                # the warp's sum, in every lane
        left = T.shfl_up(X[tx], 1)                      # lane l - 1's value (lane 0 keeps its own)
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..ir import intrinsics as I
from .kernel import current_kernel

_INT_CODES = ("int", "uint")


def _convert(value):
    if isinstance(value, tvm.tirx.script.builder.scalar_wrapper):
        return value.scalar
    if isinstance(value, bool):
        return tirx.const(value, "bool")
    if isinstance(value, (int, float)):
        return tirx.convert(value)
    return value


def _dtype(value) -> str:
    return str(value.ty) if isinstance(value, tvm.ir.Expr) and tvm.ir.is_prim_expr(value) else ""


def _is_int(dtype: str) -> bool:
    return dtype.startswith(_INT_CODES) and "x" not in dtype


def _predicate(predicate, name: str):
    """An integer or boolean predicate as a bool expression; floats are refused (TileLang: a
    float would be truncated, so 0.5 would vote false)."""
    value = _convert(predicate)
    dtype = _dtype(value)
    if dtype == "bool":
        return value
    if _is_int(dtype):
        return tirx.NE(value, tirx.const(0, dtype))
    raise TypeError(f"T.{name} requires an integer or boolean predicate, but got "
                    f"{dtype or type(predicate).__name__}.")


def _mask(mask, name: str):
    """A lane mask as uint32 (Python ints print as 0xFFFFFFFFu, not a widened int64)."""
    if isinstance(mask, bool):
        raise TypeError(f"T.{name}: the lane mask must be an integer, got {mask!r}")
    if isinstance(mask, int):
        if not -(1 << 31) <= mask < (1 << 32):
            raise ValueError(f"T.{name}: lane mask {mask:#x} does not fit in 32 bits")
        return tirx.const(mask & 0xFFFFFFFF, "uint32")
    value = _convert(mask)
    dtype = _dtype(value)
    if not _is_int(dtype):
        raise TypeError(f"T.{name}: the lane mask must be a 32-bit integer, got {dtype or type(mask).__name__}")
    return value if dtype == "uint32" else tirx.Cast("uint32", value)


def _int_operand(value, name: str, what: str, dtype: str = "int32"):
    value = _convert(value)
    got = _dtype(value)
    if not _is_int(got) and got != "bool":
        raise TypeError(f"T.{name}: {what} must be an integer, got {got or type(value).__name__}")
    return value if got == dtype else tirx.Cast(dtype, value)


def _scalar(value, name: str):
    value = _convert(value)
    dtype = _dtype(value)
    if not dtype or "x" in dtype or dtype == "handle":
        raise TypeError(f"T.{name} takes a scalar value, got {dtype or type(value).__name__}")
    return value, dtype


def _linear_thread_index(name: str):
    """``tx + ty * X + tz * X * Y`` of the enclosing kernel (its one thread launch, kernel.py):
    warps are cut from it."""
    return current_kernel(f"T.{name}").thread_id


# -- votes and ballots --------------------------------------------------------------------------
def any_sync(predicate, mask=I.FULL_MASK):
    """Non-zero (int32) if the predicate is non-zero on any active lane of ``mask``
    (``__any_sync`` on CUDA)."""
    pred = _predicate(predicate, "any_sync")
    return I.call("any_sync", "int32", _mask(mask, "any_sync"), pred)


def all_sync(predicate, mask=I.FULL_MASK):
    """Non-zero (int32) if the predicate is non-zero on every active lane of ``mask``
    (``__all_sync`` on CUDA)."""
    pred = _predicate(predicate, "all_sync")
    return I.call("all_sync", "int32", _mask(mask, "all_sync"), pred)


def ballot_sync(predicate, mask=I.FULL_MASK):
    """A uint64 with bit ``l`` set if lane ``l`` is in ``mask``, active, and its predicate is
    non-zero (``__ballot_sync``; on a 64-lane AMD wave with the full mask, all 64 lanes)."""
    pred = _predicate(predicate, "ballot_sync")
    return I.call("ballot_sync", "uint64", _mask(mask, "ballot_sync"), pred)


def ballot(predicate):
    """``T.ballot_sync(predicate)`` over the whole warp (uint64)."""
    return I.call("ballot", "uint64", _predicate(predicate, "ballot"))


def activemask():
    """A uint64 with a bit set for every lane of the warp executing this call
    (``__activemask()`` on CUDA)."""
    return I.call("activemask", "uint64")


def match_any_sync(value, mask=I.FULL_MASK):
    """A uint32 mask of the lanes of ``mask`` whose ``value`` equals this lane's
    (``__match_any_sync``). Only on warps of at most 32 lanes."""
    value = _match_value(value, "match_any_sync")
    return I.call("match_any_sync", "uint32", _mask(mask, "match_any_sync"), value)


def match_all_sync(value, mask=I.FULL_MASK):
    """``mask`` (uint32) if every lane of ``mask`` has the same ``value``, else 0
    (``__match_all_sync``; test ``result != 0`` for its predicate)."""
    value = _match_value(value, "match_all_sync")
    return I.call("match_all_sync", "uint32", _mask(mask, "match_all_sync"), value)


def _match_value(value, name: str):
    value, dtype = _scalar(value, name)
    if dtype == "bool" or (_is_int(dtype) and tvm.runtime.DataType(dtype).bits < 32):
        return tirx.Cast("int32", value)  # equality is the same on the widened value
    if dtype not in ("int32", "uint32", "int64", "uint64", "float32", "float64"):
        raise TypeError(f"T.{name} compares 32- or 64-bit integers or floats, got {dtype}")
    return value


# -- shuffles -------------------------------------------------------------------------------------
def _shuffle(kind: str, value, lane, width, mask):
    name = kind
    value, _ = _scalar(value, name)
    if not isinstance(width, int) or isinstance(width, bool):
        width = getattr(width, "value", width)
    if not isinstance(width, int) or width < 1 or width & (width - 1):
        raise ValueError(f"T.{name}: width must be a constant power of two, got {width!r}")
    return I.call(kind, str(value.ty), _mask(mask, name), value,
                  _int_operand(lane, name, "the lane operand"), tirx.const(width, "int32"))


def shfl_sync(value, srcLane, width=I.DEFAULT_WIDTH, mask=I.FULL_MASK):  # noqa: N803 - TileLang's name
    """``value`` of lane ``srcLane`` (modulo ``width``) of this lane's group of ``width`` lanes
    (``__shfl_sync``)."""
    return _shuffle("shfl_sync", value, srcLane, width, mask)


def shfl_xor(value, delta, width=I.DEFAULT_WIDTH, mask=I.FULL_MASK):
    """``value`` of lane ``lane ^ delta``; a lane whose partner is in a later group of ``width``
    lanes keeps its own value (``__shfl_xor_sync``)."""
    return _shuffle("shfl_xor", value, delta, width, mask)


def shfl_down(value, delta, width=I.DEFAULT_WIDTH, mask=I.FULL_MASK):
    """``value`` of lane ``lane + delta`` within the group of ``width`` lanes; the last ``delta``
    lanes of each group keep their own (``__shfl_down_sync``)."""
    return _shuffle("shfl_down", value, delta, width, mask)


def shfl_up(value, delta, width=I.DEFAULT_WIDTH, mask=I.FULL_MASK):
    """``value`` of lane ``lane - delta`` within the group of ``width`` lanes; the first
    ``delta`` lanes of each group keep their own (``__shfl_up_sync``)."""
    return _shuffle("shfl_up", value, delta, width, mask)


# -- warp reductions ------------------------------------------------------------------------------
def _warp_reduce(kind: str, value):
    name = f"warp_reduce_{kind}"
    value, dtype = _scalar(value, name)
    if dtype == "bool":
        raise TypeError(f"T.{name} takes a number, got bool; cast it to int32 first")
    if kind in ("bitand", "bitor") and not _is_int(dtype):
        raise TypeError(f"T.{name} requires an integer value, got {dtype}")
    return I.call(name, dtype, value)


def warp_reduce_sum(value):
    """The sum of ``value`` over every lane of the warp, returned to every lane. The block's
    warps must be whole (threads a multiple of the warp size)."""
    return _warp_reduce("sum", value)


def warp_reduce_max(value):
    """The maximum of ``value`` over every lane of the warp, returned to every lane (a NaN
    lane is ignored, like ``fmaxf``)."""
    return _warp_reduce("max", value)


def warp_reduce_min(value):
    """The minimum of ``value`` over every lane of the warp, returned to every lane (a NaN
    lane is ignored, like ``fminf``)."""
    return _warp_reduce("min", value)


def warp_reduce_bitand(value):
    """The bitwise and of an integer ``value`` over every lane of the warp."""
    return _warp_reduce("bitand", value)


def warp_reduce_bitor(value):
    """The bitwise or of an integer ``value`` over every lane of the warp."""
    return _warp_reduce("bitor", value)


# -- synchronization ------------------------------------------------------------------------------
def sync_warp(mask=None):
    """A barrier (and memory fence) for the lanes of ``mask`` (the whole warp by default):
    ``__syncwarp`` on CUDA."""
    return I.call("sync_warp", "void", _mask(I.FULL_MASK if mask is None else mask, "sync_warp"))


def syncthreads_count(predicate):
    """A block barrier returning (int32) how many threads of the block have a non-zero
    predicate (``__syncthreads_count``)."""
    return I.call("syncthreads_count", "int32", _predicate(predicate, "syncthreads_count"))


def syncthreads_and(predicate):
    """A block barrier returning non-zero (int32) if every thread's predicate is non-zero."""
    return I.call("syncthreads_and", "int32", _predicate(predicate, "syncthreads_and"))


def syncthreads_or(predicate):
    """A block barrier returning non-zero (int32) if any thread's predicate is non-zero."""
    return I.call("syncthreads_or", "int32", _predicate(predicate, "syncthreads_or"))


def shuffle_elect(thread_extent: int):
    """True on exactly one thread of every group of ``thread_extent`` consecutive threads (the
    group's first; ``0``: thread 0 of the block). ``thread_extent`` is 0 or a multiple of the
    warp size; every lane of the warp executes the call together."""
    extent = getattr(thread_extent, "value", thread_extent)
    if not isinstance(extent, int) or isinstance(extent, bool) or extent < 0:
        raise ValueError(f"T.shuffle_elect: thread_extent must be a non-negative constant, got {thread_extent!r}")
    tid = _linear_thread_index("shuffle_elect")
    return I.call("shuffle_elect", "bool", tid, tirx.const(extent, "int32"))


# -- lane and warp queries ----------------------------------------------------------------------
def _size(value, name: str, what: str):
    if value is None:
        return tirx.const(-1, "int32")  # the target's own (warp size; 4 warps per group)
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"T.{name}: {what} must be positive, got {value}")
        return tirx.const(value, "int32")
    value = _convert(value)
    if not _is_int(_dtype(value)):
        raise TypeError(f"T.{name} expects {what} to be int or PrimExpr, but got {type(value).__name__}.")
    return tirx.Cast("int32", value) if _dtype(value) != "int32" else value


def _query(name: str, *sizes):
    return I.call(name, "int32", _linear_thread_index(name), *sizes)


def get_lane_idx(warp_size=None):
    """This thread's lane in its warp: ``tid % warp_size`` (default: the target's warp size,
    32 on NVIDIA and Apple GPUs and on the cpu backend, 64 on AMD CDNA)."""
    return _query("get_lane_idx", _size(warp_size, "get_lane_idx", "warp_size"))


def get_warp_idx(warp_size=None):
    """This thread's warp in the block: ``tid // warp_size``."""
    return _query("get_warp_idx", _size(warp_size, "get_warp_idx", "warp_size"))


def get_warp_idx_sync(warp_size=None):
    """``T.get_warp_idx`` for a converged warp (the same value)."""
    return _query("get_warp_idx_sync", _size(warp_size, "get_warp_idx_sync", "warp_size"))


def get_warp_group_idx(warp_size=None, warps_per_group=None):
    """This thread's warp group: ``tid // (warp_size * warps_per_group)`` (4 warps by default)."""
    if warps_per_group is not None and warp_size is None:
        raise ValueError("get_warp_group_idx expects `warp_size` when specifying `warps_per_group`.")
    return _query("get_warp_group_idx", _size(warp_size, "get_warp_group_idx", "warp_size"),
                  _size(warps_per_group, "get_warp_group_idx", "warps_per_group"))


# -- bit scans ------------------------------------------------------------------------------------
def ffs(value):
    """One plus the position of the lowest set bit of an integer, 0 for 0 (int32): CUDA's
    ``__ffs`` for up to 32 bits, ``__ffsll`` for 64 (a ballot mask)."""
    value = _convert(value)
    dtype = _dtype(value)
    if not _is_int(dtype):
        raise TypeError(f"T.__ffs requires an integer value, got {dtype or type(value).__name__}")
    if tvm.runtime.DataType(dtype).bits < 32:
        value = tirx.Cast(f"{dtype.rstrip('0123456789')}32", value)  # the low bits are the same
    return I.call("ffs", "int32", value)


def fns(mask, base, offset):
    """The position (uint32) of the ``offset``-th set bit of the 32-bit ``mask`` counting from bit
    ``base`` up (offset > 0) or down (offset < 0); ``base`` itself if set (offset 0); 0xFFFFFFFF
    when there is no such bit (CUDA's ``__fns``)."""
    return I.call("fns", "uint32", _mask(mask, "__fns"), _int_operand(base, "__fns", "base", "uint32"),
                  _int_operand(offset, "__fns", "offset"))


__all__ = ["activemask", "all_sync", "any_sync", "ballot", "ballot_sync", "ffs", "fns", "get_lane_idx",
           "get_warp_group_idx", "get_warp_idx", "get_warp_idx_sync", "match_all_sync", "match_any_sync",
           "shfl_down", "shfl_sync", "shfl_up", "shfl_xor", "shuffle_elect", "sync_warp", "syncthreads_and",
           "syncthreads_count", "syncthreads_or", "warp_reduce_bitand", "warp_reduce_bitor", "warp_reduce_max",
           "warp_reduce_min", "warp_reduce_sum"]
