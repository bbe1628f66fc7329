"""T.cumsum: inclusive prefix sums along ``dim`` of a shared (or global) tile.

One thread scans one line (all other indices fixed), lines dealt round-robin over the block; the
running sum is kept in a register, so ``src`` and ``dst`` may be the same buffer. Fragments are
refused: their lines are spread over threads (copy them to shared memory first).
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Cumsum, TileOp
from tilelang_core.ir import region as R

from .lowering import FRAGMENT, cast, dtype, load, scope, state_of
from .transform.state import if_then, loop, seq


def lower_cumsum(call, ctx):
    op: Cumsum = TileOp.from_stmt(call)
    st = state_of(ctx)
    if FRAGMENT in (scope(op.src), scope(op.dst)):
        raise ctx.error("cumsum", f"'{op.src.source.name}' -> '{op.dst.source.name}' involves a "
                        f"fragment; T.cumsum on the {st.dialect.kind} backend scans shared memory: T.copy the "
                        f"fragment into a T.alloc_shared buffer first")
    extents = [R.as_int(r.extent) for r in op.src.region]
    if any(e is None for e in extents):
        raise ctx.error("cumsum", "the scanned tile must have constant extents")
    length = extents[op.dim]
    others = [d for d in range(len(extents)) if d != op.dim]
    lines = 1
    for d in others:
        lines *= extents[d]
    threads = st.num_threads
    acc_dtype = dtype(op.dst)
    acc = st.alloc(f"{op.dst.source.name}_scan", (1,), acc_dtype, "local")

    def index_of(line, step):
        full, rest = [None] * len(extents), line
        for d in reversed(others):
            full[d] = tirx.floormod(rest, extents[d])
            rest = tirx.floordiv(rest, extents[d])
        full[op.dim] = (length - 1 - step) if op.reverse else step
        return full

    def body(it):
        line = it * threads + st.thread_var

        def step(s):
            tile = index_of(line, s)
            src = [r.min + i for r, i in zip(op.src.region, tile)]
            dst = [r.min + i for r, i in zip(op.dst.region, tile)]
            running = tirx.BufferLoad(acc, [0]) + cast(load(op.src, src), acc_dtype)
            return seq([tirx.BufferStore(acc, running, [0]),
                        tirx.BufferStore(op.dst.source, tirx.BufferLoad(acc, [0]), dst)])

        scan = seq([tirx.BufferStore(acc, tirx.const(0, acc_dtype), [0]),
                    loop("s", length, step, tirx.ForKind.SERIAL)])
        return if_then(line < lines, scan) if lines % threads else scan

    return loop("line", (lines + threads - 1) // threads, body, tirx.ForKind.SERIAL)

