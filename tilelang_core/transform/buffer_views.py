"""Buffer views (``T.reshape``, ``T.view``): which declared buffer is a view of which allocation.

A view is a ``DeclBuffer`` whose data is another buffer's (``decl_buffer(..., data=S.data)``):
the same memory seen with another shape or dtype. Passes that give on-chip buffers storage of
their own (fragments -> registers, shared tiles -> a pool) must give a view its source's storage;
this module finds the pairs and checks what a backend can honour. Views of global tensors and of a
thread's registers (``T.alloc_local``) need nothing: their data is the parameter's pointer or the
register array's, which every code generator reinterprets (the cpu backend, whose registers
become per-thread rows, gives a register view its thread's row: threads_to_loops.py).

Example::

    views = buffer_views(func.body)      # {Fr: F, Sv: S}: view -> the allocation it sees
    root_of(Fr, views)                   # F
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LoweringError

_BUFFER_DATA = "tirx.buffer_data"
_ON_CHIP = ("shared", "shared.dyn", "local.fragment")


def view_source(decl):
    """The buffer whose data ``decl`` declares a view of, or None (a pointer, a Bind)."""
    data = decl.data
    if isinstance(data, tvm.ir.Call) and isinstance(data.op, tvm.ir.Op) and data.op.name == _BUFFER_DATA:
        source = data.args[0]
        return source if tirx.is_buffer_var(source) else None
    return None


def buffer_views(body) -> dict:
    """``{view buffer: the allocated buffer it sees}`` for views of on-chip buffers in ``body``
    (a view of a view maps to the allocation itself)."""
    allocated = set()
    tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, lambda a: allocated.add(a.buffer))])
    views = {}

    def on_decl(decl):
        source = view_source(decl)
        if source is None:
            return
        source = views.get(source, source)
        if source in allocated and str(source.ty.storage_scope) in _ON_CHIP:
            views[decl.buffer] = source

    tvm_ffi.structural_walk(body, [(tirx.DeclBuffer, on_decl)], order="pre")
    return views


def root_of(buffer, views: dict):
    return views.get(buffer, buffer)


def check_views(views: dict, kernel: str, kind: str) -> None:
    """Refuse the views registers cannot honour on ``kind``: a view of a fragment with another
    dtype (its elements would straddle registers), or one in another memory scope than its
    source. Shared views may change dtype (the pool is bytes; apply_layouts checks the layout)."""
    for view, source in views.items():
        vs, ss = str(view.ty.storage_scope), str(source.ty.storage_scope)
        if vs != ss:
            raise LoweringError(f"kernel '{kernel}': '{view.name}' views '{source.name}' ({ss}) "
                                f"as {vs}; a view keeps its buffer's memory scope")
        if str(view.ty.dtype) != str(source.ty.dtype) and ss == "local.fragment":
            raise LoweringError(
                f"kernel '{kernel}': T.view of {ss} buffer '{source.name}' ({source.ty.dtype}) as "
                f"{view.ty.dtype} is not supported by the {kind} backend yet (views of fragments "
                f"keep their dtype; views of shared and global memory may change it); use "
                f"T.reinterpret on the elements instead")


def drop_view_decls(body, views: dict):
    """``body`` without the declarations of ``views`` (their accesses were given the source's
    storage; the declarations would name memory that no longer exists)."""
    if not views:
        return body

    def on_decl(decl):
        if decl.buffer in views:
            return tirx.Evaluate(tirx.const(0, "int32"))
        return decl

    return tvm_ffi.structural_map(body, [(tirx.DeclBuffer, on_decl)])
