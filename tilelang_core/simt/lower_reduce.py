"""T.reduce_*: per-thread partials, warp shuffles, then shared memory across warps.

The destination layout is the source layout reduced along ``dim`` (layout inference guarantees
it): each thread folds the source registers of a row into the destination register of that row;
then for every thread digit of the reduced axis, lanes inside a warp (``SimtDialect.warp_size``
lanes: a CUDA warp, an AMD wavefront, an Apple simdgroup) combine by ``shuffle_xor`` butterflies
and warps combine through a shared workspace (write, barrier, read all, barrier). Where the lanes
of a reduction are a whole warp and the dialect has a ``warp_reduce`` helper for its kind
(Metal's ``simd_sum``), one call replaces the butterfly.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx

from tilelang_core.ir import Reduce, TileOp
from tilelang_core.ir import region as R
from tilelang_core.ir.ops import BITWISE_REDUCE_KINDS, bitwise_combine, bitwise_identity
from tilelang_core.layout import THREAD
from tilelang_core.lowering import nan_propagating

from . import intrinsics as I
from .lower_reduce_shared import lower_reduce_shared
from .lowering import FRAGMENT, dtype, require_whole_fragment, scope, state_of
from .paired_fold import fold_pair, paired_helper, register_pairing
from .transform.state import loop, seq


def identity(kind: str, dt: str):
    if kind in BITWISE_REDUCE_KINDS:
        return bitwise_identity(kind, dt)
    if kind == "max":
        return tvm.tirx.min_value(dt)
    if kind == "min":
        return tvm.tirx.max_value(dt)
    return tirx.const(0, dt)


def combine(kind: str, a, b):
    if kind in ("max", "absmax"):
        return tirx.Max(a, b)
    if kind == "min":
        return tirx.Min(a, b)
    if kind in BITWISE_REDUCE_KINDS:
        return bitwise_combine(kind, a, b)
    return a + b


def same_placement(a, b) -> bool:
    """Do layouts ``a`` and ``b`` put every element in the same registers of the same threads?
    Equal digits do; so do two layouts that hold the tile whole in every thread in one register
    order (a reduced row statistic, and a T.alloc_reducer accumulator that plain code also reads,
    are both that, spelled with different replicate digits)."""
    if a.digits == b.digits and a.replica_digits == b.replica_digits:
        return True
    if tuple(a.shape) != tuple(b.shape) or not (a.is_whole and b.is_whole):
        return False
    elements = list(itertools.product(*(range(int(n)) for n in a.shape)))
    return len(elements) <= 4096 and all(a.local_of(*e) == b.local_of(*e) for e in elements)


def lower_reduce(call, ctx):
    op: Reduce = TileOp.from_stmt(call)
    st = state_of(ctx)
    kind = op.kind
    both = (lambda a, b: combine(kind, a, b))
    comb = nan_propagating(both) if op.nan_propagate else both
    if scope(op.src) != FRAGMENT or scope(op.dst) != FRAGMENT:  # a shared side: by output element
        return lower_reduce_shared(op, st, ctx, identity, comb)
    require_whole_fragment(op.src, st, f"T.reduce_{op.kind}")
    require_whole_fragment(op.dst, st, f"T.reduce_{op.kind}")
    src_layout = st.layouts[op.src.source]
    dst_layout = st.layouts[op.dst.source]
    expected = src_layout.reduce(op.dim, keepdim=len(dst_layout.shape) == len(src_layout.shape))
    if not same_placement(expected, dst_layout):
        raise ctx.error("reduce", f"destination '{op.dst.source.name}' has layout {dst_layout}, but "
                        f"reducing '{op.src.source.name}' ({src_layout}) along dim {op.dim} gives "
                        f"{expected}; use a fresh fragment for the result")
    acc_dt = dtype(op.dst)
    src_regs, dst_regs = st.local_buffer(op.src.source), st.local_buffer(op.dst.source)
    red = st.alloc(f"{op.dst.source.name}_red", (dst_layout.local_size,), acc_dt, "local")
    tx = st.thread_var
    stmts = [loop("r", dst_layout.local_size,
                  lambda r: tirx.BufferStore(red, identity(kind, acc_dt), [r]), tirx.ForKind.UNROLLED)]

    def output_of(l):
        idx = src_layout.index_of(tx, l)
        kept = [i for d, i in enumerate(idx) if d != op.dim]
        if len(dst_layout.shape) == len(src_layout.shape):
            kept.insert(op.dim, 0)
        return st.simplify(dst_layout.local_of(*kept))

    def fold(l):
        r = output_of(l)
        value = tirx.BufferLoad(src_regs, [l])
        value = value if str(value.ty) == acc_dt else tirx.Cast(acc_dt, value)
        if kind in ("abssum", "absmax"):
            value = tvm.tirx.abs(value)
        return tirx.BufferStore(red, comb(tirx.BufferLoad(red, [r]), value), [r])

    paired = _paired_fold(op, st, red, src_regs, output_of, src_layout.local_size, comb)
    stmts = stmts if paired is None or paired[0] == "outputs" else []  # ("lanes" sets red itself)
    stmts.append(paired[1] if paired else loop("l", src_layout.local_size, fold, tirx.ForKind.UNROLLED))
    warp = st.dialect.warp_size
    for digit in (x for x in src_layout.digits[op.dim] if x.space == THREAD and x.extent > 1):
        for part in split_at_warp(digit, warp):
            whole_warp = _WARP_REDUCE_KIND.get(kind) in st.dialect.warp_reduce and \
                part.stride == 1 and part.extent == warp and not op.nan_propagate
            if whole_warp:
                helper = st.dialect.warp_reduce[_WARP_REDUCE_KIND[kind]]
                stmts.append(loop("r", dst_layout.local_size, lambda r: tirx.BufferStore(
                    red, I.call(helper, tirx.BufferLoad(red, [r]), dtype=acc_dt), [r]),
                    tirx.ForKind.UNROLLED))
            elif pairs_by_xor(part, st.num_threads, warp):
                stmts.append(_shuffle(st, red, dst_layout.local_size, part, comb, st.dialect.shuffle_xor))
            else:  # across warps, or lanes a butterfly cannot pair (24 threads; a digit of stride 3)
                stmts.append(_across_warps(st, red, dst_layout.local_size, part, kind, comb, acc_dt))

    def write(r):
        value = tirx.BufferLoad(red, [r])
        if not op.clear:
            value = comb(tirx.BufferLoad(dst_regs, [r]), value)
        return tirx.BufferStore(dst_regs, value, [r])

    stmts.append(loop("r", dst_layout.local_size, write, tirx.ForKind.UNROLLED))
    return seq(stmts)


def _paired_fold(op, st, red, src_regs, output_of, local_size: int, comb):
    """(pairing, the fold of every source register into ``red``) two registers at a time
    (paired_fold.py), or None where the dialect, dtypes or layouts do not pair up. "lanes" sets
    ``red`` whole (its identity start is not needed); "outputs" folds into it."""
    acc_dt = str(red.ty.dtype)
    helper = paired_helper(st.dialect, op.kind, op.nan_propagate, acc_dt, dtype(op.src))
    if helper is None or local_size > 4096:
        return None
    outputs = [R.as_int(output_of(l)) for l in range(local_size)]
    pairing = register_pairing(outputs)
    if pairing == "outputs":
        return pairing, seq([fold_pair(helper, tirx.BufferLoad(red, [outputs[l]]), tirx.BufferLoad(src_regs, [l]))
                             for l in range(0, local_size, 2)])
    if pairing != "lanes":
        return None
    n = int(red.ty.shape[0])
    lanes = st.alloc(f"{red.name}_pairs", (2 * n,), acc_dt, "local")
    start = seq([tirx.BufferStore(lanes, identity(op.kind, acc_dt), [i]) for i in range(2 * n)])
    folds = [fold_pair(helper, tirx.BufferLoad(lanes, [2 * outputs[l]]), tirx.BufferLoad(src_regs, [l]))
             for l in range(0, local_size, 2)]
    ends = [tirx.BufferStore(red, comb(tirx.BufferLoad(lanes, [2 * r]), tirx.BufferLoad(lanes, [2 * r + 1])), [r])
            for r in range(n)]
    return pairing, seq([start] + folds + ends)


#: reduction kind -> the SimtDialect.warp_reduce helper that combines partials (abs already applied)
_WARP_REDUCE_KIND = {"sum": "sum", "abssum": "sum", "max": "max", "absmax": "max", "min": "min"}


def split_at_warp(digit, warp: int) -> list:
    """A thread digit spanning lanes and warps (stride 1, extent 128, warp 32) -> its lane part,
    reduced by shuffles, and its warp part (extent 4, stride 32), reduced through shared memory."""
    from tilelang_core.layout import Digit

    if digit.stride >= warp or digit.stride * digit.extent <= warp or warp % digit.stride:
        return [digit]
    lanes = warp // digit.stride
    if digit.extent % lanes:
        return [digit]
    return [Digit(lanes, THREAD, digit.stride), Digit(digit.extent // lanes, THREAD, warp)]


def pairs_by_xor(digit, threads: int, warp: int) -> bool:
    """Whether a butterfly over ``digit`` (its lanes ``t`` and ``t ^ stride * 2**k``) pairs each
    thread with the one that differs from it in this digit alone, inside one warp, among the
    block's ``threads``. With stride and extent powers of two the xor flips exactly the digit's
    bits, and every partner exists when whole groups of ``stride * extent`` lanes do. A digit of
    stride 3 (a (2, 3) tile on 24 threads) or 10 does not pair so: xor with 3 pairs lane 1 with
    lane 2, and xor with 10 reaches past 20 threads (wrong sums, or reads of lanes that do not
    exist)."""
    s, e = digit.stride, digit.extent
    if e & (e - 1) or s & (s - 1) or s * e > warp:
        return False
    return e == 1 or threads % (s * e) == 0


def _shuffle(st, red, size: int, digit, comb, helper: str):
    """Butterfly over the lanes that differ only in this digit (strides s, 2s, ... inside a warp;
    its extent a power of two).
    The partner's value lands in a register first: every lane must run the shuffle, and a
    combine that selects (NaN propagation) would otherwise put it in a branch."""
    steps = []
    offset = digit.stride
    while offset < digit.stride * digit.extent:
        steps.append(offset)
        offset *= 2

    partner = st.alloc(f"{red.name}_partner", (1,), str(red.ty.dtype), "local")

    def body(r):
        out = []
        for off in steps:
            current = tirx.BufferLoad(red, [r])
            out.append(tirx.BufferStore(partner, I.call(helper, current, tirx.const(off, "int32"),
                                                        dtype=str(current.ty)), [0]))
            out.append(tirx.BufferStore(red, comb(current, tirx.BufferLoad(partner, [0])), [r]))
        return seq(out)

    return loop("r", size, body, tirx.ForKind.UNROLLED)


def _across_warps(st, red, size: int, digit, kind: str, comb, dt: str):
    """Threads differing in this digit exchange partials through shared memory (digits across
    warps, and those inside one whose extent is not a power of two)."""
    threads = st.num_threads
    ws = st.alloc_scratch(f"{red.name}_ws", (size * threads,), dt)
    tx = st.thread_var
    own = tirx.floormod(tirx.floordiv(tx, digit.stride), digit.extent)
    base = tx - own * digit.stride
    stmts = [loop("r", size, lambda r: tirx.BufferStore(ws, tirx.BufferLoad(red, [r]), [r * threads + tx]),
                  tirx.ForKind.UNROLLED), I.syncthreads()]

    def gather(r):
        acc = identity(kind, dt)
        for j in range(digit.extent):
            acc = comb(acc, tirx.BufferLoad(ws, [r * threads + base + j * digit.stride]))
        return tirx.BufferStore(red, acc, [r])

    stmts.append(loop("r", size, gather, tirx.ForKind.UNROLLED))
    stmts.append(I.syncthreads())  # the workspace is reused by the next reduction
    return seq(stmts)
