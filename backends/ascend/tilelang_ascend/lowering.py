"""Ascend lowering rules: each tile op -> data movement, Cube and Vector instructions.

Rules emit into the merged stream through the context (transform/lower_to_isa.py); the sync pass
orders them afterwards, so a rule only says what moves where.

    T.copy   GM -> L1          CopyGmToL1 (MTE2, ND -> NZ)
             GM -> UB          CopyGmToUb (MTE2) [+ VCast when dtypes differ]
             UB -> GM          [VCast +] CopyUbToGm (MTE3)
             L0C -> GM         Fixpipe (FIX, NZ -> ND, float32 -> output dtype)
             UB -> UB          VUnary copy / VCast
             UB -> L1, L0C -> UB   through a per-block GM workspace (the cores share no memory)
             L1 -> L0A/L0B     LoadL1ToL0 (MTE1)
    T.gemm   LoadL1ToL0 A/B per K chunk sized to L0A/L0B, Mmad into L0C; an accumulator the Vector
             core also uses gets its product through a workspace and a Vector add
    T.fill   UB: VDup; L0C: folded into the next Mmad's init flag (zero fills only)
    T.reduce VReduce (+ VUnary abs, + VBinary to fold into dst when clear=False)
    T.cumsum [VCast/copy into dst +] VScan in place; a reversed row scan is a forward VScan,
             VReduce, VBroadcast and two VBinary subs
    T.atomic_add/max/min (tile into GM)   Fixpipe / CopyUbToGm in the GM atomic write mode
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import region as R
from tilelang_core.ir.ops import BITWISE_REDUCE_KINDS

from . import isa
from .target import memory_sizes
from .transform.lower_to_isa import IsaContext, ascend_rule


# -- operands -------------------------------------------------------------------------------------
def mem_of(region, ctx: IsaContext) -> str:
    if R.scope_of(region) in ("global", ""):
        return "GM"
    return ctx.buffer(region.source).mem


def _const(x, ctx, what):
    v = R.as_int(x)
    if v is None:
        raise ctx.error(what, f"the extent {x} must be a compile-time constant")
    return v


def gm_tile(region, ctx: IsaContext, what: str) -> isa.GmTile:
    tensor = ctx.params.get(region.source)
    if tensor is None:
        raise ctx.error(what, f"'{R.name_of(region)}' is not a parameter of the kernel")
    extents = [_const(e, ctx, what) for e in R.extents_of(region)]
    last = len(extents) - 1
    rows_dims = [d for d, e in enumerate(extents[:-1]) if e != 1]
    if len(rows_dims) > 1:
        raise ctx.error(what, f"the global tile {R.fmt_region(region)} has more than two "
                              f"non-unit dimensions; Ascend data movement is 2-D (rows of a "
                              f"contiguous innermost dimension)")
    return isa.GmTile(tensor, R.mins_of(region), extents, rows_dims[0] if rows_dims else None, last)


def may_be_ragged(tile: isa.GmTile, ctx: IsaContext) -> bool:
    """Can part of the tile fall outside its tensor (so the on-chip copy must be zeroed first)?"""
    if tile.tensor.workspace:
        return False
    for lo, ext, size in zip(tile.mins, tile.extents, tile.tensor.shape):
        if not ctx.analyzer.can_prove(lo + int(ext) <= size):
            return True
    return False


def ub_tile(region, ctx: IsaContext, what: str) -> isa.Tile:
    buf = ctx.vector_buffer(region.source)
    mins, extents = R.mins_of(region), [_const(e, ctx, what) for e in R.extents_of(region)]
    if len(extents) == 1:
        row, rows, (col, cols) = 0, 1, (mins[0], extents[0])
    else:
        row, rows, col, cols = mins[0], extents[0], mins[1], extents[1]
    col = R.as_int(col)
    esize = isa.dtype_bytes(buf.dtype)
    if col is None or (col * esize) % 32:
        raise ctx.error(what, f"the UB tile {R.fmt_region(region)} starts at column {col}, not "
                              f"on a 32-byte block; Vector instructions need block-aligned rows")
    return isa.Tile(buf, rows, cols, row=row, col=col, slot=ctx.slot(buf))


def whole_mat(region, ctx: IsaContext, what: str) -> isa.Mat:
    buf = ctx.buffer(region.source)
    for m, e, full in zip(R.mins_of(region), R.extents_of(region), (buf.rows, buf.cols)
                          if len(R.extents_of(region)) == 2 else (buf.cols,)):
        if R.as_int(m) != 0 or R.as_int(e) != full:
            raise ctx.error(what, f"{R.fmt_region(region)}: Cube-side buffers ({buf.mem}) move "
                                  f"as whole matrices; use the whole buffer")
    return isa.Mat(buf, ctx.slot(buf))


def tile_of_buffer(buf: isa.Buffer, ctx: IsaContext) -> isa.Tile:
    return isa.Tile(buf, buf.rows, buf.cols, slot=ctx.slot(buf))


def _same_shape(ctx, what, a_rows, a_cols, b_rows, b_cols):
    if (a_rows, a_cols) != (b_rows, b_cols):
        raise ctx.error(what, f"the tiles are {a_rows}x{a_cols} and {b_rows}x{b_cols}; Ascend "
                              f"copies move row-major 2-D tiles of equal shape (a column of a "
                              f"matrix into a 1-D buffer is not supported yet)")


# -- transfers between the cores ------------------------------------------------------------------
def ub_to_l1(ctx: IsaContext, src: isa.Tile, dst: isa.Mat) -> None:
    """Vector data to the Cube: UB -> GM workspace (MTE3) -> L1 (MTE2)."""
    ws = ctx.workspace(src.rows, src.cols, src.dtype)
    ctx.emit(isa.CopyUbToGm(src, ws))
    ctx.emit(isa.CopyGmToL1(ws, dst))


def l0c_to_ub(ctx: IsaContext, src: isa.Mat, dst: isa.Tile) -> None:
    """Cube result to the Vector core: Fixpipe to a GM workspace (casting), then MTE2 to UB."""
    ws = ctx.workspace(dst.rows, dst.cols, dst.dtype)
    ctx.emit(isa.Fixpipe(src, ws))
    ctx.emit(isa.CopyGmToUb(ws, dst))


def cast_or_copy(ctx: IsaContext, dst: isa.Tile, src: isa.Tile) -> None:
    if src.dtype == dst.dtype:
        ctx.emit(isa.VUnary("copy", dst, src))
    else:
        ctx.emit(isa.VCast(dst, src))


# -- rules --------------------------------------------------------------------------------------
@ascend_rule("copy")
def lower_copy(op, ctx: IsaContext) -> None:
    what = "T.copy"
    src_mem, dst_mem = mem_of(op.src, ctx), mem_of(op.dst, ctx)
    if src_mem == "GM" and dst_mem == "L1":
        src, dst = gm_tile(op.src, ctx, what), whole_mat(op.dst, ctx, what)
        if src.dtype != dst.dtype:
            raise ctx.error(what, f"GM -> L1 cannot convert {src.dtype} to {dst.dtype}; "
                                  f"allocate the L1 buffer in {src.dtype}")
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        if may_be_ragged(src, ctx):  # reads past the tensor must see zeros, not stale tiles
            ctx.emit(isa.InitL1(dst))
        ctx.emit(isa.CopyGmToL1(src, dst))
    elif src_mem == "GM" and dst_mem == "UB":
        src, dst = gm_tile(op.src, ctx, what), ub_tile(op.dst, ctx, what)
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        ragged = may_be_ragged(src, ctx)
        if src.dtype == dst.dtype:
            if ragged:
                ctx.emit(isa.VDup(dst, isa.Scalar(0, dst.dtype)))
            ctx.emit(isa.CopyGmToUb(src, dst))
        else:
            stage = ctx.temp(dst.rows, dst.cols, src.dtype)
            if ragged:
                ctx.emit(isa.VDup(stage, isa.Scalar(0, src.dtype)))
            ctx.emit(isa.CopyGmToUb(src, stage))
            ctx.emit(isa.VCast(dst, stage))
            ctx.release([stage])
    elif src_mem == "UB" and dst_mem == "GM":
        src, dst = ub_tile(op.src, ctx, what), gm_tile(op.dst, ctx, what)
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        if src.dtype == dst.dtype:
            ctx.emit(isa.CopyUbToGm(src, dst))
        else:
            stage = ctx.temp(src.rows, src.cols, dst.dtype)
            ctx.emit(isa.VCast(stage, src))
            ctx.emit(isa.CopyUbToGm(stage, dst))
            ctx.release([stage])
    elif src_mem == "L0C" and dst_mem == "GM":
        src, dst = whole_mat(op.src, ctx, what), gm_tile(op.dst, ctx, what)
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        if src.buf in ctx.pending_init and ctx.pending_init[src.buf] == len(ctx.loops):
            raise ctx.error(what, f"'{src.buf.name}' is copied out of L0C before any T.gemm "
                                  f"wrote it; fill a UB buffer instead")
        ctx.emit(isa.Fixpipe(src, dst))
    elif src_mem == "UB" and dst_mem == "UB":
        src, dst = ub_tile(op.src, ctx, what), ub_tile(op.dst, ctx, what)
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        cast_or_copy(ctx, dst, src)
    elif src_mem == "UB" and dst_mem == "L1":
        src, dst = ub_tile(op.src, ctx, what), whole_mat(op.dst, ctx, what)
        ub_to_l1(ctx, src, dst)
    elif src_mem == "L0C" and dst_mem == "UB":
        l0_to_ub(ctx, whole_mat(op.src, ctx, what), ub_tile(op.dst, ctx, what))
    elif src_mem == "L1" and dst_mem in ("L0A", "L0B"):
        src, dst = whole_mat(op.src, ctx, what), whole_mat(op.dst, ctx, what)
        ctx.emit(isa.LoadL1ToL0(src, dst, 0, 0, src.rows, src.cols))
    else:
        raise ctx.error(what, f"no Ascend data path moves {R.fmt_region(op.src)} ({src_mem}) to "
                              f"{R.fmt_region(op.dst)} ({dst_mem})")


def l0_to_ub(ctx, src: isa.Mat, dst: isa.Tile) -> None:
    l0c_to_ub(ctx, src, dst)


@ascend_rule("fill")
def lower_fill(op, ctx: IsaContext) -> None:
    mem = mem_of(op.dst, ctx)
    if mem == "UB":
        dst = ub_tile(op.dst, ctx, "T.fill")
        ctx.emit(isa.VDup(dst, isa.Scalar(op.value, dst.dtype)))
    elif mem == "L0C":
        # The Cube has no fill: the next Mmad overwrites instead of accumulating (its init flag).
        ctx.pending_init[ctx.buffer(op.dst.source)] = len(ctx.loops)
    else:
        raise ctx.error("T.fill", f"cannot fill '{R.name_of(op.dst)}' in {mem}; fill a UB buffer "
                                  f"(T.alloc_shared/T.alloc_fragment) and copy it")


@ascend_rule("reduce")
def lower_reduce(op, ctx: IsaContext) -> None:
    what = f"T.reduce_{op.kind}"
    if op.nan_propagate:
        raise ctx.error(what, "nan_propagate=True is not supported on the ascend backend yet "
                              "(its VReduce max/min do not say how a NaN combines)")
    src, dst = ub_tile(op.src, ctx, what), ub_tile(op.dst, ctx, what)
    src_rank = len(op.src.region)
    axis = 1 if (src_rank == 1 or op.dim == src_rank - 1) else 0
    if src_rank == 1:
        raise ctx.error(what, "reducing a 1-D tile to one value is not supported yet")
    out_len = src.rows if axis == 1 else src.cols
    if dst.rows * dst.cols != out_len:
        raise ctx.error(what, f"destination has {dst.rows * dst.cols} elements, expected {out_len}")
    dst = isa.Tile(dst.buf, 1, out_len, row=dst.row, col=dst.col, slot=dst.slot)
    if op.kind in BITWISE_REDUCE_KINDS:
        raise ctx.error(what, f"T.reduce_{op.kind}: the vector unit has no bitwise reduction; reduce with "
                              "T.Parallel and T.serial over the elements")
    base = {"sum": "sum", "abssum": "sum", "max": "max", "absmax": "max", "min": "min"}[op.kind]
    temps = []
    if op.kind.startswith("abs"):
        t = ctx.temp(src.rows, src.cols, src.dtype)
        ctx.emit(isa.VUnary("abs", t, src))
        src = t
        temps.append(t)
    if op.clear:
        ctx.emit(isa.VReduce(base, dst, src, axis))
    else:
        part = ctx.temp(1, out_len, dst.dtype)
        ctx.emit(isa.VReduce(base, part, src, axis))
        ctx.emit(isa.VBinary({"sum": "add", "max": "max", "min": "min"}[base], dst, dst, part))
        temps.append(part)
    ctx.release(temps)


@ascend_rule("cumsum")
def lower_cumsum(op, ctx: IsaContext) -> None:
    """dst = inclusive prefix sum of src along dim, accumulated in dst's dtype (as the cpu
    backend does): src is first cast / copied into dst, then dst is scanned in place."""
    what = op.user_name
    if op.kind != "sum":
        raise ctx.error(what, "the ascend backend scans with sums only (VScan); T.cummax is not "
                              "supported on this target yet")
    src, dst = ub_tile(op.src, ctx, what), ub_tile(op.dst, ctx, what)
    rank = len(op.src.region)
    axis = 1 if (rank == 1 or op.dim == rank - 1) else 0
    if axis == 1 and (dst.col != 0 or dst.cols != dst.buf.cols):
        raise ctx.error(what, f"{R.fmt_region(op.dst)}: a scan along rows runs over whole UB rows "
                              f"(CumSum on the last axis); cumsum a buffer of its own and copy")
    same = src.buf is dst.buf and src.slot is dst.slot and str(src.row) == str(dst.row) \
        and src.col == dst.col
    if not same:
        if src.buf is dst.buf:  # overlapping windows of one buffer: read all of src first
            stage = ctx.temp(src.rows, src.cols, src.dtype)
            ctx.emit(isa.VUnary("copy", stage, src))
            src = stage
        cast_or_copy(ctx, dst, src)
    if axis == 0 or not op.reverse:
        ctx.emit(isa.VScan(dst, dst, axis, op.reverse))
    else:
        # A reversed row scan from a forward one: suffix[c] = total - (prefix[c] - x[c]).
        prefix = ctx.temp(dst.rows, dst.cols, dst.dtype)
        total = ctx.temp(1, dst.rows, dst.dtype)
        spread = ctx.temp(dst.rows, dst.cols, dst.dtype)
        ctx.emit(isa.VScan(prefix, dst, 1))
        ctx.emit(isa.VBinary("sub", prefix, prefix, dst))
        ctx.emit(isa.VReduce("sum", total, dst, 1))
        ctx.emit(isa.VBroadcast(spread, total, 1))
        ctx.emit(isa.VBinary("sub", dst, spread, prefix))
        ctx.release([prefix, total, spread])
    if not same and src.buf.origin == "temp":
        ctx.release([src])


def _k_chunk(ctx, m: int, n: int, k: int, dtype: str) -> int:
    """The largest K step whose A (m x k0) and B (k0 x n) chunks fit L0A and L0B."""
    sizes = memory_sizes(ctx.arch)
    es = isa.dtype_bytes(dtype)
    fr, fc = isa.fractal(dtype)
    mp, np_ = isa.round_up(m, fr), isa.round_up(n, fr)
    k0 = isa.round_up(k, fc)
    while k0 > fc and (mp * k0 * es > sizes["L0A"] or k0 * np_ * es > sizes["L0B"]):
        k0 = isa.round_up(k0 // 2, fc)
    if mp * k0 * es > sizes["L0A"] or k0 * np_ * es > sizes["L0B"]:
        raise ctx.error("T.gemm", f"even a {fc}-wide K step of a {m}x{n} product does not fit "
                                  f"L0A/L0B ({sizes['L0A']}/{sizes['L0B']} bytes); use smaller "
                                  f"block_M/block_N")
    return k0


def _l0_slot(ctx, mem: str, dtype: str, elems: int) -> isa.Buffer:
    buf = ctx.l0_operands.get((mem, dtype))
    if buf is None:
        buf = ctx.new_buffer(mem.lower() + "_", mem, dtype, 1, 1, "cube operand")
        buf.capacity = 0
        ctx.l0_operands[(mem, dtype)] = buf
    buf.capacity = max(buf.capacity, elems)
    return buf


def _cube_operand(ctx, region, what) -> isa.Mat:
    """A gemm operand as an L1 matrix, staging a UB operand through the workspace."""
    buf = ctx.buffer(region.source)
    if buf.mem == "L1":
        return whole_mat(region, ctx, what)
    if buf.mem == "UB":
        mirror = ctx.l1_mirror.get(buf)
        if mirror is None:
            mirror = ctx.new_buffer(buf.name + "_l1_", "L1", buf.dtype, buf.rows, buf.cols, "staging")
            ctx.l1_mirror[buf] = mirror
        ub_to_l1(ctx, ub_tile(region, ctx, what), isa.Mat(mirror))
        return isa.Mat(mirror)
    raise ctx.error("T.gemm", f"operand {what} '{buf.name}' in {buf.mem} cannot feed the Cube")


@ascend_rule("gemm")
def lower_gemm(op, ctx: IsaContext) -> None:
    m, n, k = (_const(x, ctx, "T.gemm") for x in op.mnk)
    a_dtype, b_dtype = R.dtype_of(op.A), R.dtype_of(op.B)
    if a_dtype != b_dtype or a_dtype not in ctx.cube_dtypes():
        raise ctx.error("T.gemm", f"the Cube multiplies {', '.join(ctx.cube_dtypes())} operands "
                                  f"of one dtype, got A {a_dtype} and B {b_dtype}; cast the "
                                  f"operands (T.copy into a buffer of that dtype)")
    if op.k_pack != 1:
        raise ctx.error("T.gemm", "k_pack is a GPU option; leave it at 1 on Ascend")
    c_buf = ctx.buffer(op.C.source)
    a_buf, b_buf = ctx.buffer(op.A.source), ctx.buffer(op.B.source)
    direct_a, direct_b = a_buf.mem == "L0A", b_buf.mem == "L0B"
    a = isa.Mat(a_buf, ctx.slot(a_buf)) if direct_a else _cube_operand(ctx, op.A, "A")
    b = isa.Mat(b_buf, ctx.slot(b_buf)) if direct_b else _cube_operand(ctx, op.B, "B")
    if c_buf.mem == "L0C":
        c = isa.Mat(c_buf)
        depth = ctx.pending_init.pop(c_buf, None)
        if op.clear_accum:
            init = True
        elif depth is None:
            init = False
        else:
            init = True
            for loop in ctx.loops[depth:]:
                first = tirx.EQ(loop.var, loop.start)
                init = first if init is True else tirx.And(init, first)
    elif c_buf.mem == "UB":
        scratch = ctx.l0c_scratch.get(c_buf)
        if scratch is None:
            scratch = ctx.new_buffer(c_buf.name + "_l0c_", "L0C", "float32", m, n, "scratch")
            ctx.l0c_scratch[c_buf] = scratch
        c, init = isa.Mat(scratch), True
    else:
        raise ctx.error("T.gemm", f"accumulator '{c_buf.name}' in {c_buf.mem} cannot take Cube "
                                  f"results")
    if direct_a and direct_b:
        ctx.emit(isa.Mmad(a, b, c, m, n, k, init))
    else:
        k0 = _k_chunk(ctx, m, n, k, a_dtype)
        fr, fc = isa.fractal(a_dtype)
        for step, k_lo in enumerate(range(0, k, k0)):
            kk = min(k0, k - k_lo)
            la = _l0_slot(ctx, "L0A", a_dtype, isa.round_up(m, fr) * isa.round_up(kk, fc))
            lb = _l0_slot(ctx, "L0B", b_dtype, isa.round_up(kk, fc) * isa.round_up(n, fr))
            a0, b0 = isa.Mat(la, rows=m, cols=kk), isa.Mat(lb, rows=kk, cols=n)
            if op.transpose_A:
                ctx.emit(isa.LoadL1ToL0(a, a0, k_lo, 0, kk, m, transpose=True))
            else:
                ctx.emit(isa.LoadL1ToL0(a, a0, 0, k_lo, m, kk))
            if op.transpose_B:
                ctx.emit(isa.LoadL1ToL0(b, b0, 0, k_lo, n, kk, transpose=True))
            else:
                ctx.emit(isa.LoadL1ToL0(b, b0, k_lo, 0, kk, n))
            ctx.emit(isa.Mmad(a0, b0, c, m, n, kk, init if step == 0 else False))
    if c_buf.mem == "UB":
        dst = ub_tile(op.C, ctx, "T.gemm")
        prod = ctx.temp(dst.rows, dst.cols, dst.dtype)
        l0c_to_ub(ctx, c, prod)
        if op.clear_accum:
            ctx.emit(isa.VUnary("copy", dst, prod))
        else:
            ctx.emit(isa.VBinary("add", dst, dst, prod))
        ctx.release([prod])


def refuse_atomic_calls(func, kernel: str) -> None:
    """The atomics used as values (``return_prev=True``, ``T.atomic_load``) have no Ascend form:
    the GM write units combine whole tiles and give nothing back."""
    from tilelang_core.errors import LoweringError
    from tilelang_core.ir.atomic_calls import AtomicCall, atomic_calls, fmt_element

    for call in atomic_calls(func.body):
        kind = AtomicCall.from_call(call).kind
        what = "T.atomic_load" if kind == "load" else f"T.atomic_{kind}(return_prev=True)"
        raise LoweringError(f"kernel '{kernel}': {what} on {fmt_element(call.args[0])} is not supported by the "
                            f"Ascend backend, whose atomics are tile writes into global memory "
                            f"(T.atomic_add/max/min(C[...], tile)) that return nothing")


@ascend_rule("atomic")
def lower_atomic(op, ctx: IsaContext) -> None:
    what = f"T.atomic_{op.kind}"
    if op.kind not in isa.GM_ATOMICS:
        raise ctx.error(what, f"the GM write units of Ascend combine by "
                              f"{', '.join(isa.GM_ATOMICS)} only")
    if op.memory_order != "relaxed":
        raise ctx.error(what, f"memory_order={op.memory_order!r} is not available on the Ascend "
                              f"backend: its GM atomic writes order nothing else; leave the order "
                              f"out (relaxed)")
    if not op.src_is_region or mem_of(op.dst, ctx) != "GM":
        raise ctx.error(what, f"only the tile form into global memory is supported "
                              f"(T.atomic_{op.kind}(C[...], tile)); scalar and on-chip atomics "
                              f"are not")
    src_mem = mem_of(op.src, ctx)
    dst = gm_tile(op.dst, ctx, what)
    if src_mem == "L0C":
        src = whole_mat(op.src, ctx, what)
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        ctx.emit(isa.Fixpipe(src, dst, atomic=op.kind))
    elif src_mem == "UB":
        src = ub_tile(op.src, ctx, what)
        _same_shape(ctx, what, src.rows, src.cols, dst.rows, dst.cols)
        if src.dtype != dst.dtype:
            stage = ctx.temp(src.rows, src.cols, dst.dtype)
            ctx.emit(isa.VCast(stage, src))
            ctx.emit(isa.CopyUbToGm(stage, dst, atomic=op.kind))
            ctx.release([stage])
        else:
            ctx.emit(isa.CopyUbToGm(src, dst, atomic=op.kind))
    else:
        raise ctx.error(what, f"cannot combine '{R.name_of(op.src)}' from {src_mem} into global "
                              f"memory")
