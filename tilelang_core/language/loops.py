"""Loops: ``T.Parallel``, ``T.Pipelined``, ``T.serial``, ``T.unroll``, ``T.vectorized``.

``T.Parallel(m, n)`` is a nest of ``parallel`` loops annotated ``{"tl.parallel": 1}``; layout
inference maps its iterations onto threads. ``T.Pipelined`` is a ``serial`` loop annotated
``{"tl.num_stages": k}`` that the pipeline planner software-pipelines.

Example::

    for k in T.Pipelined(T.ceildiv(K, 32), num_stages=3):
        T.copy(A[by * 128, k * 32], A_s)
    for i, j in T.Parallel(128, 128):
        C_f[i, j] = T.max(C_f[i, j], 0)
"""

from __future__ import annotations

import tvm
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from .parser import LaunchBinding, LoopNest, ThreadIndex
from .stepped_loops import is_zero_step


def _bound(value, what: str):
    if isinstance(value, bool):
        raise FrontendError(f"{what} must be an integer, got {value!r}")
    if isinstance(value, int) or (isinstance(value, tvm.ir.Expr) and tvm.ir.is_prim_expr(value)
                                  and str(value.ty).startswith(("int", "uint"))):
        return value
    raise FrontendError(f"{what} must be an integer expression, got {value!r}")


def _int_list(value, what: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise FrontendError(f"{what} must be a list of integers, got {value!r}")
    return list(value)


#: TileLang's T.Parallel annotations that change nothing here: its async rewrite's
#: "the author commits and waits" switch (this loop's stores are synchronous)
_PARALLEL_HINTS = {"parallel_async_without_async_commit_wait"}


#: the outermost loop of a T.Parallel nest carries its ``loop_layout`` (Fragment.describe())
LOOP_LAYOUT = "tl.loop_layout"


def _loop_layout(layout, extents) -> str:
    """TileLang's ``T.Parallel(..., loop_layout=T.Fragment(...))`` names the thread that runs each
    iteration, and layout inference follows it before any fragment the body touches (those
    fragments then take the layout it gives them, or are refused where theirs differs). It
    matters where the author turns barriers off (``tl.disable_thread_storage_sync``) and reads
    back in another loop what this one gave each thread. Returned as it travels on the loop."""
    from ..layout import Fragment

    if not isinstance(layout, Fragment):
        raise FrontendError(f"T.Parallel loop_layout must be a T.Fragment, got {layout!r}")
    dims = [e if isinstance(e, int) else getattr(e, "value", None) for e in extents]
    if any(not isinstance(d, int) for d in dims):
        raise FrontendError(f"T.Parallel loop_layout needs constant extents, but the loop's extents are "
                            f"{tuple(extents)}: lay out a loop over the tile's full size and mask with `if`")
    if tuple(layout.shape) != tuple(dims):
        raise FrontendError(f"T.Parallel loop_layout is laid out over shape {tuple(layout.shape)}, "
                            f"but the loop's extents are {tuple(extents)}")
    return layout.describe()


class Parallel(LoopNest):
    """Iterate the element space ``extents`` in parallel: ``for i, j in T.Parallel(M, N)``.

    ``loop_layout`` (a T.Fragment over the extents) decides which thread runs each iteration;
    see :func:`_loop_layout`."""

    def __init__(self, *extents, coalesced_width: int | None = None, loop_layout=None, prefer_async=None,
                 annotations: dict | None = None):
        if not extents:
            raise FrontendError("T.Parallel needs at least one extent")
        # prefer_async (TileLang's request to issue the loop's global -> shared stores as cp.async)
        # is a hint: the stores complete as written, which every wait the author wrote allows
        # (language/async_groups.py)
        for key in annotations or {}:
            if key not in _PARALLEL_HINTS:
                raise FrontendError(f"T.Parallel annotation {key!r} is not supported (known: "
                                    f"{', '.join(sorted(_PARALLEL_HINTS))})")
        self.extents = [_bound(e, "T.Parallel extent") for e in extents]
        self.annotations: dict = {"tl.parallel": 1}
        if coalesced_width is not None:
            if not isinstance(coalesced_width, int) or coalesced_width <= 0:
                raise FrontendError(f"T.Parallel coalesced_width must be a positive constant, "
                                    f"got {coalesced_width!r}")
            self.annotations["tl.coalesced_width"] = coalesced_width
        self.layout = None if loop_layout is None else _loop_layout(loop_layout, self.extents)

    def frames(self):
        outer = dict(self.annotations, **({LOOP_LAYOUT: self.layout} if self.layout else {}))
        return [B.parallel(0, e, annotations=dict(outer if k == 0 else self.annotations))
                for k, e in enumerate(self.extents)]


def parallel(start, stop=None, annotations=None):
    """TileLang's lower-case ``T.parallel(n)``: a ``parallel`` loop, which TileLang's tile-op
    lowering treats as ``T.Parallel(n)`` (its T.Parallel builds exactly such loops). Ranges that
    do not start at 0 are refused: T.Parallel iterates from 0."""
    if stop is not None:
        if getattr(start, "value", start) != 0:
            raise FrontendError(f"T.parallel({start}, {stop}): a parallel loop here starts at 0; write "
                                f"T.Parallel({stop} - {start}) and add {start} to the index")
        start = stop
    return Parallel(start, annotations=annotations)


def Pipelined(start, stop=None, num_stages: int = 0, order=None, stage=None, sync=None,
              group=None):
    """A serial loop the compiler software-pipelines over ``num_stages`` stages.

    ``T.Pipelined(n, num_stages=3)`` or ``T.Pipelined(start, stop, num_stages=3)``; ``order``,
    ``stage`` and ``group`` give an explicit schedule per statement of the body.
    """
    if not isinstance(num_stages, int) or isinstance(num_stages, bool) or num_stages < 0:
        raise FrontendError(f"T.Pipelined num_stages must be a non-negative constant integer, "
                            f"got {num_stages!r}")
    if sync is not None:
        raise FrontendError("T.Pipelined(sync=...) is not supported")
    start = _bound(start, "T.Pipelined start")
    if stop is not None:
        stop = _bound(stop, "T.Pipelined stop")
    ann: dict = {"tl.num_stages": num_stages}
    for key, value in (("tl.order", order), ("tl.stage", stage), ("tl.group", group)):
        if key == "tl.group" and value is not None:
            if not isinstance(value, (list, tuple)):
                raise FrontendError(f"T.Pipelined group must be a list of lists, got {value!r}")
            ann[key] = [_int_list(g, "T.Pipelined group entry") for g in value]
        elif value is not None:
            ann[key] = _int_list(value, f"T.Pipelined {key[3:]}")
    return B.serial(start, stop, annotations=ann)


def serial(start, stop=None, step=None, annotations=None):
    """A sequential loop (``range`` on symbolic bounds)."""
    if is_zero_step(step):
        raise FrontendError("T.serial step must not be zero")
    return B.serial(_bound(start, "T.serial start"),
                    None if stop is None else _bound(stop, "T.serial stop"),
                    step=step, annotations=annotations)


#: the loop annotation that carries T.unroll's unroll_factor (TileLang's name for it)
UNROLL_FACTOR = "pragma_unroll_factor"


def unroll(start, stop=None, step=None, explicit: bool = False, unroll_factor: int | None = None,
           annotations=None):
    """A loop to unroll fully. With ``unroll_factor`` (TileLang's partial unroll, a hint that
    changes no value) the loop stays sequential, annotated ``pragma_unroll_factor``: the cuda
    backend prints ``#pragma unroll N`` before it (tilelang_cuda/unroll_pragmas.py); the others
    leave the choice to their compiler."""
    annotations = dict(annotations or {})
    annotated = annotations.pop(UNROLL_FACTOR, None)  # TileLang's spelling of the factor
    unroll_factor = annotated if unroll_factor is None else unroll_factor
    if unroll_factor is None:
        return B.unroll(_bound(start, "T.unroll start"),
                        None if stop is None else _bound(stop, "T.unroll stop"),
                        step=step, annotations=annotations or None)
    if explicit:
        raise FrontendError("T.unroll's explicit and unroll_factor params are mutually exclusive.")
    if isinstance(unroll_factor, bool) or not isinstance(unroll_factor, int) or unroll_factor < 1:
        raise FrontendError(f"T.unroll: unroll_factor must be a positive integer, got {unroll_factor!r}")
    return serial(start, stop, step, annotations={**annotations, UNROLL_FACTOR: unroll_factor})


def Unroll(start, stop=None, step=None, explicit: bool = False, unroll_factor: int | None = None,  # noqa: N802
           annotations=None):
    """TileLang's capitalised alias of :func:`unroll`."""
    return unroll(start, stop, step, explicit, unroll_factor, annotations)


def vectorized(start, stop=None, annotations=None):
    """A loop to turn into vector instructions (constant extent)."""
    return B.vectorized(_bound(start, "T.vectorized start"),
                        None if stop is None else _bound(stop, "T.vectorized stop"),
                        annotations=annotations)


def thread_binding(start, stop=None, thread: str = "threadIdx.x"):
    """A loop bound to a thread index (TileLang's low-level form; prefer T.Kernel/T.Parallel).

    Inside a ``T.Kernel`` it is the kernel's own index of that thread dimension (parser.ThreadIndex):
    the range must be the launch's, ``0`` to ``threads[d]``, as TVM requires of a binding it merges.
    Outside one, a nest of such loops over block and thread indices is itself the launch
    (parser.LaunchBinding): the loops' extents are the grid and the block.
    """
    if stop is None:
        start, stop = 0, start
    from .kernel import _ACTIVE, _BLOCK_TAGS, _THREAD_TAGS

    if not _ACTIVE and thread in _BLOCK_TAGS + _THREAD_TAGS:
        if getattr(start, "value", start) != 0:
            raise FrontendError(f"T.thread_binding({start}, {stop}, thread={thread!r}) launching a kernel "
                                f"must start at 0")
        return LaunchBinding(stop, thread)

    if _ACTIVE and thread in _THREAD_TAGS:
        kernel, d = _ACTIVE[-1], _THREAD_TAGS.index(thread)
        extent = kernel.threads[d] if d < len(kernel.threads) else 1
        got = [getattr(v, "value", v) for v in (start, stop)]
        if got != [0, extent]:
            raise FrontendError(f"T.thread_binding({got[0]}, {got[1]}, thread={thread!r}) inside a T.Kernel must "
                                f"span the kernel's {thread}, 0 to {extent} (T.Kernel(..., threads=...)); "
                                f"use T.get_thread_binding({d}) and mask the threads you do not need")
        return ThreadIndex(kernel.get_thread_binding(d) if d < len(kernel.thread_vars) else tvm.tirx.const(0, "int32"))
    return B.thread_binding(start, stop, thread=thread)


def grid(*extents):
    """Nested serial loops: ``for i, j in T.grid(M, N)``."""
    return B.grid(*[_bound(e, "T.grid extent") for e in extents])
