"""Element-wise loops over two regions of one shape: what a tile op becomes where its own rules
cannot serve (a copy touching a global tensor with an annotated layout, a copy from a tensor with
a nonzero safe value), written as a T.Parallel nest the later passes lower like any other."""

from __future__ import annotations

from tvm import tirx

from . import region as R


def cast_to(value, dtype: str):
    """``value`` as ``dtype`` (unchanged when it has that type)."""
    return value if str(value.ty) == dtype else tirx.Cast(dtype, value)


def elementwise(src, dst, make, loop=None):
    """``make(src element, dst indices)`` for every element of two regions of one shape, in a
    T.Parallel nest over their non-unit extents (no loop when every extent is 1), or in the loops
    ``loop(var, extent, body)`` builds; None when an extent is known only at run time."""
    loop = loop or parallel_loop
    extents = [R.as_int(e) for e in R.squeeze(R.extents_of(dst))]
    if any(e is None for e in extents):
        return None
    loop_vars = [tirx.Var(f"e{d}", "int32") for d in range(len(extents))]

    def index(region):
        it = iter(loop_vars)
        return [m if R.as_int(e) == 1 else m + next(it) for m, e in zip(R.mins_of(region), R.extents_of(region))]

    body = make(tirx.BufferLoad(src.source, index(src)), index(dst))
    for v, e in reversed(list(zip(loop_vars, extents))):
        body = loop(v, e, body)
    return body


def parallel_loop(var, extent: int, body):
    """``for var in T.Parallel(extent): body``."""
    return tirx.For(var, tirx.const(0, "int32"), tirx.const(extent, "int32"), tirx.ForKind.PARALLEL, body,
                    None, {"tl.parallel": tirx.const(1, "int32")})


def serial_loop(var, extent: int, body):
    """``for var in T.serial(extent): body`` (every thread runs all of it)."""
    return tirx.For(var, tirx.const(0, "int32"), tirx.const(extent, "int32"), tirx.ForKind.SERIAL, body)


__all__ = ["cast_to", "elementwise", "parallel_loop", "serial_loop"]
