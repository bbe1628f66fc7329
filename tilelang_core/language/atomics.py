"""Atomics: ``T.atomic_add/max/min/or/and/xor``, the paired and quad adds ``T.atomic_addx2/x4``,
``T.atomic_load`` and ``T.atomic_store``, with TileLang's forms and memory orders.

Two forms, as in TileLang:

- thread-level: an element destination and a scalar value (``T.atomic_add(C[i, j], v)``). Every
  thread that executes it performs it: in per-thread code (``tx = T.get_thread_binding()``) each
  thread adds its own value, ``T.atomic_add(count[0], 1)`` in a 128-thread block adds 128. In a
  T.Parallel body it is one atomic per element of the loop. ``return_prev=True`` makes it an
  expression: the element's previous contents, e.g. ``pos = T.atomic_add(n[0], 1,
  return_prev=True)``; the atomic happens once, where it is written, however often ``pos`` is
  used.
- tile: a destination tile (a slice, a buffer, or a start element with a tile value); every
  element of the tile is combined once per block (``T.atomic_add(C[by * 64, bx * 64], C_frag)``).

``memory_order`` is one of "relaxed" (the default of the read-modify-writes), "consume",
"acquire", "release", "acq_rel", "seq_cst" (the default of T.atomic_load / T.atomic_store, as in
TileLang); loads take no release, stores no acquire. A backend without an order refuses it by
name instead of running it relaxed.

Example::

    for i, j in T.Parallel(bM, bN):
        T.atomic_add(C[by * bM + i, bx * bN + j], C_local[i, j])      # split-K epilogue
    if x[i] > 0:
        pos = T.atomic_add(counter[0], 1, return_prev=True)            # stream compaction
        out[pos] = i
    T.atomic_store(flag[0], 1, memory_order="release")                 # publish
    while T.atomic_load(flag[0], memory_order="acquire") == 0:         # wait
        pass
"""

from __future__ import annotations

import sys

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B
from tvm.tirx.script.builder import scalar_wrapper
from tvm.tirx import is_buffer_var

from ..errors import FrontendError
from ..ir import Atomic
from ..ir import region as R
from ..ir.atomic_calls import AtomicCall
from ..ir.ops import LOAD_ORDERS, MEMORY_ORDERS, STORE_ORDERS, check_memory_order
from .emit import emit, is_element, region_from_start
from .kernel import current_kernel
from .vector_access import slice_lanes


# -- the read-modify-writes -----------------------------------------------------------------------
def atomic_add(dst, value, memory_order: str | None = None, return_prev: bool = False,
               use_tma: bool = False, annotations: dict | None = None):
    """Atomically add ``value`` (a scalar, or a tile) into ``dst`` (an element or a tile).

    ``return_prev=True`` (element destination, scalar value): the value ``dst`` held before.
    ``use_tma`` (TileLang's TMA reduce-add of a whole tile) and ``annotations`` are hints: the
    sums are the same either way.

    Example::

        T.atomic_add(C[by * 64, bx * 64], C_frag)                  # a tile, once per block
        old = T.atomic_add(hist[b], 1, return_prev=True)           # one element, per thread
    """
    return _atomic("add", dst, value, memory_order, return_prev)


def atomic_max(dst, value, memory_order: str | None = None, return_prev: bool = False,
               annotations: dict | None = None):
    """Atomic ``dst = max(dst, value)`` (element or tile; ``return_prev`` as in atomic_add)."""
    return _atomic("max", dst, value, memory_order, return_prev)


def atomic_min(dst, value, memory_order: str | None = None, return_prev: bool = False,
               annotations: dict | None = None):
    """Atomic ``dst = min(dst, value)`` (element or tile; ``return_prev`` as in atomic_add)."""
    return _atomic("min", dst, value, memory_order, return_prev)


def atomic_or(dst, value, memory_order: str | None = None, return_prev: bool = False):
    """Atomic ``dst |= value`` on an integer element (or tile).

    Example::

        T.atomic_or(mask[w], T.shift_left(1, lane))
    """
    return _atomic("or", dst, value, memory_order, return_prev)


def atomic_and(dst, value, memory_order: str | None = None, return_prev: bool = False):
    """Atomic ``dst &= value`` on an integer element (or tile)."""
    return _atomic("and", dst, value, memory_order, return_prev)


def atomic_xor(dst, value, memory_order: str | None = None, return_prev: bool = False):
    """Atomic ``dst ^= value`` on an integer element (or tile)."""
    return _atomic("xor", dst, value, memory_order, return_prev)


def _atomic(kind: str, dst, value, memory_order, return_prev: bool):
    what = f"T.atomic_{kind}"
    current_kernel(what)
    order = check_memory_order(memory_order, what, MEMORY_ORDERS)
    value = _unwrap(value)
    if return_prev:
        return _returning(kind, dst, value, order, what)
    if is_element(dst) and _is_tile(value):
        dst_r = region_from_start(dst, value, f"{what} destination")
        emit(Atomic(dst_r, R.to_region(value, f"{what} source"), kind=kind, memory_order=order))
        return None
    if is_element(dst):  # TileLang's thread-level atomic
        emit(Atomic(R.to_region(_unwrap(dst), f"{what} destination"), _read_first(value), kind=kind,
                    memory_order=order, per_thread=True))
        return None
    dst_r = R.to_region(dst, f"{what} destination")
    if _is_tile(value):
        value = R.to_region(value, f"{what} source")
    emit(Atomic(dst_r, value, kind=kind, memory_order=order))
    return None


def _returning(kind: str, dst, value, order: str, what: str):
    """The previous contents of ``dst``, bound to a name right here: the atomic happens once."""
    if not is_element(dst):
        raise FrontendError(f"{what}(return_prev=True) needs one element as its destination, like "
                            f"A[i]: a tile has no single previous value")
    if _is_tile(value):
        raise FrontendError(f"{what}(return_prev=True) takes a scalar value, not the tile {value}")
    _refuse_where_evaluated_lazily(what)
    call = AtomicCall(kind, _unwrap(dst), value, order).to_call()
    var = B.Bind(call)
    IRBuilder.name("prev", var)
    return var


# Python evaluates a `while` test once while the kernel is parsed, and both sides of `and`/`or`
# and `a if c else b`; the generated code evaluates them again per iteration or only when
# needed. An atomic bound where it is written would run once, or always: refuse those spots.
_LAZY_PARSER_FRAMES = {"visit_while": "the condition of a while loop",
                       "_eval_bool_op": "an operand of 'and' / 'or'",
                       "_eval_if_exp": "a conditional expression 'a if c else b'"}


def _refuse_where_evaluated_lazily(what: str) -> None:
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return
        where = _LAZY_PARSER_FRAMES.get(frame.f_code.co_name)
        if where is not None:
            raise FrontendError(f"{what}(return_prev=True) in {where}: the atomic must happen "
                                f"exactly once where it is written; bind it on its own line first "
                                f"(old = {what}(..., return_prev=True)) and test 'old'")
        if frame.f_code.co_name in ("visit_body", "parse"):
            return
        frame = frame.f_back


# -- paired and quad adds -------------------------------------------------------------------------
def atomic_addx2(dst, value, return_prev: bool = False):
    """Add the 2 consecutive values starting at ``value`` into the 2 starting at ``dst``
    (TileLang's paired atomic). Each element's add is atomic on its own; with
    ``return_prev=True`` the result is the 2-lane vector of their previous values, each read by
    its own element's atomic (like TileLang's per-pair contract, not one snapshot).

    Example::

        T.atomic_addx2(dW[i, j * 2], g[i, j * 2])
        Prev[0:2] = T.atomic_addx2(Dst[0:2], Val[0:2], return_prev=True)
    """
    return _atomic_vector(2, dst, value, return_prev)


def atomic_addx4(dst, value, return_prev: bool = False):
    """Add 4 consecutive values (TileLang's ``float4`` atomic), element by element; see
    atomic_addx2."""
    return _atomic_vector(4, dst, value, return_prev)


def _atomic_vector(lanes: int, dst, value, return_prev: bool):
    what = f"T.atomic_addx{lanes}"
    current_kernel(what)
    dst_buf, dst_at = _vector_start(dst, lanes, what, "destination")
    val_buf, val_at = _vector_start(value, lanes, what, "value")
    prevs = []
    for lane in range(lanes):
        d = tirx.BufferLoad(dst_buf, dst_at[:-1] + [dst_at[-1] + lane])
        v = tirx.BufferLoad(val_buf, val_at[:-1] + [val_at[-1] + lane])
        prevs.append(_atomic("add", d, v, None, return_prev))
    if not return_prev:
        return None
    return tirx.Shuffle(prevs, [tirx.const(i, "int32") for i in range(lanes)])


def _vector_start(x, lanes: int, what: str, role: str):
    """(buffer, start indices) of ``lanes`` consecutive elements along the last dimension, given
    as their first element ``A[i, j]``, a slice ``A[i, j:j + lanes]`` or a ramp ``A[T.Ramp(j, 1,
    lanes)]``."""
    x = _unwrap(x)
    hint = (f"{what} takes its {role} as the first of {lanes} consecutive elements, e.g. "
            f"{what}(dst[i, j * {lanes}], src[i, j * {lanes}]), or as a slice dst[i, j:j + {lanes}]")
    if isinstance(x, tvm.ir.TensorLoad) and is_buffer_var(x.source):
        indices = list(x.indices)
        last = indices[-1] if indices else None
        if isinstance(last, tirx.Ramp):
            if R.as_int(last.stride) != 1 or R.as_int(last.lanes) != lanes:
                raise FrontendError(f"{what}: the {role} ramp {last} must be {lanes} consecutive "
                                    f"elements (stride 1, {lanes} lanes)")
            indices[-1] = last.base
        if any(tvm.runtime.DataType(str(i.ty)).lanes != 1 for i in indices):
            raise FrontendError(hint)
        return x.source, indices
    if R.is_region(x):
        if slice_lanes(x) != lanes:
            raise FrontendError(f"{what}: the {role} slice {R.fmt_region(x)} must cover exactly "
                                f"{lanes} consecutive elements of the last dimension")
        return x.source, list(R.mins_of(x))
    raise FrontendError(hint)


# -- loads and stores -----------------------------------------------------------------------------
def atomic_load(src, memory_order: str = "seq_cst"):
    """The element ``src`` read atomically with ``memory_order`` ("relaxed", "consume",
    "acquire" or "seq_cst"). An expression: it reads again wherever it is evaluated.

    Example::

        while T.atomic_load(flag[0], memory_order="acquire") == 0:
            pass
    """
    current_kernel("T.atomic_load")
    order = check_memory_order(memory_order, "atomic_load", LOAD_ORDERS)
    return AtomicCall("load", _element(src, "T.atomic_load"), None, order).to_call()


def atomic_store(dst, src, memory_order: str = "seq_cst"):
    """Store the scalar ``src`` into the element ``dst`` atomically with ``memory_order``
    ("relaxed", "release" or "seq_cst"); thread-level, like the element read-modify-writes.

    Example::

        data[0] = 3.0
        T.atomic_store(ready[0], 1, memory_order="release")
    """
    current_kernel("T.atomic_store")
    order = check_memory_order(memory_order, "atomic_store", STORE_ORDERS)
    value = _unwrap(src)
    if _is_tile(value):
        raise FrontendError(f"T.atomic_store stores one scalar value, not the tile {value}")
    element = _element(dst, "T.atomic_store")
    emit(Atomic(R.to_region(element, "T.atomic_store destination"), _read_first(value), kind="store",
                memory_order=order, per_thread=True))


def _read_first(value):
    """A thread-level atomic's value that reads global memory, bound before the atomic (which reads
    it first anyway): the bound read gets TileLang's safe memory access like any other
    (transform/safe_global_access.py), which does not look into tile-op operands."""
    reads = []
    if isinstance(value, tvm.ir.Expr) and tvm.ir.is_prim_expr(value):
        tvm_ffi.structural_walk(value, [(tvm.ir.TensorLoad, lambda ld: reads.append(
            str(ld.source.ty.storage_scope) in ("global", "")))])
    return B.Bind(value) if any(reads) else value


def _element(x, what: str):
    """``A[i]``, or element 0 of a one-element buffer (T.alloc_var, a (1,) tensor)."""
    x = _unwrap(x)
    if is_buffer_var(x):
        if all(R.as_int(s) == 1 for s in x.ty.shape):
            return tirx.BufferLoad(x, [tirx.const(0, "int32") for _ in x.ty.shape])
        raise FrontendError(f"{what} acts on one element: index the buffer, e.g. {x.name}[0], "
                            f"instead of passing all of '{x.name}' {R.fmt_extents(x.ty.shape)}")
    if is_element(x):
        return x
    raise FrontendError(f"{what} acts on one element of a buffer, like A[i]; got {x}")


# -- operands -------------------------------------------------------------------------------------
def _unwrap(x):
    return x.scalar if isinstance(x, scalar_wrapper) else x


def _is_tile(x) -> bool:
    return is_buffer_var(x) or R.is_region(x)


__all__ = ["atomic_add", "atomic_addx2", "atomic_addx4", "atomic_and", "atomic_load", "atomic_max",
           "atomic_min", "atomic_or", "atomic_store", "atomic_xor"]
