"""T.Parallel loops reading a fragment at a shifted index (TileLang's sparse MLA backward:
``s_sh[bi, d] = acc[bi + s * 16, d]`` under ``if bi < 16``), run by the registers that hold the
element read (simt/transform/shifted_reads.py) on every SIMT target. cpu and the interpreters of
sm_80 / sm_90a (mma.sync), gfx942 (MFMA) and Apple (simdgroup matrices) against numpy in float64,
for gemm accumulators and copied fragments, constant and loop-dependent shifts; a shift whose read
could leave the fragment is refused on each."""

import warnings

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import LayoutError, TileLangError
from tilelang_core.testing.oracle import run

class _Target:
    def __init__(self, arch):
        self.arch = arch


def lowered(path, func):
    """The kernel lowered for ``path`` (sm_90a on its mma.sync schedule: the interpreter has no
    wgmma; the H200 test runs that) and the interpreter that runs it."""
    backend, _, arch = path.partition(":")
    pytest.importorskip(f"tilelang_{backend}")
    if backend == "cuda":
        from tilelang_cuda.interpreter import run_kernel
        from tilelang_cuda.options import CudaOptions as Options
        from tilelang_cuda.pipeline import CudaBackend as Backend
        options = {"disable_wgmma": True, "disable_warp_specialized": True} if arch == "sm_90a" else {}
    elif backend == "hip":
        from tilelang_hip.interpreter import run_kernel
        from tilelang_hip.options import HipOptions as Options
        from tilelang_hip.pipeline import HipBackend as Backend
        options = {}
    else:
        from tilelang_metal.interpreter import run_kernel
        from tilelang_metal.options import MetalOptions as Options
        from tilelang_metal.pipeline import MetalBackend as Backend
        options = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = Backend(_Target(arch)).lower(func, Options(**options))
    (gvar,) = mod.functions.keys()
    return mod[gvar], run_kernel


def on(path, func, **arrays):
    if path == "cpu":
        return run(path, func, **arrays)
    kernel, run_kernel = lowered(path, func)
    run_kernel(kernel, arrays)
    return arrays


PATHS = ["cpu", "cuda:sm_80", "cuda:sm_90a", "hip:gfx942", "metal:apple7"]


def halves(BS=32, D=64, split=2, source="gemm", guard=True):
    """O[s] = rows [s * BS/split, (s+1) * BS/split) of a (BS, D) fragment, one part at a time."""
    part = BS // split

    @T.prim_func
    def main(A: T.Tensor((BS, BS), "float16"), Bm: T.Tensor((BS, D), "float16"),
             O: T.Tensor((split, part, D), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((BS, BS), "float16")
            b = T.alloc_shared((BS, D), "float16")
            acc = T.alloc_fragment((BS, D), "float32")
            s_sh = T.alloc_shared((part, D), "float32")
            T.copy(A, a)
            T.copy(Bm, b)
            if source == "gemm":
                T.gemm(a, b, acc, clear_accum=True)
            else:
                T.copy(Bm, acc)
            for s in range(split):
                for bi, d in T.Parallel(BS, D):
                    if guard:
                        if bi < part:
                            s_sh[bi, d] = acc[bi + s * part, d] * 2.0
                    else:
                        s_sh[bi % part, d] = acc[bi + s * part, d] * 2.0
                T.copy(s_sh, O[s, :, :])

    return main


def last_rows(M=48, N=32, k=5):
    """O[i, j] = F[i + k, j] for i < M - k: a constant shift of a copied fragment."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), O: T.Tensor((M - k, N), "float32")):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((M, N), "float32")
            T.copy(A, f)
            for i, j in T.Parallel(M, N):
                if i < M - k:
                    O[i, j] = f[i + k, j] + 1.0

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("BS,D,split,source", [(32, 64, 2, "gemm"), (64, 32, 4, "gemm"), (32, 16, 2, "copy")])
def test_parts_of_a_fragment_read_one_after_another(path, BS, D, split, source):
    rng = np.random.default_rng(BS + D)
    a = rng.standard_normal((BS, BS)).astype(np.float16)
    b = rng.standard_normal((BS, D)).astype(np.float16)
    full = a.astype(np.float64) @ b.astype(np.float64) if source == "gemm" else b.astype(np.float64)
    out = on(path, halves(BS, D, split, source), A=a, Bm=b, O=np.full((split, BS // split, D), np.nan, np.float32))
    np.testing.assert_allclose(out["O"], 2 * full.reshape(split, BS // split, D), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("path", PATHS)
def test_a_constant_shift(path):
    a = np.random.default_rng(2).standard_normal((48, 32)).astype(np.float32)
    out = on(path, last_rows(), A=a, O=np.full((43, 32), np.nan, np.float32))
    np.testing.assert_array_equal(out["O"], a[5:] + 1.0)


@pytest.mark.parametrize("path", PATHS[1:])
def test_a_read_that_could_leave_the_fragment_is_refused(path):
    """Without the guard, iteration bi = 31 with s = 1 reads row 47 of a 32-row fragment."""
    with pytest.raises((LayoutError, TileLangError), match="'acc' is accessed at") as err:
        lowered(path, halves(guard=False))
    assert "if i < n - k" in str(err.value)
