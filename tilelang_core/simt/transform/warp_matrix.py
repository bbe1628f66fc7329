"""T.ptx_ldmatrix and T.ptx_mma (tilelang_core/language/warp_matrix.py) -> the dialect's helpers.

In the kernel each is the value of a vector store into the thread's registers::

    A_local[0:8] = tl.intrin.ldmatrix(False, 4, pool[Ramp(row_start, 1, 8)])
    C_local[4:8] = tl.intrin.mma_sync("m16n8k16.float16.float16.float32",
                                      A_local[0:8], B_local[4:8], C_local[4:8])

which becomes the helper's call on the first elements' addresses (``SimtDialect.warp_matrix``)::

    tl_ldmatrix_x4(&A_local[0], &pool[row_start]);
    tl_mma_m16n8k16_f16_f32(&C_local[4], &A_local[0], &B_local[4]);

It runs after ApplyLayouts, so the shared row is already at its place in the pool; ApplyLayouts
refused a layout that does not keep the row's 16 bytes side by side, and CheckIntrinsics a row
start not provably aligned to them (both as for any vector access), and a backend without the
helpers.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.language.warp_matrix import ldmatrix_name
from tilelang_core.lowering import source_location

from .state import KernelState

WARP_MATRIX_OPS = ("ldmatrix", "mma_sync")


def _first(load) -> tirx.PrimExpr:
    """The address of a vector load's first element."""
    indices = list(load.indices)
    last = indices[-1]
    if isinstance(last, tirx.Ramp):
        indices[-1] = last.base
    return tirx.address_of(tirx.BufferLoad(load.source, indices))


def lower_warp_matrix(body, st: KernelState):
    """Every register store of an ldmatrix or mma.sync value -> the dialect's helper call."""
    refused = []

    def on_store(store):
        intrinsic = I.intrinsic_of(store.value)
        if intrinsic is None or intrinsic.name not in WARP_MATRIX_OPS:
            return store
        call = store.value
        if intrinsic.name == "ldmatrix":
            key = ldmatrix_name(int(call.args[1].value), bool(call.args[0].value))
            operands = [call.args[2]]
        else:
            key = str(call.args[0].value)
            operands = list(call.args[1:3])
        helper = st.dialect.warp_matrix.get(key)
        if helper is None:
            refused.append((intrinsic, store, key))
            return store
        dst = tirx.BufferLoad(store.buffer, store.indices)
        return tirx.Evaluate(tirx.call_extern("void", helper, _first(dst), *[_first(op) for op in operands]))

    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store)])
    if refused:  # raised here: an exception would cross TVM's FFI as a RuntimeError
        intrinsic, store, key = refused[0]
        where = source_location(store)
        raise LoweringError(f"T.{intrinsic.spelling} in kernel '{st.kernel}' cannot be lowered for backend "
                            f"'{st.dialect.kind}': it has no helper for {key}"
                            + (f"\n  --> {where}" if where else ""))
    return body


__all__ = ["WARP_MATRIX_OPS", "lower_warp_matrix"]
