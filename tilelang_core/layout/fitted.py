"""A Fragment from index functions: TileLang's ``T.Fragment(shape, forward_fn=...)``.

TileLang describes a register layout by functions of the element's indices: ``forward_fn(i, j)``
returns ``(thread, register)`` (with ``replicate=r``, ``forward_fn(i, j, rep)``: copy ``rep`` of the
element lives on that thread). Our Fragment is the mixed-radix form of such a map (fragment.py),
so the functions are evaluated on every element of the tile (numpy, over the expressions they
return) and their digits read off: for each dimension, from the least significant, the largest run
``k * place`` that moves one space (thread or register) by ``k`` times a fixed stride. The digits
found are checked against the functions on every element; a map that has no digit form (a
swizzle, a thread offset, one move changing thread and register at once, two elements on one
register of one thread) is refused, saying which.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import LayoutError
from .fragment import LOCAL, THREAD, Digit, Fragment

#: the largest tile (elements x replicas) whose map is evaluated element by element
MAX_ELEMENTS = 1 << 20


def evaluate(expr, env: dict):
    """``expr`` (a TIR integer expression of the variables in ``env``, handle -> numpy array) as a
    numpy array (ir/numpy_ops.py); anything else is a LayoutError naming it."""
    from ..ir.numpy_ops import Unsupported, evaluate as compute

    if isinstance(expr, (int, np.integer)):
        return np.int64(expr)
    try:
        return compute(expr, env)
    except Unsupported as err:
        raise LayoutError(f"the layout function returns {expr}, which cannot be evaluated ({err}); a fragment "
                          f"layout is built from integer arithmetic of its indices and constants") from None


def fit_fragment(shape: Sequence[int], thread: np.ndarray, local: np.ndarray, name: str = "") -> Fragment:
    """The Fragment whose thread / register of element ``idx``, copy ``r`` are ``thread[idx + (r,)]``
    and ``local[idx]`` (arrays of shape ``shape + (replicas,)`` and ``shape``)."""
    shape = tuple(int(s) for s in shape)
    what = f"fragment layout{f' of {name!r}' if name else ''}"
    if int(thread[(0,) * thread.ndim]) != 0 or int(local[(0,) * local.ndim]) != 0:
        raise LayoutError(f"{what}: element 0 goes to thread {int(thread[(0,) * thread.ndim])}, register "
                          f"{int(local[(0,) * local.ndim])}; a fragment's first element is on thread 0, register 0 "
                          f"(a thread offset is not supported: lay the tile out over threads 0..n-1)")
    replicas = thread.shape[-1]
    digits = []
    for d, extent in enumerate(shape):
        def at(k, d=d):
            idx = [0] * len(shape)
            idx[d] = k
            return int(thread[tuple(idx) + (0,)]), int(local[tuple(idx)])
        digits.append(tuple(reversed(_digits_of(extent, at, f"{what}, dimension {d}"))) or (Digit(1, LOCAL, 0),))
    replicate = ()
    if replicas > 1:
        rep = _digits_of(replicas, lambda k: (int(thread[(0,) * len(shape) + (k,)]), 0), f"{what}, replicas")
        if any(x.space != THREAD for x in rep):
            raise LayoutError(f"{what}: the replicas must differ by thread only")
        replicate = tuple(reversed(rep))
    try:
        fragment = Fragment(shape, tuple(digits), replicate, name=name)
    except LayoutError as err:
        raise LayoutError(f"{what} has no thread / register digit form (a swizzled or irregular map): the "
                          f"digits read from each dimension alone do not number the threads and registers "
                          f"once each ({err})") from None
    grid = np.indices(shape + (replicas,))  # (Fragment's own maps take numpy arrays as indices)
    want_thread = np.broadcast_to(fragment.thread_of(*grid[:-1], replica=grid[-1]), thread.shape)
    want_local = np.broadcast_to(fragment.local_of(*(g[..., 0] for g in grid[:-1])), local.shape)
    bad = np.argwhere((want_thread != thread) | (want_local[..., None] != local[..., None]))
    if len(bad):
        idx = tuple(int(x) for x in bad[0])
        raise LayoutError(f"{what} has no thread / register digit form (a swizzled or irregular map): element "
                          f"{list(idx[:-1])} (copy {idx[-1]}) is on thread {int(thread[idx])}, register "
                          f"{int(local[idx[:-1]])}; the digits read from each dimension alone give thread "
                          f"{int(want_thread[idx])}, register {int(want_local[idx[:-1]])}")
    return fragment


def _digits_of(extent: int, at, what: str) -> list[Digit]:
    """Digits of one index, least significant first: ``at(k)`` = (thread, register) of index k."""
    out, place = [], 1
    while place < extent:
        dt, dl = at(place)
        if dt and dl:
            raise LayoutError(f"{what}: index {place} moves both the thread (+{dt}) and the register (+{dl})")
        if not dt and not dl:
            raise LayoutError(f"{what}: index {place} lands on the thread and register of index 0 (two "
                              f"elements in one register)")
        if dt < 0 or dl < 0:
            raise LayoutError(f"{what}: index {place} moves the thread or register backwards")
        run = 1
        while run * place < extent and at(run * place) == (run * dt, run * dl):
            run += 1
        while (extent // place) % run:  # a digit's extent divides what is left of the index
            run -= 1
        if run < 2:
            raise LayoutError(f"{what}: the map is not a product of runs at index {place}")
        out.append(Digit(run, THREAD if dt else LOCAL, dt or dl))
        place *= run
    return out


def fragment_of_functions(shape: Sequence[int], thread_fn, local_fn, replicate: int = 1, name: str = "") -> Fragment:
    """TileLang's ``T.Fragment`` arguments as a Fragment: ``thread_fn(*idx[, rep])`` and
    ``local_fn(*idx)`` are called on index variables; the register index may be a list (flattened
    row-major over the extents it takes)."""
    from tvm import tirx

    variables = [tirx.Var(f"i{d}", "int32") for d in range(len(shape))]
    rep = tirx.Var("rep", "int32")
    thread = thread_fn(*variables, rep) if replicate > 1 else thread_fn(*variables)
    local = local_fn(*variables)
    local = list(local) if isinstance(local, (list, tuple)) or (hasattr(local, "__len__") and not hasattr(local, "ty")) \
        else [local]
    return _fit_exprs(shape, variables, rep, thread, local, replicate, name)


def fragment_of_index_map(index_map, shape: Sequence[int], replicas: int = 1, name: str = "") -> Fragment:
    """The Fragment of a ``T.annotate_layout`` entry: an IndexMap of the element's indices (and the
    replica, when ``replicas`` > 1) to ``[thread, register...]``."""
    inputs = list(index_map.initial_indices)
    outputs = list(index_map.final_indices)
    if len(inputs) != len(shape) + (replicas > 1) or len(outputs) < 2:
        raise LayoutError(f"T.annotate_layout for fragment '{name}' must map its {len(shape)} indices to "
                          f"(thread, register), as T.Fragment(shape, forward_fn=lambda *idx: (thread, register)) "
                          f"does; got {len(inputs)} inputs and {len(outputs)} outputs")
    return _fit_exprs(shape, inputs[:len(shape)], inputs[-1] if replicas > 1 else None, outputs[0], outputs[1:],
                      replicas, name)


def _fit_exprs(shape, variables, rep, thread, local: list, replicate: int, name: str) -> Fragment:
    shape = tuple(int(s) for s in shape)
    if replicate < 1:
        raise LayoutError(f"T.Fragment replicate must be a positive integer, got {replicate}")
    if math.prod(shape) * replicate > MAX_ELEMENTS:
        raise LayoutError(f"T.Fragment of shape {list(shape)} x {replicate} replicas is too large to lay out "
                          f"({MAX_ELEMENTS} elements at most)")
    grid = np.indices(shape + (replicate,))
    env = {v.__chandle__(): grid[d] for d, v in enumerate(variables)}
    if rep is not None:
        env[rep.__chandle__()] = grid[-1]
    thread_values = np.broadcast_to(evaluate(thread, env), grid.shape[1:]).astype(np.int64)
    env0 = {k: v[..., 0] for k, v in env.items()}
    parts = [np.broadcast_to(evaluate(x, env0), shape).astype(np.int64) for x in local] or [np.zeros(shape, np.int64)]
    flat = np.zeros(shape, np.int64)
    for part in parts:  # row-major over the extents the parts take
        flat = flat * (int(part.max()) + 1) + part
    return fit_fragment(shape, thread_values, flat, name)


__all__ = ["evaluate", "fit_fragment", "fragment_of_functions", "fragment_of_index_map"]
