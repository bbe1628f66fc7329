"""Programs of several kernels sharing global workspaces (TileLang's split + combine kernels).

A ``T.prim_func`` may hold several ``with T.Kernel(...)`` blocks, run in order on one stream, and
``T.alloc_global`` workspaces that live for the call and are shared by all of them::

    part = T.alloc_global((S, N), T.float32)      # AllocBuffer, scope "global"
    with T.Kernel(...): ...                        # kernel 0 writes part
    with T.Kernel(...): ...                        # kernel 1 reads it

The backends' lowering works on one kernel at a time (one launch, one set of thread indices, one
shared memory pool), so ``lower_program`` splits such a program into one PrimFunc per kernel (the
program's parameters plus its workspaces, as tensor parameters), lowers each with the backend's
own function, and stitches the lowered kernels back into one host function, between the
statements the backend gives to allocate the workspaces before the first kernel and to free them
after the last (``workspace_statements``). A program of one kernel and no workspace is lowered as
it is.

``hoist_workspaces`` alone is what a backend needs whose lowering already takes several kernels
(cpu): a ``T.alloc_global`` inside a kernel is one buffer of the whole program, shared by all its
blocks, not one per block.

Between kernels only workspaces and pure named values (``half = n // 2``, substituted into the
kernels) may appear; anything else is refused, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LoweringError
from ..ir.substitute import substitute
from .bindings import is_pure
from .structural import seq

#: PrimFunc attributes joined (as lines) when the kernels of a program each set them
_JOINED_ATTRS = ("tl.schedule_notes",)


@dataclass(frozen=True)
class Program:
    """A program split into its kernels (see the module docstring)."""

    #: the ``T.alloc_global`` buffers, in program order
    workspaces: tuple
    #: one PrimFunc per kernel: the program's parameters followed by the workspaces
    kernels: tuple


def is_launch(stmt) -> bool:
    return (isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "thread_extent"
            and isinstance(stmt.node, tirx.IterVar))


def is_workspace(stmt) -> bool:
    return isinstance(stmt, tirx.AllocBuffer) and str(stmt.buffer.ty.storage_scope) == "global"


def _name(func) -> str:
    name = func.attrs.get("global_symbol") if func.attrs is not None else None
    return str(name) if name is not None else "main"


def _top_level(body) -> list:
    return list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]


def _free_vars(node) -> set[int]:
    found: set[int] = set()
    tvm_ffi.structural_walk(node, [(tirx.Var, lambda v: found.add(v.__chandle__()))])
    return found


def hoist_workspaces(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every global-scope allocation inside a kernel moved before the kernels (an
    allocation whose shape uses a name of the kernel is refused: it cannot be sized on the host)."""
    hoisted: list = []
    host_vars = {p.__chandle__() for p in func.params}
    for p in func.params:
        if tirx.is_buffer_var(p):
            for e in list(p.ty.shape) + list(p.ty.strides or []):
                host_vars |= _free_vars(e)

    def in_kernel(stmt):
        def on_alloc(alloc, mutator):
            if not is_workspace(alloc):
                return mutator.default_mutate(alloc)
            for extent in alloc.buffer.ty.shape:
                if _free_vars(extent) - host_vars:
                    raise LoweringError(
                        f"kernel '{_name(func)}': T.alloc_global {alloc.buffer.name} of shape "
                        f"{list(alloc.buffer.ty.shape)} inside a T.Kernel uses names of the kernel; "
                        f"a workspace is allocated once for the program, before its first kernel: "
                        f"size it with the kernel's parameters")
            hoisted.append(tirx.AllocBuffer(alloc.buffer))
            return tirx.Evaluate(0)

        return tvm_ffi.structural_mutate(stmt, [(tirx.AllocBuffer, on_alloc)])

    out = []
    for stmt in _top_level(func.body):
        out.append(in_kernel(stmt) if is_launch(stmt) else stmt)
    if not hoisted:
        return func
    return func.with_body(seq(hoisted + out))


def _outer_launches(stmt) -> int:
    """Kernels in ``stmt``: launches not inside another launch, wherever they sit."""
    if is_launch(stmt):
        return 1
    if isinstance(stmt, tirx.SeqStmt):
        return sum(_outer_launches(s) for s in stmt.seq)
    if isinstance(stmt, tirx.IfThenElse):
        return _outer_launches(stmt.then_case) + (_outer_launches(stmt.else_case) if stmt.else_case else 0)
    body = getattr(stmt, "body", None)
    return _outer_launches(body) if isinstance(body, tirx.Stmt) else 0


def _has_workspace(func) -> bool:
    found: list = []
    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, lambda a: found.append(a) if is_workspace(a) else None)])
    return bool(found)


def split_program(func: tirx.PrimFunc) -> Program | None:
    """The kernels and workspaces of ``func``; None for a program of one kernel without
    workspaces (lower it as it is, whatever its shape)."""
    if _outer_launches(func.body) <= 1 and not _has_workspace(func):
        return None
    func = hoist_workspaces(func)
    workspaces, launches, values = [], [], {}
    for stmt in _top_level(func.body):
        if is_workspace(stmt):
            workspaces.append(stmt.buffer)
        elif is_launch(stmt):
            launches.append(substitute(stmt, values) if values else stmt)
        elif isinstance(stmt, tirx.Bind) and isinstance(stmt.value.ty, tvm.ir.PrimType) \
                and is_pure(stmt.value):
            values[stmt.var.__chandle__()] = substitute(stmt.value, values) if values else stmt.value
        elif isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.IntImm):
            continue  # the no-op left where an allocation was hoisted
        else:
            raise LoweringError(_between_kernels(func, stmt))
    if len(launches) <= 1 and not workspaces:
        return None
    if not launches:
        raise LoweringError(f"kernel '{_name(func)}' allocates T.alloc_global workspaces but has no "
                            f"T.Kernel to use them")
    params = list(func.params) + workspaces
    kernels = tuple(tirx.PrimFunc(params, launch, func.ret_type, func.attrs) for launch in launches)
    return Program(workspaces=tuple(workspaces), kernels=kernels)


def _between_kernels(func, stmt) -> str:
    what = type(stmt).__name__
    if isinstance(stmt, tirx.Bind):
        what = f"the value '{stmt.var.name}' (it reads memory: compute it inside a kernel)"
    elif isinstance(stmt, tirx.DeclBuffer):
        what = f"the tensor '{stmt.buffer.name}' (T.make_tensor of an address: make it inside each kernel)"
    elif isinstance(stmt, (tirx.For, tirx.IfThenElse)):
        what = f"a {what} around kernels (host-side control flow)"
    return (f"kernel '{_name(func)}' has {what} outside its T.Kernel blocks; a program of several "
            f"kernels may hold only T.Kernel blocks, T.alloc_global workspaces and pure named values "
            f"between them")


def workspace_bytes(buffer) -> tirx.PrimExpr:
    """Size of workspace ``buffer`` in bytes, as an int64 expression of the program's sizes."""
    dtype = tvm.DataType(str(buffer.ty.dtype))
    total = tirx.const((dtype.bits * dtype.lanes + 7) // 8, "int64")
    for extent in buffer.ty.shape:
        total = total * tirx.Cast("int64", extent)
    return total


def lower_program(func: tirx.PrimFunc, lower_one: Callable[[tirx.PrimFunc], tirx.PrimFunc],
                  workspace_statements: Callable[[tuple], tuple[list, list]]) -> tirx.PrimFunc:
    """``func`` lowered kernel by kernel with ``lower_one`` and stitched back (module docstring).

    ``workspace_statements(workspaces)`` returns the host statements (before the first kernel,
    after the last) that give every workspace its memory and release it.
    """
    program = split_program(func)
    if program is None:
        return lower_one(func)
    lowered = []
    for index, kernel in enumerate(program.kernels):
        out = lower_one(kernel)
        if len(out.params) != len(kernel.params) or \
                any(not a.same_as(b) for a, b in zip(out.params, kernel.params)):
            raise LoweringError(f"kernel '{_name(func)}': lowering kernel {index} of "
                                f"{len(program.kernels)} changed its parameters; a program of "
                                f"several kernels cannot be stitched back (report this)")
        lowered.append(out)
    before, after = workspace_statements(program.workspaces)
    body = seq(list(before) + [f.body for f in lowered] + list(after))
    stitched = tirx.PrimFunc(list(func.params), body, func.ret_type)
    attrs = _merged_attrs(func, lowered)
    return stitched.with_attrs(attrs) if attrs else stitched


def _merged_attrs(func, lowered) -> dict:
    attrs = dict(func.attrs) if func.attrs is not None else {}
    for f in lowered:
        for key, value in (dict(f.attrs) if f.attrs is not None else {}).items():
            if key in _JOINED_ATTRS and key in attrs and str(attrs[key]) != str(value):
                attrs[key] = f"{attrs[key]}\n{value}"
            else:
                attrs.setdefault(key, value)
    return attrs


def count_kernels(func: tirx.PrimFunc) -> tuple[int, int]:
    """(kernels, workspaces) of ``func``, for backends that refuse programs of several kernels."""
    found: list = []
    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, lambda a: found.append(a) if is_workspace(a) else None)])
    return _outer_launches(func.body), len(found)
