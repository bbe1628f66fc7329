"""lower(): the thread-level PrimFunc the interpreter tests run (sm_80 unless told otherwise); the
numpy model of an fp16-accumulating mma (per_step_fp16)."""

import numpy as np


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


def per_step_fp16(a, b, k_step=16):
    """C rounded to fp16 after every k_step of K, the sums in float64."""
    M, K = a.shape
    c = np.zeros((M, b.shape[1]), np.float16)
    for k0 in range(0, K, k_step):
        step = a[:, k0:k0 + k_step].astype(np.float64) @ b[k0:k0 + k_step].astype(np.float64)
        c = (c.astype(np.float64) + step).astype(np.float16)
    return c
