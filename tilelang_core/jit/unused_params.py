"""Tensor parameters the kernel never touches, which a call may pass as ``None``.

DeepSeek's TileKernels call their casts with ``x_sf=None`` when the input carries no scale factors:
the kernel, specialized for that case, never reads it. TileLang accepts the ``None``. Here such a
parameter is left out of the compiled function (so no argument check and no launch argument exist
for it), and the call takes anything in its place: ``None`` or a tensor, which is ignored.

A parameter stays in when the kernel reads or writes it, when it is an output, or when one of its
sizes is needed elsewhere and no other parameter gives that size.
"""

from __future__ import annotations

# tvm loads with the first kernel, not with `import tilelang_core` (jit/compiler imports this)


def _vars_in(node) -> dict:
    """handle -> name of every variable in ``node`` (itself included)."""
    import tvm_ffi
    from tvm import tirx

    found = {}

    def note(v):
        found[v.__chandle__()] = str(v.name)

    tvm_ffi.structural_walk(node, [(tirx.Var, note)])
    return found


def _size_vars(buffer) -> dict:
    """handle -> name of the variables in ``buffer``'s shape, strides and offset."""
    import tvm

    found = {}
    for e in list(buffer.shape) + list(buffer.strides) + [getattr(buffer, "elem_offset", None)]:
        if isinstance(e, tvm.ir.Expr):
            found.update(_vars_in(e))
    return found


def drop_unused_tensor_params(func, outputs: frozenset, assumed_names: set) -> tuple:
    """(``func`` without its untouched input tensors, the indices of those left out)."""
    from tvm import tirx

    params = list(func.params)
    used = _vars_in(func.body)
    candidates = []
    for index, var in enumerate(params):
        if not tirx.is_buffer_var(var) or index in outputs or var.__chandle__() in used:
            continue
        data = getattr(var, "data", None)
        if data is not None and data.__chandle__() in used:
            continue
        candidates.append(index)
    if not candidates:
        return func, ()
    dropped = []
    for index in candidates:
        buffer = params[index]
        sizes = _size_vars(buffer)
        others = set()
        for j, var in enumerate(params):
            if j != index and j not in dropped and tirx.is_buffer_var(var):
                others |= set(_size_vars(var))
            elif j != index and not tirx.is_buffer_var(var):
                others.add(var.__chandle__())
        needed = {h for h, name in sizes.items() if h in used or name in assumed_names}
        if needed - others:
            continue  # a size only this parameter gives is read by the kernel or a T.assume
        dropped.append(index)
    if not dropped:
        return func, ()
    kept = [p for i, p in enumerate(params) if i not in dropped]
    return tirx.PrimFunc(kept, func.body, func.ret_type, func.attrs), tuple(dropped)


__all__ = ["drop_unused_tensor_params"]
