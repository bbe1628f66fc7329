"""Checks a SIMT backend runs around the kit's lowering, against its capability table: element
types the arch lacks (before), the shared memory a block may use (after). Errors name the kernel
and say what to change, before a vendor compiler says something obscure.

Example::

    check_dtypes(func, "gfx1100", "hip", ARCHS, capability)      # capability(arch, "dtypes")
    check_shared_memory(lowered, "gfx942", limit=65536, what="LDS (shared memory)")
"""

from __future__ import annotations

from typing import Callable

from tilelang_core.errors import LoweringError
from tilelang_core.transform.lower_tile_ops import kernel_name


def check_dtypes(func, arch: str, kind: str, archs, capability: Callable[[str, str], tuple]) -> None:
    import tvm_ffi
    from tvm import tirx

    from .transform.mbarriers import barrier_buffers

    supported = set(capability(arch, "dtypes"))
    seen = {str(p.ty.dtype) for p in func.params if tirx.is_buffer_var(p)}
    # T.alloc_barrier's uint64 words are the mbarriers' own storage (LowerBarrierInits refuses
    # them where the backend has none), not the kernel's data
    barriers = barrier_buffers(func.body)

    def on_alloc(alloc):
        if not any(alloc.buffer.same_as(b) for b in barriers):
            seen.add(str(alloc.buffer.ty.dtype))

    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, on_alloc),
                                        (tirx.DeclBuffer, lambda d: seen.add(str(d.buffer.ty.dtype)))])  # T.view
    def vector_of_supported(dt: str) -> bool:
        # T.alloc_var(T.bfloat16x2): a vector register of a supported element, 16 bytes at most.
        # Not of 8-bit elements: TVM's printers write int8x4 vectors as int (make_int(...)).
        element, _, lanes = dt.partition("x")
        bits = tvm_ffi.dtype(element).bits if element in supported else 0
        return bool(lanes) and bits >= 16 and int(lanes) in (2, 4, 8) and int(lanes) * bits <= 128

    for dt in sorted(d for d in seen - supported if not vector_of_supported(d)):
        having = [a for a in archs if dt in capability(a, "dtypes")]
        hint = f"it needs {' or '.join(having)}" if having else f"no {kind} arch supports it"
        raise LoweringError(f"kernel '{kernel_name(func)}' uses {dt}, which {arch} does not "
                            f"support ({hint}). Pick another target arch or dtype.")


def check_threads(func, arch: str, limit: int, what: str = "block") -> None:
    """Refuse a block larger than the target allows, at the user's T.Kernel line (the compiler
    would take ``__launch_bounds__(100000)`` and the launch fail with a driver error)."""
    import tvm_ffi
    from tvm import tirx

    from tilelang_core.lowering import source_location

    found = []

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and str(attr.node.thread_tag).startswith("threadIdx"):
            found.append(attr)

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    total, where = 1, None
    for attr in found:
        if not isinstance(attr.value, tirx.IntImm):
            return  # (a symbolic block size is refused by the lowering itself)
        total *= int(attr.value.value)
        where = where or source_location(attr)
    if total > limit:
        raise LoweringError(f"kernel '{kernel_name(func)}' asks for {total} threads per {what}, more than "
                            f"the {limit} {arch} allows; use threads={limit} or fewer"
                            + (f"\n  --> {where}" if where else ""))


def check_shared_memory(func, arch: str, limit: int | None, what: str = "shared memory",
                        source=None) -> None:
    """Refuse a lowered kernel that needs more shared memory than ``limit``; ``source`` (the kernel
    before lowering) names its largest shared buffer and that buffer's line."""
    from .pipeline import shared_bytes

    used = shared_bytes(func)
    if limit is None or used <= limit:
        return
    largest = _largest_shared(source) if source is not None else None
    detail = ""
    if largest is not None:
        name, size, where = largest
        detail = f" The largest is '{name}' ({size} bytes)" + (f"\n  --> {where}" if where else "")
    raise LoweringError(f"kernel '{kernel_name(func)}' needs {used} bytes of {what}, more than the "
                        f"{limit} bytes {arch} allows per block. Use smaller tiles or fewer "
                        f"pipeline stages (num_stages).{detail}")


def _largest_shared(func):
    """(name, bytes, source location) of the biggest shared allocation the kernel writes."""
    import tvm_ffi
    from tvm import tirx

    from tilelang_core.lowering import source_location

    from .pipeline import buffer_bytes

    found = []

    def on_alloc(alloc):
        buf = alloc.buffer
        if str(buf.ty.storage_scope).startswith("shared") and \
                all(isinstance(extent, tirx.IntImm) for extent in buf.ty.shape):
            found.append((buffer_bytes(buf), str(buf.name), source_location(alloc)))

    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, on_alloc)])
    if not found:
        return None
    size, name, where = max(found, key=lambda f: f[0])
    return name, size, where
