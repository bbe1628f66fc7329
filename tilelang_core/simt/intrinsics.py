"""How the kit's rules and passes call the backend's device helpers from TIRX.

Helpers are plain ``call_extern`` calls by name (the list and their C contract are in this
package's docstring); each backend defines them in the prelude its codegen splices into the
device source. Pointer operands are ``address_of(buf[i])``.

Example::

    call("tl_cp_async_16", address_of(A_s, o), tirx.address_of(A[g]), pred)
"""

from __future__ import annotations

from tvm import tirx

#: prefix of the atomic helpers (``tl_atomic_add``, ``tl_atomic_max``, ``tl_atomic_min``)
ATOMIC_HELPER = "tl_atomic_"


def call(name: str, *args, dtype: str = "void"):
    """``name(args...)`` as an Evaluate statement (void helpers) or an expression (``dtype``)."""
    expr = tirx.call_extern(dtype, name, *args)
    return tirx.Evaluate(expr) if dtype == "void" else expr


def address_of(buffer, index):
    """``&buffer[index]`` for a flat (1-D) buffer."""
    return tirx.address_of(tirx.BufferLoad(buffer, [index]))


def syncthreads():
    """A block-wide barrier, as TVM's own ``tvm_storage_sync("shared")`` so that TVM's passes
    (shared memory merging, liveness) know what it is; each codegen prints its own barrier
    (``__syncthreads()`` on CUDA and HIP, ``threadgroup_barrier`` on Metal)."""
    return tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", "shared"))


def is_call_of(stmt, prefix: str) -> bool:
    """Whether ``stmt`` is the Evaluate of a helper whose name starts with ``prefix``."""
    if not isinstance(stmt, tirx.Evaluate) or not hasattr(stmt.value, "op"):
        return False
    call = stmt.value
    return getattr(call.op, "name", "") == "tirx.call_extern" and str(call.args[0].value).startswith(prefix)
