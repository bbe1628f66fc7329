"""StaticThreadgroup: the kit's ``shared.dyn`` pool becomes a static ``threadgroup`` array.

The SIMT kit pools shared memory into one ``shared.dyn`` array (CUDA's ``extern __shared__``,
sized at launch). TVM's Metal codegen has no dynamic threadgroup memory (it refuses the scope),
and a fixed-size array declared in the kernel body is what MSL kernels usually do: the size is
known after lowering, so every ``shared.dyn`` buffer is re-declared with scope ``shared``, which
the Metal codegen prints as ``threadgroup T name[N]``; its typed views go along. Accesses, including the ``address_of``
operands of the copy and simdgroup helpers, are rewritten to the new buffer.

``T.alloc_var`` variables (scope ``local.var``, which TVM's CUDA printer knows and its Metal
codegen refuses: "Unknown storage scope") become one-element ``local`` arrays the same way.

Example::

    func = static_threadgroup(func)     # alloc_buffer((4096,), scope="shared.dyn") -> scope="shared"
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

DYNAMIC = "shared.dyn"


def static_threadgroup(func: tirx.PrimFunc) -> tirx.PrimFunc:
    return _rescope(_rescope(func, DYNAMIC, "shared"), "local.var", "local")


def _rescope(func: tirx.PrimFunc, old_scope: str, new_scope: str) -> tirx.PrimFunc:
    """Every buffer of ``old_scope`` (and its typed views) re-declared in ``new_scope``."""
    dynamic = {}

    def collect(alloc):
        buf = alloc.buffer
        if str(buf.ty.storage_scope) == old_scope:
            dynamic[buf] = tirx.decl_buffer(buf.ty.shape, str(buf.ty.dtype), name=str(buf.name),
                                            scope=new_scope)

    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, collect)])
    if not dynamic:
        return func
    pools = dict(dynamic)
    views = {}  # the pool's typed views (DeclBuffers over its data) move with it

    def collect_view(decl):
        buf = decl.buffer
        if str(buf.ty.storage_scope) == old_scope:
            dynamic[buf] = tirx.decl_buffer(buf.ty.shape, str(buf.ty.dtype), name=str(buf.name),
                                            scope=new_scope)
            data = decl.data
            source = data.args[0] if isinstance(data, tvm.ir.Call) and data.args else None
            views[buf] = next((new for old, new in pools.items() if source is not None and old.same_as(source)), None)

    tvm_ffi.structural_walk(func.body, [(tirx.DeclBuffer, collect_view)])

    def on_load(load):
        new = dynamic.get(load.source)
        return tirx.BufferLoad(new, load.indices) if new is not None else load

    def on_store(store):
        new = dynamic.get(store.buffer)
        return tirx.BufferStore(new, store.value, store.indices) if new is not None else store

    def on_alloc(alloc):
        new = dynamic.get(alloc.buffer)
        return tirx.AllocBuffer(new) if new is not None else alloc

    def on_decl(decl):
        new, pool = dynamic.get(decl.buffer), views.get(decl.buffer)
        return tirx.DeclBuffer(new, data=pool.data) if new is not None and pool is not None else decl

    body = tvm_ffi.structural_map(func.body, [(tvm.ir.TensorLoad, on_load)])
    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store), (tirx.AllocBuffer, on_alloc),
                                         (tirx.DeclBuffer, on_decl)])
    return func.with_body(body)
