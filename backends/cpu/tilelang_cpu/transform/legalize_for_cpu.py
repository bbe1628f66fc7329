"""LegalizeForCpu: turn what is left of the tile-level program into plain CPU loops.

After tile ops, threads and blocks are lowered, three GPU notions remain and mean nothing to
TVM's LLVM codegen:
- ``T.Parallel`` loops (kind parallel): a block is one sequential program on the CPU, and TVM cannot
  nest parallel loops, so they become serial loops (LLVM's loop vectorizer still sees them);
- memory scopes (``shared.dyn``, ``local.fragment``, ``local.var``): a block's buffers are plain
  arrays allocated inside the block loop. They become ``global``, which lets TVM choose a stack
  array for small ones and a per-thread workspace for large ones instead of a huge ``alloca``;
- ``tl.*`` annotations and attributes (pipelining, layouts, swizzles) and barriers: no-ops here.
The inner loop of a lowered gemm (marked by the cpu gemm rule) becomes ``vectorized`` when asked.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from ..lowering import VECTORIZE_HINT
from .blocks_to_loops import BLOCK_LOOP
from .threads_to_loops import is_sync

#: constant extents we vectorize; longer inner loops are left to LLVM's own vectorizer
MAX_VECTOR_LANES = 256


def _retype_buffers(body):
    retyped: dict[int, tirx.Var] = {}

    def collect(alloc):
        buf = alloc.buffer
        if str(buf.ty.storage_scope) not in ("global", ""):
            retyped[buf.__chandle__()] = tirx.decl_buffer(list(buf.ty.shape), buf.ty.dtype,
                                                          name=str(buf), scope="global")

    tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, collect)])
    if not retyped:
        return body
    return tvm_ffi.structural_map(body, [(tirx.Var, lambda v: retyped.get(v.__chandle__(), v))])


def _legal_loop(loop, vectorize: bool):
    annotations = dict(loop.annotations) if loop.annotations is not None else {}
    kind = loop.kind
    if BLOCK_LOOP in annotations:
        pass  # the one loop that stays parallel (or serial, as BlocksToLoops chose)
    elif kind == tirx.ForKind.PARALLEL:
        kind = tirx.ForKind.SERIAL
    if VECTORIZE_HINT in annotations and vectorize and isinstance(loop.extent, tirx.IntImm) \
            and 1 < int(loop.extent) <= MAX_VECTOR_LANES:
        kind = tirx.ForKind.VECTORIZED
    kept = {k: v for k, v in annotations.items() if not k.startswith("tl.")}
    return tirx.For(loop.loop_var, loop.min, loop.extent, kind, loop.body, annotations=kept)


def legalize_for_cpu(func: tirx.PrimFunc, vectorize: bool = True) -> tirx.PrimFunc:
    body = tvm_ffi.structural_map(func.body, [
        (tirx.For, lambda loop: _legal_loop(loop, vectorize)),
        (tirx.AttrStmt, lambda attr: attr.body if str(attr.attr_key).startswith("tl.") else attr),
        (tirx.Evaluate, lambda stmt: tirx.Evaluate(0) if is_sync(stmt) else stmt),
    ])
    return func.with_body(_retype_buffers(body))


def LegalizeForCpu(vectorize: bool = True):  # noqa: N802 (TVM pass naming)
    @tirx.transform.prim_func_pass(opt_level=0, name="tl.cpu.LegalizeForCpu")
    def _pass(func, _mod, _ctx):
        return legalize_for_cpu(func, vectorize)

    return _pass
