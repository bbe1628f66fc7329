"""float32 tile atomic adds from shared memory as 16-byte vector reductions on sm_90
(tilelang_cuda/vector_atomics.py): the same sums as the element-wise atomics, checked by the SIMT
interpreter against numpy in float64 (blocks adding into the same rows, ragged rows, a column
offset), the cases that keep element-wise atomics, and the SASS instruction."""

import re

import numpy as np
import pytest

import tilelang_core.language as T
from lowered import lower
from tilelang_cuda.interpreter import run_kernel
from tilelang_core.testing.oracle import run as run_path


def accumulate(M, N, rows, cols, col0, blocks=3, dtype="float32", threads=128):
    """Block b adds S[b] (rows x cols, through a shared tile) into D[b * 5 : b * 5 + rows, col0 : col0 + cols]:
    the blocks' row ranges overlap, and the last ones run past D's end when M is small."""
    @T.prim_func
    def acc(S: T.Tensor((blocks, rows, cols), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, threads=threads) as b:
            s = T.alloc_shared((rows, cols), dtype)
            T.copy(S[b, :, :], s)
            T.atomic_add(D[b * 5:b * 5 + rows, col0:col0 + cols], s)

    return acc


def expected(src, d, col0):
    out = d.astype(np.float64)
    for b in range(src.shape[0]):
        rows = min(src.shape[1], d.shape[0] - b * 5)
        if rows > 0:
            out[b * 5:b * 5 + rows, col0:col0 + src.shape[2]] += src[b, :rows].astype(np.float64)
    return out


CASES = [(64, 128, 16, 32, 0), (20, 36, 16, 32, 4), (9, 64, 8, 64, 0), (40, 8, 12, 4, 4)]


@pytest.mark.parametrize("M,N,rows,cols,col0", CASES)
def test_vector_reductions_add_what_element_atomics_add(M, N, rows, cols, col0):
    func = lower(accumulate(M, N, rows, cols, col0), arch="sm_90a")
    assert "tl_red_add_v4" in str(func.script())
    rng = np.random.default_rng(M * N + rows)
    src = rng.standard_normal((3, rows, cols)).astype(np.float32)
    d = rng.standard_normal((M, N)).astype(np.float32)
    want = expected(src, d, col0)
    run_kernel(func, {"S": src, "D": d})
    np.testing.assert_allclose(d, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch, dtype, col0, why", [
    ("sm_80", "float32", 0, "no vector reduction before sm_90"),
    ("sm_90a", "float32", 2, "a column offset of 2 floats is not a 16-byte boundary"),
    ("sm_90a", "float16", 0, "float16: not a float32 vector")])
def test_other_atomics_stay_element_wise_and_add_the_same(arch, dtype, col0, why):
    func = lower(accumulate(24, 40, 16, 32, col0, dtype=dtype), arch=arch)
    assert "tl_red_add_v4" not in str(func.script()), why
    rng = np.random.default_rng(4)
    src = rng.standard_normal((3, 16, 32)).astype(dtype)
    d = rng.standard_normal((24, 40)).astype(dtype)
    want = expected(src, d, col0)
    run_kernel(func, {"S": src, "D": d})
    np.testing.assert_allclose(d, want, rtol=2e-3 if dtype == "float16" else 1e-5, atol=2e-2 if dtype == "float16" else 1e-5)


def test_the_cpu_oracle_agrees():
    rng = np.random.default_rng(8)
    src = rng.standard_normal((3, 16, 32)).astype(np.float32)
    d = rng.standard_normal((20, 36)).astype(np.float32)
    want = expected(src, d, 4)
    out = run_path("cpu", accumulate(20, 36, 16, 32, 4), S=src, D=d)
    np.testing.assert_allclose(out["D"], want, rtol=1e-5, atol=1e-5)


def test_flash_attention_backward_on_sm90_mma_sync_interpreted():
    """The example's dQ path (tile atomic from shared) on sm_90a's mma.sync schedule, which the
    interpreter runs: S = 40 against 32-row tiles, causal."""
    import torch
    from test_cuda_examples_interpreted import example, rel_err

    bwd = example("attention/flash_attention_bwd.py")
    B, H, S, D = 1, 1, 40, 16
    q, k, v, do = (torch.randn(B, S, H, D).half() for _ in range(4))
    o, lse, dq_ref, dk_ref, dv_ref = bwd.reference(q, k, v, do, True)
    delta = np.full((B, H, S), np.nan, np.float32)
    run_kernel(lower(bwd.flash_bwd_delta.get_tir(B, H, S, D, block=32), arch="sm_90a", disable_wgmma=True,
                     disable_warp_specialized=True), {"O": o.half().numpy(), "dO": do.numpy(), "Delta": delta})
    dq = np.zeros((B, S, H, D), np.float32)
    dk, dv = (np.full((B, S, H, D), np.nan, np.float16) for _ in range(2))
    func = lower(bwd.flash_bwd.get_tir(B, H, S, D, True, block_M=32, block_N=32, num_stages=1, threads=128),
                 arch="sm_90a", disable_wgmma=True, disable_warp_specialized=True)
    assert "tl_red_add_v4" in str(func.script())
    run_kernel(func, {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "dO": do.numpy(), "LSE": lse.float().numpy(),
                      "Delta": delta, "dQ": dq, "dK": dk, "dV": dv})
    for got, ref in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        assert rel_err(got, ref.numpy()) < 5e-3


def test_sass_has_the_vector_reduction(tmp_path):
    from test_build import compile_kernel
    from tilelang_cuda import compiler

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    compile_kernel(accumulate(20, 36, 16, 32, 4), "sm_90a", tmp_path)
    reds = set(re.findall(r"\bREDG?\.\S+", compiler.sass(tmp_path / "kernel.cubin")))
    assert any("F32x4" in r for r in reds), reds
