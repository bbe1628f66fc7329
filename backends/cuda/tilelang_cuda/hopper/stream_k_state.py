"""What a stream-K piece carries out of its k-range, and how two pieces' states combine
(stream_k.py cuts a tile's loop between CTAs; this module says whether that is sound).

A fragment is carried when the loop writes it and the code before the loop initializes it (a
piece runs that code again, so it starts from the initial state). Two kinds are understood:

    sums      float32 fragments cleared to 0 before the loop, written in the loop only by gemms
              accumulating into them (GEMM) and, with a row max, by one rescaling statement
              ``X[i, j] = X[i, j] * S[i]`` (``+ rowsum[i]`` for a row sum): combined by addition
    row max   one fragment M filled with -inf, written in the loop only by
              ``T.reduce_max(..., M, clear=False)``, after the loop copied it to M' and before
              ``S[i] = exp2(M'[i] * c - M[i] * c)`` (or exp, or ``(M' - M) * c``): the online
              softmax of FlashAttention, where every sum is rescaled by S once per iteration

With a row max, each sum is Σ_k w_k exp(c (s_k - M)) over the piece's iterations, so a finisher
holding (M, X) combines a partner's (Mp, Xp) with the kernel's own S statement:

    M' = M;  M = max(M, Mp);  S = f(M', M);  X *= S      (its own state, rescaled to the new max)
    M' = Mp;                  S = f(M', M);  X += Xp * S (the partner's, rescaled likewise)

That holds when each iteration's terms are relative to the max they were computed with: the
sums may add only P = exp2(x c - M c) (written after the reduce_max, the same c and exp as S)
through gemms whose A is P or a copy of it, and the row sums of P (T.reduce_sum). M' and S are
the kernel's temporaries, dead after the loop unless the code after it reads them (then this
declines). Anything else carried is declined with the reason, and the kernel keeps whole
tiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tvm
from tvm import tirx

from tilelang_core.ir import Copy, Fill, Gemm, Reduce, TileOp, is_tile_op
from tilelang_core.simt.lowering import covers_whole_buffer
from tilelang_core.simt.transform.insert_barriers import touched
from tilelang_core.simt.transform.split_masked_fills import is_const_zero


@dataclass
class RowMax:
    """The online softmax's running maximum and the statements that rescale by it."""
    max: object          # M
    prev: object         # M', the loop's copy of M before its reduce_max
    copy: object         # that copy statement, reused by the combine
    scale: object        # S
    scale_stmt: object   # S[i] = f(M'[i], M[i]), reused by the combine
    scale_index: int     # its position in the loop
    #: what the sums may add: P = exp(c (x - M)) (FlashAttention's probabilities, after the
    #: reduce_max) and its copies as gemm A operands, its row sums as the row sum's terms
    operands: set = field(default_factory=set)
    row_sums: set = field(default_factory=set)
    axes: dict = field(default_factory=dict)  # sum fragment -> which of its indices S is read at


@dataclass
class CarriedState:
    sums: list
    row_max: RowMax | None = None

    @property
    def fragments(self) -> list:
        """Everything a writer stores: the sums, then the row max."""
        return self.sums + ([self.row_max.max] if self.row_max else [])


def carried_state(before, loop_stmts, after) -> tuple[CarriedState | None, str]:
    """(the state, "") when a piece's loop state combines as in the module docstring, else
    (None, why not)."""
    written_in_loop = [touched(s)[1] for s in loop_stmts]
    in_loop = set().union(*written_in_loop) if loop_stmts else set()
    initial = {}
    for stmt in before:
        op = TileOp.from_stmt(stmt) if is_tile_op(stmt) else None
        for buf in touched(stmt)[1] & in_loop:
            if buf in initial or not isinstance(op, Fill) or not op.dst.source.same_as(buf) \
                    or not covers_whole_buffer(op.dst):
                return None, f"{buf.name} is written before the loop other than by one T.fill"
            initial[buf] = op.value
    if not any(isinstance(TileOp.from_stmt(s), Gemm) for s in loop_stmts if is_tile_op(s)):
        return None, "no gemm in the loop"
    if not initial:
        return None, "the loop carries no accumulator"
    maxima = [b for b, v in initial.items() if _is_neg_inf(v)]
    sums = [b for b, v in initial.items() if is_const_zero(v)]
    others = [b.name for b in initial if b not in maxima and b not in sums]
    if others:
        return None, f"{others[0]} is initialized to a value other than 0 or -inf"
    if len(maxima) > 1:
        return None, "more than one running maximum"
    row_max = None
    if maxima:
        row_max, why = _row_max(maxima[0], loop_stmts, written_in_loop)
        if row_max is None:
            return None, why
        after_reads = set().union(*(touched(s)[0] for s in after)) if after else set()
        for temp in (row_max.prev, row_max.scale):
            if temp in after_reads:
                return None, f"{temp.name} is read after the loop"
    for buf in sums:
        for stmt in loop_stmts:
            op = TileOp.from_stmt(stmt) if is_tile_op(stmt) else None
            if isinstance(op, Reduce) and op.kind == "max" and op.dst.source.same_as(buf):
                return None, f"{buf.name} is a running maximum initialized to 0, not -inf"
    for buf in sums:
        why = _check_sum(buf, loop_stmts, written_in_loop, row_max)
        if why:
            return None, why
    return CarriedState(sums, row_max), ""


def _check_sum(buf, loop_stmts, written, row_max) -> str:
    """"" when ``buf`` is written in the loop only by accumulating gemms (and, with a row max, one
    rescaling by S before them), else why not."""
    if str(buf.ty.dtype) != "float32":
        return f"accumulator {buf.name} is not float32"
    scaled_at = None
    for i, stmt in enumerate(loop_stmts):
        if buf not in written[i]:
            continue
        op = TileOp.from_stmt(stmt) if is_tile_op(stmt) else None
        if isinstance(op, Gemm) and op.C.source.same_as(buf):
            if op.clear_accum or any("clear" in str(key) for key in op.options):
                return f"a gemm of the loop clears {buf.name}"
            if row_max is not None and scaled_at is None:
                return f"{buf.name} is accumulated before it is rescaled by {row_max.scale.name}"
            if row_max is not None and op.A.source not in row_max.operands:
                return f"{buf.name} accumulates {op.A.source.name}, not exp2(x c - {row_max.max.name} c) or a copy"
            continue
        axis = _rescale_axis(stmt, buf, row_max) if row_max is not None else None
        if axis is None or scaled_at is not None:
            return f"{buf.name} is written in the loop other than by accumulating gemms" + \
                (f" and one rescaling by {row_max.scale.name}" if row_max is not None else "")
        if i < row_max.scale_index:
            return f"{buf.name} is rescaled before {row_max.scale.name} is computed"
        scaled_at = i
        row_max.axes[buf] = axis
    if row_max is not None and scaled_at is None:
        return f"{buf.name} is not rescaled by {row_max.scale.name} in the loop"
    return ""


def _row_max(m, loop_stmts, written):
    """The RowMax of fragment ``m`` (module docstring), or (None, why not)."""
    writers = [i for i, w in enumerate(written) if m in w]
    op = TileOp.from_stmt(loop_stmts[writers[0]]) if is_tile_op(loop_stmts[writers[0]]) else None
    if len(writers) != 1 or not isinstance(op, Reduce) or op.kind != "max" or op.clear or not op.dst.source.same_as(m):
        return None, f"{m.name} (initialized to -inf) is written in the loop other than by one T.reduce_max(clear=False)"
    at = writers[0]
    ops = [TileOp.from_stmt(s) if is_tile_op(s) else None for s in loop_stmts[:at]]
    copies = [i for i, c in enumerate(ops) if isinstance(c, Copy) and c.src.source.same_as(m)
              and covers_whole_buffer(c.src) and covers_whole_buffer(c.dst)]
    if len(copies) != 1:
        return None, f"the loop does not copy {m.name} once before its reduce_max"
    prev = ops[copies[0]].dst.source
    if sum(prev in w for w in written) != 1:
        return None, f"{prev.name} is written in the loop other than by the copy of {m.name}"
    for i in range(at + 1, len(loop_stmts)):
        found = _scale_of(loop_stmts[i], prev, m)
        if found is not None:
            scale, form = found
            if sum(scale in w for w in written) != 1:
                return None, f"{scale.name} is written in the loop more than once"
            operands, row_sums = _probabilities(loop_stmts, written, m, form, at)
            return RowMax(m, prev, loop_stmts[copies[0]], scale, loop_stmts[i], i, operands, row_sums), ""
    return None, f"no statement S[i] = exp2(({prev.name}[i] - {m.name}[i]) * c) after the reduce_max"


def _parallel_store(stmt):
    """(loop variables, store) of a T.Parallel nest around one BufferStore, else None."""
    loop_vars = []
    while isinstance(stmt, tirx.For) and stmt.annotations is not None and "tl.parallel" in stmt.annotations:
        loop_vars.append(stmt.loop_var)
        stmt = stmt.body
    return (loop_vars, stmt) if loop_vars and isinstance(stmt, tirx.BufferStore) else None


def _load_of(expr, buf, indices) -> bool:
    return isinstance(expr, tvm.ir.TensorLoad) and expr.source.same_as(buf) and len(expr.indices) == len(indices) and \
        all(a.same_as(b) for a, b in zip(expr.indices, indices))


def _relative_exp(value, m, i):
    """(exp op name, c, x) when ``value`` is exp2 or exp of x c - M[i] c, (x - M[i]) c or x - M[i]
    (c = 1); else None."""
    if not (isinstance(value, tvm.ir.Call) and str(value.op.name) in ("tirx.exp2", "tirx.exp")):
        return None
    f, is_m = value.args[0], (lambda e: _load_of(e, m, [i]))
    if isinstance(f, tirx.Sub) and is_m(f.b):
        return str(value.op.name), 1.0, f.a
    if isinstance(f, tirx.Sub) and all(isinstance(t, tirx.Mul) for t in (f.a, f.b)) and is_m(f.b.a) \
            and _same_const(f.a.b, f.b.b):
        return str(value.op.name), float(f.a.b.value), f.a.a
    if isinstance(f, tirx.Mul) and isinstance(f.a, tirx.Sub) and is_m(f.a.b) and isinstance(f.b, tirx.FloatImm):
        return str(value.op.name), float(f.b.value), f.a.a
    return None


def _scale_of(stmt, prev, m):
    """(S, its exp and c) when ``stmt`` is ``S[i] = exp2((M'[i] - M[i]) c)`` in one of
    _relative_exp's forms; else None."""
    found = _parallel_store(stmt)
    if found is None or len(found[0]) != 1:
        return None
    (i,), store = found
    rel = _relative_exp(store.value, m, i)
    if rel is None or not _load_of(rel[2], prev, [i]) or not store.indices[0].same_as(i):
        return None
    return store.buffer, rel[:2]


def _probabilities(loop_stmts, written, m, form, after: int) -> tuple[set, set]:
    """(P and its copies, P's row sums): P written after index ``after`` by ``P[i, j] = exp2(x c -
    M[i] c)`` with S's exp and c (``form``) and not again; its copies and row sums taken after that
    and written nowhere else."""
    operands, row_sums = set(), set()
    for at in range(after + 1, len(loop_stmts)):
        found = _parallel_store(loop_stmts[at])
        if found is None or len(found[0]) != 2:
            continue
        (i, _), store = found
        rel = _relative_exp(store.value, m, i)
        p = store.buffer
        if rel is None or rel[:2] != form or any(p in w for w in written[at + 1:]):
            continue
        operands.add(p)
        for k in range(at + 1, len(loop_stmts)):
            op = TileOp.from_stmt(loop_stmts[k]) if is_tile_op(loop_stmts[k]) else None
            if isinstance(op, (Copy, Reduce)) and op.src.source.same_as(p) and covers_whole_buffer(op.src) \
                    and covers_whole_buffer(op.dst):
                dst = op.dst.source
                if sum(dst in w for w in written) != 1:
                    continue
                if isinstance(op, Copy):
                    operands.add(dst)
                elif op.kind == "sum" and op.clear and op.dim in (1, -1):
                    row_sums.add(dst)
    return operands, row_sums


def _rescale_axis(stmt, buf, row_max):
    """The index of ``buf`` that S is read at when ``stmt`` is ``X[...] = X[...] * S[v]``, or that
    plus a row sum of P at the same row (``l[i] = l[i] * S[i] + rowsum[i]``); else None."""
    scale = row_max.scale
    found = _parallel_store(stmt)
    if found is None or not found[1].buffer.same_as(buf):
        return None
    loop_vars, store = found
    if len(store.indices) != len(loop_vars) or not all(x.same_as(v) for x, v in zip(store.indices, loop_vars)):
        return None
    value, rest = store.value, None
    if isinstance(value, tirx.Add):
        value, rest = (value.a, value.b) if isinstance(value.a, tirx.Mul) else (value.b, value.a)
    if not isinstance(value, tirx.Mul) or (rest is not None and buf in touched(tirx.Evaluate(rest))[0]):
        return None
    x, s = (value.a, value.b) if _load_of(value.a, buf, loop_vars) else (value.b, value.a)
    if not _load_of(x, buf, loop_vars) or not (isinstance(s, tvm.ir.TensorLoad) and s.source.same_as(scale)
                                               and len(s.indices) == 1):
        return None
    if rest is not None and not (isinstance(rest, tvm.ir.TensorLoad) and rest.source in row_max.row_sums
                                 and len(rest.indices) == 1 and rest.indices[0].same_as(s.indices[0])):
        return None
    return next((d for d, v in enumerate(loop_vars) if s.indices[0].same_as(v)), None)


def _same_const(x, y) -> bool:
    return isinstance(x, tirx.FloatImm) and isinstance(y, tirx.FloatImm) and float(x.value) == float(y.value)


def _is_neg_inf(x) -> bool:
    return isinstance(x, tirx.FloatImm) and float(x.value) == float("-inf")


__all__ = ["CarriedState", "RowMax", "carried_state"]
