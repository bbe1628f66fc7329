"""The JIT: compile tirx PrimFuncs through a Backend, cache them, call them on tensors.

    import tilelang_core as tl

    kernel = tl.compile(prim_func, out_idx=[-1])      # -> JITKernel
    c = kernel(a, b)

    @tl.jit(out_idx=[-1])                             # lazy: factory returning a T.prim_func
    def matmul(M, N, K): ...
    c = matmul(1024, 1024, 1024)(a, b)

    @tl.jit                                           # eager: kernel written on tensors
    def add(A, B): ...
    c = add(a, b)

Modules: ``compiler`` (the stage driver, ``compile``), ``kernel`` (JITKernel), ``params``/``args``/``launcher``
(argument specs, checks with messages, the generated fast path), ``cache`` (disk cache layout and
protocol), ``decorator`` (@jit).
"""

from .cache import CacheCorruptionWarning, DiskCache
from .compiler import clear_memory_cache, compile, par_compile
from .decorator import EagerJIT, LazyJIT, detect_mode, jit
from .params import KernelParam

__all__ = ["CacheCorruptionWarning", "DiskCache", "EagerJIT", "JITKernel", "KernelParam", "LazyJIT",
           "clear_memory_cache", "compile", "detect_mode", "jit", "par_compile"]


def __getattr__(name: str):
    # JITKernel pulls in numpy and torch (argument checks): load it on first use so that
    # `import tilelang_core` (which imports `jit` and `compile` from here) stays light.
    if name == "JITKernel":
        from .kernel import JITKernel

        return JITKernel
    raise AttributeError(f"module 'tilelang_core.jit' has no attribute {name!r}")
