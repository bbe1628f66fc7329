"""The Ascend dialect: ``import tilelang_ascend.language as T``.

Everything in the common ``tilelang_core.language`` plus allocators for the Da Vinci memories.
A kernel written with the common T runs here unchanged; these let an author place a buffer
explicitly instead of leaving it to the placement rule below.

How the common scopes are placed on Ascend (transform/classify_buffers.py):

- ``T.alloc_shared`` (``shared.dyn``): the Unified Buffer (UB) of the Vector core, unless every use
  of the buffer is a Cube operand (``T.gemm`` A/B, filled by ``T.copy`` from global memory); then it
  lives in L1, where the Cube's data path starts (UB cannot feed the Cube directly).
- ``T.alloc_fragment`` (``local.fragment``): UB, unless it is a ``T.gemm`` accumulator that only
  the Cube touches (cleared, accumulated, copied out): then it stays in L0C across the K loop.
- ``T.alloc_l1 / alloc_l0a / alloc_l0b / alloc_l0c / alloc_ub``: exactly that memory.

Example::

    import tilelang_ascend.language as T

    A_l1 = T.alloc_l1((128, 64), T.float16)      # Cube operand staging
    C_l0c = T.alloc_l0c((128, 128), T.float32)   # Cube accumulator
    x_ub = T.alloc_shared((8, 256), T.float32)   # Unified Buffer on this target
"""

from __future__ import annotations

import builtins

import tvm
from tvm.script.ir_builder import tirx as _B

from tilelang_core.errors import FrontendError
from tilelang_core.ir.ops import register_scope_alias
from tilelang_core.language import *  # noqa: F401,F403  (the common T)
from tilelang_core.language import alloc_buffer as _alloc_buffer

SCOPE_L1 = "ascend.l1"
SCOPE_L0A = "ascend.l0a"
SCOPE_L0B = "ascend.l0b"
SCOPE_L0C = "ascend.l0c"
SCOPE_UB = "ascend.ub"

# Cube operand memories behave like shared memory in the op checks, L0C like an accumulator
# fragment, UB like shared memory (it is the Vector core's scratchpad).
for _scope in (SCOPE_L1, SCOPE_L0A, SCOPE_L0B, SCOPE_UB):
    register_scope_alias(_scope, "shared.dyn")
register_scope_alias(SCOPE_L0C, "local.fragment")


def alloc_l1(shape, dtype):
    """A buffer in L1, the Cube core's staging memory (filled from global memory by MTE2)."""
    return _alloc_buffer(shape, dtype, scope=SCOPE_L1)


def alloc_l0a(shape, dtype):
    """A buffer in L0A, the Cube's left-operand memory (fed from L1 by MTE1)."""
    return _alloc_buffer(shape, dtype, scope=SCOPE_L0A)


def alloc_l0b(shape, dtype):
    """A buffer in L0B, the Cube's right-operand memory (fed from L1 by MTE1)."""
    return _alloc_buffer(shape, dtype, scope=SCOPE_L0B)


def alloc_l0c(shape, dtype):
    """A Cube accumulator in L0C (read back through the Fixpipe)."""
    return _alloc_buffer(shape, dtype, scope=SCOPE_L0C)


def alloc_ub(shape, dtype):
    """A buffer in the Vector core's Unified Buffer (what ``T.alloc_shared`` usually becomes)."""
    return _alloc_buffer(shape, dtype, scope=SCOPE_UB)


#: attribute key of an expert-mode region (lowering: transform/lower_to_isa.py)
SCOPE_ATTR = "ascend.scope"
_CORES = {"C": "C", "cube": "C", "V": "V", "vector": "V"}


#: attribute key of a T.SimtVF / T.SimdVF region (lowering: transform/lower_to_isa.py)
VF_ATTR = "ascend.vf"


def SimtVF(threads: int = 128):  # noqa: N802 (TileLang-Ascend spelling)
    """A SIMT vector function (Ascend 950, dav-3510): the T.Parallel nests in the region run on
    the Vector core element by element over ``threads`` threads, with scalar loads and stores
    into the Unified Buffer, so bodies that cannot become SIMD instructions (gathers
    ``x[idx[i]]``, shifted or transposed indices, an ``if`` on data) still run there. Tile ops
    in the region lower as usual; everything in it runs on the Vector core.

        with T.SimtVF(threads=128):
            for i, j in T.Parallel(M, N):
                y[i, j] = x[i, idx[j]]
    """
    # builtins.int: the star import of the common T above brings TileLang's T.int dtype
    if not isinstance(threads, builtins.int) or isinstance(threads, builtins.bool) or not 1 <= threads <= 2048:
        raise FrontendError(f"T.SimtVF(threads=...) takes a whole number of threads from 1 to "
                            f"2048, got {threads!r}")
    return _B.attr(tvm.ir.StringImm("simt"), VF_ATTR, tvm.tirx.const(threads, "int32"))


def SimdVF():  # noqa: N802 (TileLang-Ascend spelling)
    """A SIMD vector function: the region runs on the Vector core and every T.Parallel nest in it
    must become SIMD Vector instructions (a body that cannot is a LoweringError with its line,
    never a silent SIMT fallback). The default for T.Parallel outside any region is the same;
    the region states it, and keeps Cube work out of it.

        with T.SimdVF():
            for i, j in T.Parallel(M, N):
                y[i, j] = T.exp(x[i, j] - m[i])
    """
    return _B.attr(tvm.ir.StringImm("simd"), VF_ATTR, tvm.tirx.const(0, "int32"))


def Scope(core: str):  # noqa: N802 (TileLang-Ascend spelling)
    """Expert mode: ``with T.Scope("C"):`` / ``with T.Scope("V"):`` states that the tile ops in
    the region run on the Cube / Vector core. The compiler still moves data between the cores and
    inserts every flag; it refuses an op that would run on the other core, naming it and its
    line, instead of silently splitting the region.

        with T.Scope("C"):
            T.gemm(A_l1, B_l1, C_l0c)
        with T.Scope("V"):
            for i, j in T.Parallel(M, N):
                y[i, j] = T.max(y[i, j], 0)
    """
    if core not in _CORES:
        raise FrontendError(f"T.Scope takes 'C' (Cube) or 'V' (Vector), got {core!r}")
    return _B.attr(tvm.ir.StringImm(_CORES[core]), SCOPE_ATTR, tvm.tirx.const(1, "int32"))
