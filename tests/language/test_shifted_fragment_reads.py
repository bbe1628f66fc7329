"""T.Parallel loops reading a fragment at a shifted index (TileLang's sparse MLA backward:
``s_sh[bi, d] = acc[bi + s * 16, d]`` under ``if bi < 16``), run by the registers that hold the
element read (simt/transform/shifted_reads.py), opt-in on cuda (``tl.enable_shifted_fragment_reads``:
off by default until a wrong answer of TileLang's sparse MLA backward on the H200 is explained).
cpu and the sm_80 / sm_90a interpreters with the option against numpy in float64, for gemm
accumulators and copied fragments, constant and loop-dependent shifts; refused without it (and on
hip and metal), and a shift whose read could leave the fragment is refused either way."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import LayoutError, TileLangError
from tilelang_core.testing.oracle import run

OPT_IN = {"enable_shifted_fragment_reads": True}


def on(path, func, **arrays):
    """cpu through the oracle; cuda archs through the interpreter with the option (sm_90a on its
    mma.sync path: the interpreter has no wgmma; the H200 test runs that)."""
    if path == "cpu":
        return run(path, func, **arrays)
    pytest.importorskip("tilelang_cuda")
    from tilelang_cuda.interpreter import run_kernel
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    arch = path.partition(":")[2]
    mma_sync = {"disable_wgmma": True, "disable_warp_specialized": True} if arch == "sm_90a" else {}
    mod = CudaBackend(type("Target", (), {"arch": arch})()).lower(func, CudaOptions(**OPT_IN, **mma_sync))
    (gvar,) = mod.functions.keys()
    run_kernel(mod[gvar], arrays)
    return arrays


PATHS = ["cpu", "cuda:sm_80", "cuda:sm_90a"]


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


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_read_that_could_leave_the_fragment_is_refused(arch):
    """Without the guard, iteration bi = 31 with s = 1 reads row 47 of a 32-row fragment."""
    pytest.importorskip("tilelang_cuda")
    import tilelang_core as tl

    with pytest.raises((LayoutError, TileLangError), match="acc"):
        tl.compile(halves(guard=False), target=f"cuda:{arch}", pass_configs={"tl.enable_shifted_fragment_reads": True})


@pytest.mark.parametrize("target", ["cuda:sm_90a", "hip", "metal"])
def test_without_the_option_a_shifted_read_is_refused_with_the_way_out(target):
    import tilelang_core as tl

    pytest.importorskip(f"tilelang_{target.partition(':')[0]}")
    with pytest.raises(LayoutError, match="'acc' is accessed at") as err:
        tl.compile(halves(), target=target)
    assert "[bi + s * 16, d]" in str(err.value)
    assert ("tl.enable_shifted_fragment_reads" in str(err.value)) == target.startswith("cuda")
