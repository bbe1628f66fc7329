"""T.Parallel -> Vector instructions (SIMD over whole UB tiles).

A ``T.Parallel`` nest of one or two loops is the iteration space ``rows x cols`` (one loop: a
single row). Each store in its body becomes a short sequence of Vector instructions evaluating the
right-hand side over the whole space, innermost subexpressions into UB temporaries:

    x[i, j] = T.exp(x[i, j] - row_max[i])
      -> VBroadcast(tmp, row_max, axis=1); VBinary(sub, tmp, x, tmp); VUnary(exp, x, tmp)

What becomes SIMD (anything else is a LoweringError naming the line and the reason):
- loads of UB buffers indexed by the loop variables in loop order: ``x[i, j]`` (the tile),
  ``v[i]`` (a per-row value, broadcast along the row), ``w[j]`` or ``x[r, j]`` (one row, repeated);
- scalars: constants and expressions of block indices, loop counters and lets;
- the loop variables themselves inside integer affine expressions (``bx*32 + i >= k*32 + j``,
  e.g. causal masks): VArange builds the index tile;
- + - * / max min, comparisons, and/or/not, casts, T.if_then_else/Select, exp exp2 log sqrt
  rsqrt abs.
Not SIMD: an index that is not a loop variable (``x[i, j + 1]``, ``x[idx[i]]``), transposed access
(``x[j, i]``), a column ``x[i, c]``, a scalar read of an on-chip buffer, a global buffer,
control flow in the body, and nests deeper than two loops.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.transform.structural import structural_map

from . import isa
from .transform.lower_to_isa import IsaContext
from .vector_global import staged_load, store_to_gm, strip_bounds_guard

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min",
           "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge", "EQ": "eq", "NE": "ne",
           "And": "and", "Or": "or", "BitwiseAnd": "and", "BitwiseOr": "or"}
_UNARY_CALLS = {"tirx.exp": "exp", "tirx.exp2": "exp2", "tirx.log": "log", "tirx.sqrt": "sqrt",
                "tirx.rsqrt": "rsqrt", "tirx.fabs": "abs"}
_CHILDREN = ("a", "b", "value", "condition", "true_value", "false_value")


def _children(e):
    kind = type(e).__name__
    if kind in ("Var", "IntImm", "FloatImm", "StringImm"):
        return []
    if kind == "Call":
        return list(e.args)
    if kind == "TensorLoad":
        return list(e.indices)
    return [getattr(e, c) for c in _CHILDREN if hasattr(e, c)]


def _mentions(e, pred) -> bool:
    if pred(e):
        return True
    return any(_mentions(c, pred) for c in _children(e))


def _dtype(e) -> str:
    return str(e.ty.dtype)


class _Nest:
    """The iteration space of one T.Parallel nest."""

    def __init__(self, loops, ctx: IsaContext):
        self.ctx = ctx
        self.vars = [lp.loop_var for lp in loops]
        extents = []
        for lp in loops:
            lo, ext = lp.min, lp.extent
            if not (isinstance(lo, tirx.IntImm) and lo.value == 0 and isinstance(ext, tirx.IntImm)):
                raise ctx.error("T.Parallel", f"loop '{lp.loop_var}' must run over a constant "
                                              f"range from 0 (got {lo}, extent {ext})")
            extents.append(int(ext.value))
        self.rows, self.cols = (1, extents[0]) if len(extents) == 1 else tuple(extents)
        self.temps: list = []
        self.staged: dict = {}  # global tiles already copied into UB for this statement

    def axis(self, var) -> int | None:
        """0 = rows, 1 = cols, for the loop variables; None otherwise."""
        for k, v in enumerate(self.vars):
            if v.same_as(var):
                return k if len(self.vars) == 2 else 1
        return None

    def is_axis_var(self, e) -> bool:
        return type(e).__name__ == "Var" and self.axis(e) is not None

    def temp(self, dtype: str) -> isa.Tile:
        t = self.ctx.temp(self.rows, self.cols, dtype)
        self.temps.append(t)
        return t

    def not_simd(self, why: str):
        hint = ("; to run it element by element on the Vector core, put the loop in "
                "`with T.SimtVF(threads=128):` (import tilelang_ascend.language as T)"
                if self.ctx.capability("simt_vector") and self.ctx.scope is None else
                "; A2/A3 (dav-c220) Vector cores run SIMD only" if not
                self.ctx.capability("simt_vector") else "")
        return self.ctx.error("T.Parallel", f"this T.Parallel body cannot become SIMD Vector "
                                            f"instructions: {why}{hint}")


def lower_parallel(loop, ctx: IsaContext) -> None:
    loops, stmt = [], loop
    while isinstance(stmt, tirx.For) and "tl.parallel" in stmt.annotations:
        loops.append(stmt)
        stmt = stmt.body
    nest = _Nest(loops, ctx)
    if len(loops) > 2:
        raise nest.not_simd(f"{len(loops)} nested parallel loops; the Vector lowering handles "
                            f"one or two (rows x cols)")
    stores = list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]
    binds: dict = {}
    queue = list(stores)
    while queue:
        store = queue.pop(0)
        if isinstance(store, tirx.Bind):
            # ``row = bx * 32 + i`` in the body: inline it into the statements that follow
            binds[store.var] = _inline(store.value, binds)
            continue
        if getattr(store, "span", None) is not None:
            ctx.node = store
        if isinstance(store, tirx.IfThenElse):
            # ``if row < M and col < N:`` around global stores is the ragged-edge guard the
            # clipped copies already implement (vector_global.py)
            queue[:0] = strip_bounds_guard(nest, store, lambda e: _inline(e, binds))
            continue
        if binds and isinstance(store, tirx.BufferStore):
            store = tirx.BufferStore(store.buffer, _inline(store.value, binds),
                                     [_inline(i, binds) for i in store.indices], span=store.span)
        if not isinstance(store, tirx.BufferStore):
            if isinstance(store, tirx.For):
                raise nest.not_simd("a loop nested under T.Parallel that is not part of the "
                                    "parallel nest")
            raise nest.not_simd(f"{type(store).__name__} in the body (only stores "
                                f"'buf[i, j] = expr' are vectorized; use T.if_then_else "
                                f"instead of if)")
        _lower_store(nest, store)
        ctx.release(nest.temps)
        nest.temps = []
        nest.staged = {}


def _inline(expr, binds: dict):
    if not binds:
        return expr
    return structural_map(expr, [(tirx.Var, lambda v: binds.get(v, v))])


def _tile_for(nest: _Nest, buf_var, indices, what: str):
    """(tile, broadcast axis or None) for ``buf_var[indices]`` inside the nest."""
    ctx = nest.ctx
    buf = ctx.vector_buffer(buf_var)
    if buf.mem != "UB":
        raise nest.not_simd(f"{what} '{buf.name}' lives in {buf.mem}; only Unified Buffer "
                            f"data is visible to the Vector core")
    pattern = []
    for idx in indices:
        if nest.is_axis_var(idx):
            pattern.append(("axis", nest.axis(idx)))
        elif not _mentions(idx, nest.is_axis_var):
            pattern.append(("inv", idx))
        else:
            raise nest.not_simd(f"index '{idx}' of '{buf.name}' is not a loop variable of the "
                                f"T.Parallel nest (shifted, scaled or indirect indices need "
                                f"gather instructions)")
    slot = ctx.slot(buf)
    kinds = [p[0] for p in pattern]
    axes = [p[1] for p in pattern if p[0] == "axis"]
    if axes != sorted(axes) or len(set(axes)) != len(axes):
        raise nest.not_simd(f"'{buf.name}' is accessed transposed (indices {list(indices)}); "
                            f"Vector instructions walk rows in order")
    if len(indices) == 2 and kinds == ["axis", "axis"]:
        return isa.Tile(buf, nest.rows, nest.cols, slot=slot), None
    if len(indices) == 2 and kinds == ["inv", "axis"]:
        return isa.Tile(buf, 1, nest.cols, row=pattern[0][1], slot=slot), (
            0 if nest.rows > 1 else None)
    if len(indices) == 1 and kinds == ["axis"]:
        if axes[0] == 1:
            return isa.Tile(buf, 1, nest.cols, slot=slot), (0 if nest.rows > 1 else None)
        return isa.Tile(buf, 1, nest.rows, slot=slot), 1
    if all(k == "inv" for k in kinds):
        raise nest.not_simd(f"'{buf.name}{list(indices)}' is a single element of an on-chip "
                            f"buffer; reading it would need a Scalar-unit load and a V->S sync "
                            f"(not supported yet)")
    raise nest.not_simd(f"'{buf.name}{list(indices)}' is a column of a 2-D buffer; Vector "
                        f"instructions read rows")


def _lower_store(nest: _Nest, store) -> None:
    if _is_global(store.buffer):
        store_to_gm(nest, store, lambda tile: _store_value(nest, store, tile))
        return
    dst, bcast = _tile_for(nest, store.buffer, list(store.indices), "the store to")
    if bcast is not None or (dst.rows, dst.cols) != (nest.rows, nest.cols):
        raise nest.not_simd(f"the store to '{store.buffer.name}' does not cover the whole "
                            f"iteration space (a store must be indexed by every loop variable)")
    _store_value(nest, store, dst)


def _is_global(buf_var) -> bool:
    return str(buf_var.ty.storage_scope) in ("global", "")


def _store_value(nest: _Nest, store, dst: isa.Tile) -> None:
    value = store.value
    if _dtype(value) != dst.dtype:
        value = tirx.Cast(dst.dtype, value)
    result = _expr(nest, value, dst)
    if isinstance(result, isa.Scalar):
        nest.ctx.emit(isa.VDup(dst, result))
    elif result is not dst:
        nest.ctx.emit(isa.VUnary("copy", dst, result))


def _affine(nest: _Nest, e):
    """(base, row_step, col_step) of an integer affine form of the loop variables, or None."""
    kind = type(e).__name__
    if nest.is_axis_var(e):
        return (0, 1, 0) if nest.axis(e) == 0 else (0, 0, 1)
    if not _mentions(e, nest.is_axis_var):
        return (e, 0, 0)
    if kind in ("Add", "Sub"):
        a, b = _affine(nest, e.a), _affine(nest, e.b)
        if a is None or b is None:
            return None
        sign = 1 if kind == "Add" else -1
        return (_add(a[0], b[0], sign), a[1] + sign * b[1], a[2] + sign * b[2])
    if kind == "Mul":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, tirx.IntImm):
                inner = _affine(nest, x)
                if inner is not None:
                    c = int(y.value)
                    return (_scale(inner[0], y), inner[1] * c, inner[2] * c)
    return None


def _add(a, b, sign):
    if isinstance(a, int) and a == 0:
        return b if sign == 1 else (0 - b if not isinstance(b, int) else -b)
    if isinstance(b, int) and b == 0:
        return a
    return a + b if sign == 1 else a - b


def _scale(base, factor):
    return 0 if isinstance(base, int) and base == 0 else base * factor


def _expr(nest: _Nest, e, out: isa.Tile | None = None):
    """Lower ``e`` over the nest: a Scalar, or a Tile holding its value (``out`` if given)."""
    ctx = nest.ctx
    kind = type(e).__name__
    dtype = _dtype(e)
    mentions_axis = _mentions(e, nest.is_axis_var)
    mentions_load = _mentions(e, lambda x: type(x).__name__ == "TensorLoad")
    if not mentions_axis and not mentions_load:
        return isa.Scalar(e, dtype)

    def dst():
        return out if out is not None and out.dtype == dtype else nest.temp(dtype)

    if kind == "TensorLoad" and _is_global(e.source):
        return staged_load(nest, e)
    if kind == "TensorLoad":
        tile, bcast = _tile_for(nest, e.source, list(e.indices), "the load of")
        if bcast is None:
            return tile
        t = dst()
        ctx.emit(isa.VBroadcast(t, tile, bcast))
        return t
    if not mentions_load and dtype.startswith("int"):
        form = _affine(nest, e)
        if form is None:
            raise nest.not_simd(f"the index expression '{e}' is not affine in the loop "
                                f"variables (VArange builds only base + a*i + b*j)")
        t = dst()
        ctx.emit(isa.VArange(t, isa.Scalar(form[0], dtype), form[1], form[2]))
        return t
    if kind in _BINARY:
        a, b = _expr(nest, e.a), _expr(nest, e.b)
        t = dst()
        ctx.emit(isa.VBinary(_BINARY[kind], t, a, b))
        return t
    if kind == "Not":
        a = _as_tile(nest, _expr(nest, e.a))
        t = dst()
        ctx.emit(isa.VUnary("not", t, a))
        return t
    if kind == "Cast":
        src = _as_tile(nest, _expr(nest, e.value))
        t = dst()
        ctx.emit(isa.VCast(t, src))
        return t
    if kind == "Select" or (kind == "Call" and str(e.op.name) == "prim.if_then_else"):
        c, tv, fv = (e.condition, e.true_value, e.false_value) if kind == "Select" else e.args
        mask = _as_tile(nest, _expr(nest, c))
        a, b = _expr(nest, tv), _expr(nest, fv)
        t = dst()
        ctx.emit(isa.VSelect(t, mask, a, b))
        return t
    if kind == "Call" and str(e.op.name) in _UNARY_CALLS:
        src = _as_tile(nest, _expr(nest, e.args[0]))
        t = dst()
        ctx.emit(isa.VUnary(_UNARY_CALLS[str(e.op.name)], t, src))
        return t
    name = str(e.op.name) if kind == "Call" else kind
    raise nest.not_simd(f"'{name}' has no Vector instruction in this backend yet (supported: "
                        f"+ - * / max min, comparisons, casts, if_then_else, exp exp2 log sqrt "
                        f"rsqrt abs)")


def _as_tile(nest: _Nest, x):
    if isinstance(x, isa.Tile):
        return x
    t = nest.temp(x.dtype)
    nest.ctx.emit(isa.VDup(t, x))
    return t

