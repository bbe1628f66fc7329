"""BlocksToLoops: the blockIdx launches of a kernel become one loop over all blocks.

The grid (gx, gy, gz) is fused into a single loop of gx*gy*gz iterations, so the TVM thread pool
balances blocks of a 2-D or 3-D grid as well as a 1-D one (nested parallel loops are not supported
by TVM's CPU codegen anyway). Block indices are substituted by their div/mod expressions of the
fused index, which keeps them visible to the analyzer (bounds checks on exact tiles fold away).

The loop is parallel unless the caller asks for a serial one: ``pipeline.py`` does when the kernel
has an atomic on a global buffer (see there) or when ``num_threads == 1``.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
#: marks the block loop so later passes leave it parallel while serializing T.Parallel loops
BLOCK_LOOP = "tl.cpu_block_loop"


def is_block_launch(stmt) -> bool:
    return (isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "thread_extent"
            and isinstance(stmt.node, tirx.IterVar) and str(stmt.node.thread_tag) in BLOCK_TAGS)


def _fuse(launch: tirx.AttrStmt, parallel: bool) -> tirx.Stmt:
    launches = []
    body = launch
    # Launches of one kernel are nested directly in one another (docs/tile-ir.md); take the chain.
    while is_block_launch(body):
        launches.append((body.node.var, body.value))
        body = body.body
    launches.sort(key=lambda item: BLOCK_TAGS.index(_tag_of(item[0], launch)))
    dtype = str(launches[0][0].ty.dtype)
    fused = tirx.Var("block" if len(launches) > 1 else str(launches[0][0]), dtype)
    total = launches[0][1]
    for _, extent in launches[1:]:
        total = total * extent
    replace, stride = {}, None
    for var, extent in launches:  # x fastest, as blockIdx.x varies fastest on a GPU
        index = fused if stride is None else tirx.floordiv(fused, stride)
        if len(launches) > 1 and var is not launches[-1][0]:
            index = tirx.floormod(index, extent)
        replace[var.__chandle__()] = index
        stride = extent if stride is None else stride * extent
    body = tvm_ffi.structural_map(body, [(tirx.Var, lambda v: replace.get(v.__chandle__(), v))])
    kind = tirx.ForKind.PARALLEL if parallel else tirx.ForKind.SERIAL
    return tirx.For(fused, tirx.const(0, dtype), total, kind, body,
                    annotations={BLOCK_LOOP: tirx.IntImm("int32", 1)})


def _tag_of(var, launch) -> str:
    node = launch
    while is_block_launch(node):
        if node.node.var.same_as(var):
            return str(node.node.thread_tag)
        node = node.body
    raise AssertionError("block var not in its launch chain")


def blocks_to_loops(func: tirx.PrimFunc, parallel: bool = True) -> tirx.PrimFunc:
    def on_attr(attr, mutator):
        if is_block_launch(attr):
            return _fuse(attr, parallel)
        return mutator.default_mutate(attr)

    return func.with_body(tvm_ffi.structural_mutate(func.body, [(tirx.AttrStmt, on_attr)]))


def BlocksToLoops(parallel: bool = True):  # noqa: N802 (TVM pass naming)
    @tirx.transform.prim_func_pass(opt_level=0, name="tl.cpu.BlocksToLoops")
    def _pass(func, _mod, _ctx):
        return blocks_to_loops(func, parallel)

    return _pass
