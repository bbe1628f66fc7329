"""``T.gemm_sp``: TileLang's 2:4 structured-sparse GEMM, ``C += A @ B`` where A is given
compressed: ``A_sparse`` holds the kept half of each row's elements and ``E`` where they were.

The format is TileLang's (its ``examples/gemm_sp/sparse_utils.py`` compressor, the "natural
row-major metadata" of tilelang/cuda/intrinsics/sparse_layout.py): along K, each group of 4
elements of A (2 for float32) keeps 2 (1), stored in order in ``A_sparse[i, 2 * g:2 * g + 2]``
(``A_sparse[i, g]``); 4 bits of ``E`` per group say where: bits 1:0 the first kept element's
position, bits 3:2 the second's (float32: in 16-bit units, 0 or 2 for the kept element; the other
index is its neighbour). One ``E`` element packs ``bits // 4`` groups, the first in its lowest
bits, so it covers ``get_e_factor(dtype, E.dtype)`` elements of a row of A. ``transpose_A`` /
``transpose_E`` store A_sparse as (K / 2, M) and E as (K / e_factor, M).

TileLang-X expands the op into its meaning: a ``T.Parallel`` loop writes the dense A tile into
shared memory (zeros where nothing was kept), then ``T.gemm`` multiplies it. Every backend runs it;
the dense product does twice the multiplications of the sparse tensor-core instructions (mma.sp /
wgmma.sp) TileLang uses on NVIDIA GPUs, which is the price of this first version.

Example::

    T.gemm_sp(A_shared, E_shared, B_shared, C_local)   # A_shared (bM, bK // 2), E_shared (bM, bK // 8) int16
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as IB

from ..errors import FrontendError
from ..ir.region import as_int, extents_of, mins_of
from .kernel import current_kernel

#: element type -> (kept, group): TileLang's GROUP_CONFIG
GROUPS = {"float32": (1, 2), "float16": (2, 4), "bfloat16": (2, 4), "int8": (2, 4), "uint8": (2, 4),
          "float8_e4m3": (2, 4), "float8_e4m3fn": (2, 4), "float8_e5m2": (2, 4)}
_BITS_PER_GROUP = 4


def e_factor(dtype: str, meta_dtype: str) -> int:
    """Elements of a row of A one metadata element of ``meta_dtype`` covers."""
    if str(dtype) not in GROUPS:
        raise FrontendError(f"T.gemm_sp: A of {dtype} has no 2:4 sparse form; the types are {', '.join(GROUPS)}")
    return tvm.runtime.DataType(str(meta_dtype)).bits // _BITS_PER_GROUP * GROUPS[str(dtype)][1]


def _tile(x, what: str):
    """(buffer, mins, extents) of a 2-D tile operand (a buffer or a region of one)."""
    from ..ir import region as R
    from .tile_ops import _whole

    region = _whole(x, f"T.gemm_sp {what}")
    dims = [d for d, e in enumerate(extents_of(region)) if as_int(e) != 1]
    if len(dims) != 2 or any(as_int(extents_of(region)[d]) is None for d in dims):
        raise FrontendError(f"T.gemm_sp {what} must be a 2-D tile of constant extents, got "
                            f"{R.fmt_region(region)}")
    return region.source, list(mins_of(region)), dims, [as_int(extents_of(region)[d]) for d in dims]


def _at(mins, dims, row, col):
    index = list(mins)
    index[dims[0]] = index[dims[0]] + row
    index[dims[1]] = index[dims[1]] + col
    return index


def gemm_sp(A_sparse, E, B, C, transpose_A: bool = False, transpose_E: bool = False, transpose_B: bool = False,
            policy=None, clear_accum: bool = False, k_pack: int = 1, wg_wait: int = 0, annotations=None):
    """``C += A @ op(B)`` with A given 2:4-compressed as ``A_sparse`` and ``E`` (module docstring)."""
    from .loops import Parallel
    from .tile_ops import GemmWarpPolicy, gemm

    current_kernel("T.gemm_sp")
    a, a_min, a_dims, a_ext = _tile(A_sparse, "A_sparse")
    e, e_min, e_dims, e_ext = _tile(E, "E")
    dtype, meta = str(a.ty.dtype), str(e.ty.dtype)
    if tvm.runtime.DataType(meta).type_code not in (tvm.runtime.DataTypeCode.INT, tvm.runtime.DataTypeCode.UINT):
        raise FrontendError(f"T.gemm_sp: E '{e.name}' must hold integers (the metadata), got {meta}")
    kept, group = GROUPS.get(dtype, (None, None))
    factor = e_factor(dtype, meta)
    m, half = (a_ext[1], a_ext[0]) if transpose_A else (a_ext[0], a_ext[1])
    k = half * group // kept
    want = (k // factor, m) if transpose_E else (m, k // factor)
    if k % factor or tuple(e_ext) != want:
        raise FrontendError(f"T.gemm_sp: E '{e.name}' is {tuple(e_ext)}; for A_sparse '{a.name}' "
                            f"({tuple(a_ext)}, K = {k}) and {meta} metadata ({factor} elements of A each) it must "
                            f"be {want}")
    per_meta = factor // group  # groups in one metadata element
    dense = IB.alloc_buffer([k, m] if transpose_A else [m, k], dtype, scope="shared.dyn")
    IRBuilder.name(f"{a.name}_dense", dense)
    frames = Parallel(*([k, m] if transpose_A else [m, k])).frames()
    with frames[0] as r, frames[1] as c:
        i, kk = (c, r) if transpose_A else (r, c)
        g, p = kk // group, kk % group
        word = tirx.BufferLoad(e, _at(e_min, e_dims, g // per_meta, i) if transpose_E
                               else _at(e_min, e_dims, i, g // per_meta))
        nibble = tirx.bitwise_and(tirx.shift_right(tirx.Cast("int32", word), 4 * (g % per_meta)), 15)

        def sparse(j):
            return tirx.BufferLoad(a, _at(a_min, a_dims, j, i) if transpose_A else _at(a_min, a_dims, i, j))

        zero = tirx.const(0, dtype)
        if kept == 2:
            first, second = tirx.bitwise_and(nibble, 3), tirx.bitwise_and(tirx.shift_right(nibble, 2), 3)
            value = tirx.Select(p == first, sparse(2 * g), tirx.Select(p == second, sparse(2 * g + 1), zero))
        else:  # float32: the kept element's index counts 16-bit units (0 or 2)
            value = tirx.Select(p == tirx.shift_right(tirx.bitwise_and(nibble, 3), 1), sparse(g), zero)
        IB.buffer_store(dense, value, [r, c])
    gemm(dense, B, C, transpose_A=transpose_A, transpose_B=transpose_B,
         policy=GemmWarpPolicy.Square if policy is None else policy, clear_accum=clear_accum, k_pack=k_pack,
         wg_wait=wg_wait)


__all__ = ["GROUPS", "e_factor", "gemm_sp"]
