"""Tile operations: ``T.copy``, ``T.fill``, ``T.clear``, ``T.gemm``, reductions and ``T.cumsum``
(atomics are in atomics.py, re-exported here). Each validates its operands (through the op classes of ``tilelang_core.ir``) and
emits one ``tl.tile.*`` statement.

Example::

    T.clear(C_f)
    for k in T.Pipelined(T.ceildiv(K, 32), num_stages=3):
        T.copy(A[by * 128, k * 32], A_s)          # extent taken from A_s
        T.copy(B[k * 32:(k + 1) * 32, bx * 128:(bx + 1) * 128], B_s)
        T.gemm(A_s, B_s, C_f)
    T.reduce_max(C_f, row_max, dim=1)
    T.copy(C_f, C[by * 128, bx * 128])
"""

from __future__ import annotations

from tvm.ir import TensorLoad
from tvm.script.ir_builder import tirx as B
from tvm import tirx
from tvm.tirx import is_buffer_var

from ..errors import FrontendError
from ..ir import Copy, Cumsum, Fill, Gemm, GemmWarpPolicy, Reduce
from ..ir import region as R
from .atomics import (atomic_add, atomic_addx2, atomic_addx4, atomic_and, atomic_load,  # noqa: F401
                      atomic_max, atomic_min, atomic_or, atomic_store, atomic_xor)
from .emit import emit, is_element, pair_regions
from .kernel import current_kernel


_PREFERRED = ("tma", "cp_async", "sync")


def copy(src, dst, coalesced_width: int | None = None, disable_tma: bool = False,
         eviction_policy: str | None = None, prefer_instruction: str | None = None,
         annotations: dict | None = None, loop_layout=None):
    """Copy ``src`` to ``dst`` (global/shared/fragment in any pair), converting dtypes.

    Either side may be a start element ``A[i, j]``: its extent is the other side's shape.
    ``prefer_instruction`` ("tma", "cp_async", "sync") and ``annotations`` (a dict that may also
    carry the keyword options, taking precedence, as in TileLang) are hints: the copy completes
    before the next statement whichever instruction the backend picks; "sync" keeps TMA off.
    ``loop_layout`` (a ``T.Fragment`` over the copied tile, its dimensions of size 1 dropped)
    names the thread that copies each element of a global/shared copy, as TileLang's does: a
    kernel with ``tl.disable_thread_storage_sync`` reads what a thread copied itself without a
    barrier. Copies with a fragment side follow the fragment's layout.
    """
    src_r, dst_r = pair_regions(src, dst, "T.copy source", "T.copy destination")
    if not isinstance(annotations, (dict, type(None))):
        raise FrontendError(f"T.copy annotations must be a dict, got {annotations!r}")
    hints = dict(annotations or {})
    coalesced_width = hints.pop("coalesced_width", coalesced_width)
    disable_tma = hints.pop("disable_tma", disable_tma)
    eviction_policy = hints.pop("eviction_policy", eviction_policy)
    prefer_instruction = hints.pop("prefer_instruction", prefer_instruction)
    options = {}
    if coalesced_width is not None:
        options["coalesced_width"] = int(coalesced_width)
    if eviction_policy is not None:
        options["eviction_policy"] = str(eviction_policy)
    if prefer_instruction is not None:
        if prefer_instruction not in _PREFERRED:
            raise FrontendError(f"T.copy prefer_instruction must be one of {', '.join(map(repr, _PREFERRED))}, "
                                f"got {prefer_instruction!r}")
        options["prefer_instruction"] = prefer_instruction
        disable_tma = disable_tma or prefer_instruction == "sync"
    if disable_tma:
        options["disable_tma"] = True
    for key, value in hints.items():  # other annotations travel with the op (its config)
        options[str(key)] = value if isinstance(value, (bool, int, float, str)) else str(value)
    op = Copy(src_r, dst_r, options)
    if loop_layout is not None:
        op.options["loop_layout"] = _loop_layout_option(loop_layout, op)
    emit(op)


def _loop_layout_option(layout, op: Copy) -> str:
    """A copy's ``loop_layout`` as it travels in the op's config (Fragment.describe()), checked
    against the tile it lays out."""
    from ..layout import Fragment

    if not isinstance(layout, Fragment):
        raise FrontendError(f"T.copy loop_layout must be a T.Fragment, got {layout!r}")
    extents = [R.as_int(e) for e in R.squeeze(R.extents_of(op.src))]
    if None in extents or list(layout.shape) != extents:
        raise FrontendError(f"T.copy loop_layout is laid out over shape {list(layout.shape)}, but the copy "
                            f"{R.fmt_region(op.src)} -> {R.fmt_region(op.dst)} has extents "
                            f"{R.fmt_extents(R.squeeze(R.extents_of(op.src)))} (dimensions of size 1 dropped)")
    return layout.describe()


def async_copy(src, dst, coalesced_width: int | None = None, annotations: dict | None = None,
               loop_layout=None):
    """TileLang's ``T.async_copy(src, dst)``: a global -> shared copy issued as cp.async, which the
    author waits for (``T.ptx_wait_group`` / a barrier); no wait is inserted.

    TileLang-X performs it as ``T.copy`` does: the data has landed before the next statement,
    which every wait the author writes allows (language/async_groups.py says the same of
    ``T.ptx_cp_async``). Only global -> shared copies are accepted, as in TileLang. ``loop_layout``
    names the thread that copies each element (see ``T.copy``): a thread's wait covers only its own
    copies, so kernels that wait without a barrier read only what the layout gave them.
    """
    src_r, dst_r = pair_regions(src, dst, "T.async_copy source", "T.async_copy destination")
    src_scope, dst_scope = R.scope_of(src_r), R.scope_of(dst_r)
    if src_scope != "global" or dst_scope not in ("shared", "shared.dyn"):
        raise FrontendError(f"T.async_copy only supports global->shared/shared.dyn copies (cp.async); "
                            f"got {R.name_of(src_r)} ({src_scope}) -> {R.name_of(dst_r)} ({dst_scope}): "
                            f"use T.copy")
    hints = dict(annotations or {})
    hints.setdefault("prefer_instruction", "cp_async")
    copy(src_r, dst_r, coalesced_width=coalesced_width, annotations=hints, loop_layout=loop_layout)


def fill(buffer, value):
    """Set every element of ``buffer`` (or of a region of it) to ``value``; a ``T.alloc_var``
    variable is assigned ``value``."""
    var = _variable(buffer)
    if var is not None:
        B.buffer_store(var, value, [0])
        return
    emit(Fill(_fill_target(buffer, "T.fill destination"), value))


def clear(buffer):
    """``T.fill(buffer, 0)``."""
    var = _variable(buffer)
    if var is not None:
        B.buffer_store(var, 0, [0])
        return
    emit(Fill(_fill_target(buffer, "T.clear destination"), 0))


def _fill_target(x, what: str):
    # TileLang fills one element too (``T.fill(counter[0], 0)`` in DeepSeek's top-k): a region of 1
    if isinstance(x, B.scalar_wrapper):
        x = x.scalar
    if is_element(x):
        return R.make_region(x.source, list(x.indices), [1] * len(x.indices))
    return _whole(x, what)


def _variable(x):
    """The 1-element buffer of a ``T.alloc_var`` variable (TileLang clears those too), else None."""
    if isinstance(x, B.scalar_wrapper):
        x = x.scalar
    if isinstance(x, TensorLoad) and is_buffer_var(x.source) and str(x.source.ty.storage_scope) == "local.var":
        return x.source
    return None


def _whole(x, what: str):
    if is_element(x):
        raise FrontendError(f"{what} must be a buffer or a slice, not the single element {x}")
    return R.to_region(x, what)


def transpose(src, dst, annotations: dict | None = None):
    """``dst[..., j, i] = src[..., i, j]`` for tiles (TileLang's shared-memory transpose): ``src``
    of shape (..., M, N), ``dst`` of shape (..., N, M). Written as a ``T.Parallel`` loop over
    ``src``'s elements, so layout inference places it as any other element-wise loop."""
    del annotations  # TileLang's lowering hints; the loop below is the whole meaning
    s_r, d_r = R.to_region(src, "T.transpose source"), R.to_region(dst, "T.transpose destination")
    s_ext, d_ext = R.extents_of(s_r), R.extents_of(d_r)
    if len(s_ext) < 2 or len(d_ext) != len(s_ext):
        raise FrontendError(f"T.transpose needs two tiles of the same rank (2 or more): "
                            f"{R.fmt_region(s_r)} -> {R.fmt_region(d_r)}")
    want = list(s_ext[:-2]) + [s_ext[-1], s_ext[-2]]
    if not R.same_extents(want, d_ext):
        raise FrontendError(f"T.transpose: a source of shape {R.fmt_extents(s_ext)} needs a destination "
                            f"of shape {R.fmt_extents(want)}, got {R.fmt_extents(d_ext)}")
    if any(R.as_int(e) is None for e in s_ext):
        raise FrontendError(f"T.transpose needs constant tile shapes, got {R.fmt_extents(s_ext)}")
    from contextlib import ExitStack

    from .loops import Parallel
    with ExitStack() as stack:
        idx = [stack.enter_context(f) for f in Parallel(*[R.as_int(e) for e in s_ext]).frames()]
        out = idx[:-2] + [idx[-1], idx[-2]]
        value = R.buffer_of(s_r)[tuple(m + i for m, i in zip(R.mins_of(s_r), idx))]
        B.buffer_store(R.buffer_of(d_r), value, [m + i for m, i in zip(R.mins_of(d_r), out)])


def gemm(A, B, C, transpose_A: bool = False, transpose_B: bool = False,
         policy=GemmWarpPolicy.Square, clear_accum: bool = False, k_pack: int = 1,
         wg_wait: int = 0):
    """``C += op(A) @ op(B)`` (``C = ...`` with ``clear_accum=True``) on tiles.

    A and B are shared or fragment tiles, C a fragment (``T.alloc_fragment``).
    """
    emit(Gemm(_whole(A, "T.gemm operand A"), _whole(B, "T.gemm operand B"),
              _whole(C, "T.gemm accumulator C"), transpose_A=transpose_A,
              transpose_B=transpose_B, policy=policy, clear_accum=clear_accum, k_pack=k_pack,
              wg_wait=wg_wait))


def wgmma_gemm(A, B, C, transpose_A: bool = False, transpose_B: bool = False,
               policy=GemmWarpPolicy.Square, clear_accum: bool = False, annotations=None):
    """TileLang's explicit Hopper gemm that does not wait for itself (``T.wait_wgmma`` does). Here
    it is ``T.gemm``: complete before the next statement, which every later wait allows (on
    sm_90a still wgmma where it fits; elsewhere mma.sync, where TileLang refuses to compile)."""
    del annotations
    gemm(A, B, C, transpose_A=transpose_A, transpose_B=transpose_B, policy=policy, clear_accum=clear_accum)


def wait_wgmma(id):
    """Wait until at most ``id`` groups of ``T.wgmma_gemm`` are in flight: nothing to wait for
    here (each completes before the next statement)."""
    value = id.value if isinstance(id, tirx.IntImm) else id
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FrontendError(f"T.wait_wgmma needs a constant count (0 or more), got {id!r}")
    current_kernel("T.wait_wgmma")


def reduce(buffer, out, reduce_type: str, dim: int = -1, clear: bool = True, batch: int = 1,
           nan_propagate: bool = False, annotations=None):
    """Reduce ``buffer`` along ``dim`` into ``out`` with ``reduce_type`` in
    max/min/sum/abssum/absmax, or bitand/bitor/bitxor on integer tiles.

    ``batch`` (TileLang's grouping of cross-thread reductions) and ``annotations`` are schedule
    hints with no effect on the values. ``nan_propagate=True``: a NaN element makes a max, min or
    absmax NaN (without it, how a NaN combines is the backend's max: CUDA's ignores it).
    """
    what = f"T.reduce_{reduce_type}"
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise FrontendError(f"{what}: batch must be a positive integer, got {batch!r}")
    var = _variable(out)  # a T.alloc_var takes the reduction of a 1-D tile (TileLang allows it)
    emit(Reduce(_whole(buffer, f"T.reduce_{reduce_type} source"),
                R.full_region(var) if var is not None else _whole(out, f"T.reduce_{reduce_type} destination"),
                kind=str(reduce_type),
                dim=dim, clear=clear, nan_propagate=nan_propagate))


def reduce_max(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations=None):
    """Row/column maximum: ``out[i] = max_j buffer[i, j]`` for ``dim=1``."""
    reduce(buffer, out, "max", dim, clear, batch, nan_propagate, annotations)


def reduce_min(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations=None):
    """Minimum along ``dim``."""
    reduce(buffer, out, "min", dim, clear, batch, nan_propagate, annotations)


def reduce_sum(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations=None):
    """Sum along ``dim``; ``clear=False`` adds to ``out``'s current values."""
    reduce(buffer, out, "sum", dim, clear, batch, nan_propagate, annotations)


def reduce_abssum(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations=None):
    """Sum of absolute values along ``dim``."""
    reduce(buffer, out, "abssum", dim, clear, batch, nan_propagate, annotations)


def reduce_absmax(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations=None):
    """Maximum absolute value along ``dim``."""
    reduce(buffer, out, "absmax", dim, clear, batch, nan_propagate, annotations)


def reduce_bitand(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1, annotations=None):
    """Bitwise and along ``dim`` (integer tiles)."""
    reduce(buffer, out, "bitand", dim, clear, batch, False, annotations)


def reduce_bitor(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1, annotations=None):
    """Bitwise or along ``dim`` (integer tiles)."""
    reduce(buffer, out, "bitor", dim, clear, batch, False, annotations)


def reduce_bitxor(buffer, out, dim: int = -1, clear: bool = True, batch: int = 1, annotations=None):
    """Bitwise exclusive or along ``dim`` (integer tiles)."""
    reduce(buffer, out, "bitxor", dim, clear, batch, False, annotations)


def cumsum(src, dst=None, dim: int = 0, reverse: bool = False, annotations=None):
    """Inclusive prefix sum along ``dim``; in place when ``dst`` is omitted."""
    _scan(src, dst, dim, reverse, "sum")


def cummax(src, dst=None, dim: int = 0, reverse: bool = False, annotations=None):
    """Inclusive running maximum along ``dim``; in place when ``dst`` is omitted."""
    _scan(src, dst, dim, reverse, "max")


def _scan(src, dst, dim, reverse, kind):
    # (TileLang's ``annotations`` are hints to its scan lowering; ours has none to take)
    src_r = _whole(src, f"T.cum{kind} source")
    dst_r = src_r if dst is None else _whole(dst, f"T.cum{kind} destination")
    emit(Cumsum(src_r, dst_r, dim=dim, reverse=reverse, kind=kind))
