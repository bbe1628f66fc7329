"""``T.assume(cond)``: a fact about the kernel's arguments, checked at each call where it can be.

The compiler here does not rely on assumptions (a kernel compiled as if the fact were unknown is
always correct). TileLang also checks one on the host when it depends only on the arguments (its
sizes and scalars): ``T.assume(N % 4 == 0)`` makes a call with N = 2 fail with
"Assume: N % 4 == 0" instead of running a kernel written for the assumed case. So does this:
the frontend leaves a ``tl.assume`` attribute (value: the condition) around what follows the
call; :func:`collect_host_assumes` strips them after parsing and keeps, in the PrimFunc attribute
``tl.host_assumes``, the conditions over parameters alone (a scalar parameter or a size or stride
variable of a tensor). The JIT checks those at every call (jit/params.read_assumes, jit/args.py).
An assumption over values only the kernel has (a loop variable, a loaded element) is dropped.

The conditions the JIT checks reach the backends as facts, in the PrimFunc attribute
``tl.checked_assumes``: a kernel that runs only where they hold may rely on them
(``T.assume(N % 4 == 0)`` lets a row of N floats be read as float4, simt/transform/vectorized_loops.py).
The parser's guard pass (transform/safe_global_access.py) also takes the author's word for every
assumption within its scope, as TileLang does: there ``T.assume(i < N)`` drops the guard of ``A[i]``.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

ASSUME = "tl.assume"
HOST_ASSUMES = "tl.host_assumes"
#: PrimFunc attribute beside HOST_ASSUMES: per condition, what a failed check says ("" for a
#: T.assume; the compiler's own conditions, T.ClusterKernel's grid, explain themselves)
HOST_ASSUME_REASONS = "tl.host_assume_reasons"
#: PrimFunc attribute the backends see: the HOST_ASSUMES that every call checks (jit/compiler.py)
CHECKED_ASSUMES = "tl.checked_assumes"


def collect_host_assumes(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` without its ``tl.assume`` attributes, the host-checkable conditions in the
    ``tl.host_assumes`` attribute."""
    host: set[int] = set()
    for p in func.params:
        if tirx.is_buffer_var(p):
            for e in list(p.ty.shape) + list(p.ty.strides or []):
                host.update(v.__chandle__() for v in tirx.analysis.undefined_vars(e))
        else:
            host.add(p.__chandle__())
    found, reasons = [], []

    def on_attr(attr):
        if attr.attr_key != ASSUME:
            return attr
        used = tirx.analysis.undefined_vars(attr.value)
        if used and all(v.__chandle__() in host for v in used):
            found.append(attr.value)
            reasons.append(str(attr.node.value) if isinstance(attr.node, tvm.ir.StringImm) else "")
        return attr.body

    body = tvm_ffi.structural_map(func.body, [(tirx.AttrStmt, on_attr)])
    if body.same_as(func.body):
        return func
    func = func.with_body(body)
    if not found:
        return func
    func = func.with_attr(HOST_ASSUMES, tvm_ffi.Array(found))
    return func.with_attr(HOST_ASSUME_REASONS, tvm_ffi.Array(reasons)) if any(reasons) else func


def checked_assumes(func: tirx.PrimFunc) -> list:
    """The conditions every call of ``func`` checks (its ``tl.checked_assumes``): facts."""
    attrs = func.attrs
    return list(attrs[CHECKED_ASSUMES]) if attrs is not None and CHECKED_ASSUMES in attrs else []


def assume_marker(cond, reason: str = ""):
    """The attribute the frontend leaves for ``T.assume(cond)``; ``reason``: what a failed check
    says instead of "Assume: cond" (for conditions the compiler adds)."""
    from tvm.script.ir_builder import tirx as B

    return B.attr(tvm.ir.StringImm(reason), ASSUME, cond)


__all__ = ["ASSUME", "CHECKED_ASSUMES", "HOST_ASSUMES", "HOST_ASSUME_REASONS", "assume_marker", "checked_assumes", "collect_host_assumes"]
