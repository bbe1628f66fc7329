"""VerifyNoTileOps: fail loudly if a tile op survived lowering.

An unlowered tile op otherwise surfaces deep in TVM as the misleading "variables (A,) are used, but
are not passed in as API arguments" (TVM-NOTES), so every backend checks right after lowering.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from ..errors import LoweringError
from ..lowering import short_name
from .lower_tile_ops import kernel_name


def find_tile_ops(stmt) -> list[str]:
    """Op names of the tile-op calls left in ``stmt``, in program order."""
    found: list[str] = []
    tvm_ffi.structural_walk(stmt, [(tirx.TilePrimitiveCall, lambda call: found.append(call.op.name))],
                            order="pre")
    return found


def verify_no_tile_ops(func: tirx.PrimFunc, backend_kind: str = "") -> tirx.PrimFunc:
    left = find_tile_ops(func.body)
    if left:
        names = ", ".join(sorted({short_name(name) for name in left}))
        where = f" for backend '{backend_kind}'" if backend_kind else ""
        raise LoweringError(
            f"kernel '{kernel_name(func)}': tile op(s) {names} are still present after lowering"
            f"{where} ({len(left)} call(s)). A lowering rule returned a tile op or a pass "
            f"re-introduced one; this is a compiler bug, please report it with the kernel.")
    return func


def VerifyNoTileOps(backend_kind: str = ""):  # noqa: N802
    @tirx.transform.prim_func_pass(opt_level=0, name="tl.VerifyNoTileOps")
    def _pass(func, _mod, _ctx):
        return verify_no_tile_ops(func, backend_kind)

    return _pass
