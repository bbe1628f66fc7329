"""Run a pass written as a plain function so that TVM's pass instruments still see it.

Backends call their own passes as plain functions (``f(func) -> func``): a TileLangError raised
inside a TVM pass would cross the FFI boundary. But then ``TILELANG_DUMP_IR`` (``DumpIR`` and
``PassTimingInstrument`` on the current PassContext) would miss them. ``run_pass`` calls the plain
function directly when no instrument is active (the normal, fast path) and, when one is, wraps it
in a ``prim_func_pass`` named ``name`` so that it is dumped and timed like any TVM pass; an
exception is carried around the FFI boundary in a closure and re-raised unchanged.

    func = run_pass("cpu.ThreadsToLoops", threads_to_loops, func)
"""

from __future__ import annotations

from typing import Callable


def run_pass(name: str, fn: Callable, func, *args, **kwargs):
    """``fn(func, *args, **kwargs)``, visible to the current PassContext's instruments."""
    import tvm

    ctx = tvm.transform.PassContext.current()
    if not list(ctx.instruments):
        return fn(func, *args, **kwargs)
    failure: list[BaseException] = []

    def body(f, _mod, _ctx):
        try:
            return fn(f, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, outside TVM
            failure.append(exc)
            return f

    symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
    key = str(symbol) if symbol is not None else "main"
    mod = tvm.IRModule({key: func})
    out = tvm.tirx.transform.prim_func_pass(body, opt_level=0, name=name)(mod)
    if failure:
        raise failure[0]
    return out[key]
