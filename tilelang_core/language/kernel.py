"""``T.Kernel``: the launch of a grid of thread blocks, and the thread/block index accessors."""

from __future__ import annotations

import contextlib
import math

import tvm
import tvm_ffi
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError, FrontendValueError
from ..ir.import_source import attr_key

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_THREAD_NAMES = ("tx", "ty", "tz")

_ACTIVE: list[Kernel] = []
_IMPORTED: dict[str, str] = {}  # T.import_source of the kernel being parsed: attribute key -> source


def _extent(value, what: str, must_be_const: bool):
    if isinstance(value, bool):
        raise FrontendError(f"{what} must be an integer, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise FrontendError(f"{what} must be positive, got {value}")
        return value
    if isinstance(value, tvm.tirx.IntImm):
        return _extent(int(value.value), what, must_be_const)
    if isinstance(value, tvm.ir.Expr) and tvm.ir.is_prim_expr(value) \
            and str(value.ty).startswith(("int", "uint")):
        if must_be_const:
            raise FrontendError(f"{what} must be a compile-time constant, got the expression "
                                f"{value}")
        return value
    raise FrontendError(f"{what} must be an integer, got {value!r}")


def _normalize_threads(threads) -> list[int]:
    """TileLang's helper: ``threads`` as a 3-D block ``[x, y, z]`` (None is 128 threads)."""
    extents = [128] if threads is None else list(threads) if isinstance(threads, (list, tuple)) else [threads]
    if not 1 <= len(extents) <= 3:
        raise FrontendValueError(f"T.Kernel threads takes 1 to 3 extents, got {len(extents)}")
    for t in extents:
        if isinstance(t, bool) or not isinstance(t, int) or t <= 0:
            raise FrontendValueError(f"T.Kernel threads must be positive integers, got {threads!r}")
    return extents + [1] * (3 - len(extents))


class Kernel:
    """Launch a grid of thread blocks; the ``with`` body runs once per block.

    ``as bx`` binds the block index of a 1-D grid, ``as (bx, by)`` of a 2-D grid, and so on.
    ``threads`` is the block size: an int, or a tuple for 2-D/3-D blocks (compile-time constants).

    Example::

        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128) as (bx, by):
            tx = T.get_thread_binding()
    """

    #: the cluster shape (x, y, z) of a T.ClusterKernel (language/cluster.py); None for T.Kernel
    cluster_dims: tuple[int, int, int] | None = None

    def __init__(self, *blocks, threads=128, is_cpu: bool = False, prelude=None):
        if is_cpu:
            raise FrontendError("T.Kernel(is_cpu=True) is not supported: kernels are lowered "
                                "per target by the backend, the CPU one included")
        if prelude is not None and not isinstance(prelude, str):
            raise FrontendError(f"T.Kernel(prelude=...) takes device source as a string, got {prelude!r}")
        self.prelude = prelude  # put before the kernel (T.import_source)
        if len(blocks) == 1 and isinstance(blocks[0], (list, tuple)):
            blocks = tuple(blocks[0])
        if not blocks:  # T.Kernel(threads=128): one block, as in TileLang
            blocks = (1,)
        if len(blocks) > 3:
            raise FrontendError(f"T.Kernel takes up to 3 grid extents, got {len(blocks)}")
        self.blocks = [_extent(b, f"T.Kernel grid extent {i}", False)
                       for i, b in enumerate(blocks)]
        thread_list = list(threads) if isinstance(threads, (list, tuple)) else [threads]
        if not 1 <= len(thread_list) <= 3:
            raise FrontendError(f"T.Kernel threads takes 1 to 3 extents, got {len(thread_list)}")
        self.threads = [_extent(t, "T.Kernel threads", True) for t in thread_list]
        self.block_vars: list = []
        self.thread_vars: list = []
        self.thread_id = None  # the linear thread index (the one threadIdx.x launch)
        self.barriers: list = []  # T.alloc_barrier buffers (language/barriers.py)
        self.cluster_barriers: list = []  # those of them from T.alloc_cluster_barrier
        self.rng_generator: str | None = None  # T.rng_init's cuRAND state type (language/random.py)
        self.thread_aliases: list = []  # (var, dim): ``tk = T.get_thread_binding(1)`` and the like
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self):
        if not IRBuilder.is_in_scope():
            raise FrontendError("T.Kernel can only be used inside a T.prim_func kernel")
        if _ACTIVE:
            raise FrontendError("T.Kernel cannot be nested inside another T.Kernel")
        stack = contextlib.ExitStack()
        stack.__enter__()
        for tag, extent in zip(_BLOCK_TAGS, self.blocks, strict=False):
            self.block_vars.append(stack.enter_context(B.launch_thread(tag, extent)))
        # A 2-D/3-D block is one threadIdx.x of x * y * z threads, ty = tid // x and so on: CUDA's
        # linear thread id, so warps hold the same threads; every tile op and backend sees one
        # thread dimension.
        total, inner = math.prod(self.threads), 1
        flat = stack.enter_context(B.launch_thread(_THREAD_TAGS[0], total))
        IRBuilder.name(_THREAD_NAMES[0], flat)
        self.thread_id = flat
        for extent in self.threads:
            index = flat if inner == 1 else tvm.tirx.floordiv(flat, inner)
            if extent == 1:
                index = tvm.tirx.const(0, "int32")
            elif inner * extent < total:
                index = tvm.tirx.floormod(index, extent)
            self.thread_vars.append(index)
            inner *= extent
        self._stack = stack
        _ACTIVE.append(self)
        if self.cluster_dims is not None:
            from .cluster import enter_cluster

            enter_cluster(self, stack)
        if self.prelude is not None:
            import_source(self.prelude)
        return self.block_vars[0] if len(self.block_vars) == 1 else tuple(self.block_vars)

    def __exit__(self, exc_type, exc, tb):
        _ACTIVE.pop()
        stack, self._stack = self._stack, None
        return stack.__exit__(exc_type, exc, tb)

    def note_binding(self, var, value) -> None:
        """Remember ``var`` as thread dimension d when ``value`` is the kernel's index of d, so that
        ops taking thread bindings (T.tvm_thread_allreduce) know the name bound to it."""
        for d, index in enumerate(self.thread_vars):
            if tvm_ffi.structural_equal(index, value):
                self.thread_aliases.append((var, d))
                return

    def thread_dimension(self, expr) -> int | None:
        """The thread dimension ``expr`` is the index of (itself or a name bound to it), or None."""
        for d, index in enumerate(self.thread_vars):
            if tvm_ffi.structural_equal(index, expr):
                return d
        return next((d for var, d in self.thread_aliases if var.same_as(expr)), None)

    def get_thread_binding(self, dim: int = 0):
        return _pick(self.thread_vars, dim, "thread")

    def get_block_binding(self, dim: int = 0):
        return _pick(self.block_vars, dim, "block")


def _pick(vars_, dim, what):
    if not isinstance(dim, int) or not 0 <= dim < len(vars_):
        raise FrontendError(f"the kernel has {len(vars_)} {what} dimensions; dim={dim!r} is "
                            "out of range")
    return vars_[dim]


def current_kernel(what: str) -> Kernel:
    """The innermost open kernel, or a FrontendError saying ``what`` needs one."""
    if not _ACTIVE:
        raise FrontendError(f"{what} must be used inside 'with T.Kernel(...)'")
    return _ACTIVE[-1]


def import_source(source: str | None = None) -> None:
    """TileLang's ``T.import_source``: device source (CUDA C++ functions) put before the kernel,
    for ``T.call_extern`` to call (ir/import_source.py). None does nothing, as in TileLang. Only
    the cuda backend compiles it; the others refuse the kernel by name."""
    if source is None:
        return
    current_kernel("T.import_source")
    if not isinstance(source, str):
        raise FrontendError(f"T.import_source takes the device source as a string, got {source!r}")
    _IMPORTED[attr_key(source)] = source  # (TVM takes function attributes only at the top)


def with_imported_sources(func):
    """``func`` with the sources the kernel parsed last imported, as its attributes."""
    for key, source in sorted(_IMPORTED.items()):
        func = func.with_attr(key, source)
    _IMPORTED.clear()
    return func


def reset_kernel_stack() -> None:
    """Forget open kernels (after a parse error left one open), the sources imported by the kernel
    parsed last, the pointer parameters it made tensors (pointers.py) and its function attributes
    (annotations.py)."""
    from . import annotations, pointers

    _ACTIVE.clear()
    _IMPORTED.clear()
    pointers.reset()
    annotations.reset_function_attrs()


def get_thread_binding(dim: int = 0):
    """The thread index along ``dim`` of the enclosing ``T.Kernel`` (``threadIdx.x`` for 0)."""
    return current_kernel("T.get_thread_binding").get_thread_binding(dim)


def get_block_binding(dim: int = 0):
    """The block index along ``dim`` of the enclosing ``T.Kernel`` (``blockIdx.x`` for 0)."""
    return current_kernel("T.get_block_binding").get_block_binding(dim)


def get_thread_bindings():
    return list(current_kernel("T.get_thread_bindings").thread_vars)


def _same_extent(a, b) -> bool:
    a, b = (v.value if isinstance(v, tvm.tirx.IntImm) else v for v in (a, b))
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    return tvm_ffi.structural_equal(a, b)


def launch_thread(tag: str, extent):
    """TVM's ``T.launch_thread(tag, extent)`` inside a ``T.Kernel`` (TileLang kernels write
    ``tx = T.launch_thread("threadIdx.x", 256)``): the kernel's own index along ``tag``, whose
    extent must be the kernel's there (a second launch of another size is not one kernel)."""
    kernel = current_kernel("T.launch_thread")
    tags = {t: ("thread", d) for d, t in enumerate(_THREAD_TAGS)}
    tags.update({t: ("block", d) for d, t in enumerate(_BLOCK_TAGS)})
    if tag not in tags:
        raise FrontendError(f"T.launch_thread: tag must be one of {', '.join(tags)}, got {tag!r}")
    what, d = tags[tag]
    sizes = kernel.threads if what == "thread" else kernel.blocks
    size = sizes[d] if d < len(sizes) else 1
    if not _same_extent(extent, size):
        raise FrontendError(f"T.launch_thread({tag!r}, {extent}): the enclosing T.Kernel has {size} along {tag}; "
                            f"T.launch_thread inside a T.Kernel names its index, so the extents must agree")
    if d >= len(sizes):
        return tvm.tirx.const(0, "int32")
    return (kernel.thread_vars if what == "thread" else kernel.block_vars)[d]


def get_block_bindings():
    return list(current_kernel("T.get_block_bindings").block_vars)
