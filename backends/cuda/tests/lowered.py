"""lower(): the thread-level PrimFunc the interpreter tests run (sm_80 unless told otherwise)."""


def lower(func, arch="sm_80", **options):
    """The cuda backend's lowering of ``func`` for ``arch`` with CudaOptions(**options)."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        pass

    Target.arch = arch
    mod = CudaBackend(Target()).lower(func, CudaOptions(**options))
    (gvar,) = mod.functions.keys()
    return mod[gvar]
