"""On an sm_90 GPU: tl.enable_cluster_multicast (pairs of CTAs sharing TMA tiles by multicast)
agrees with torch in float64. A file of its own, run as its own step by bench/h200_session.sh:
a protocol error in a cluster hangs the GPU rather than failing a test (skipped elsewhere)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                                reason="needs an sm_90 (Hopper) GPU")

import kernels  # noqa: E402
import test_gpu_hopper as hopper  # noqa: E402
import tilelang_core.language as T  # noqa: E402

CLUSTER = {"enable_cluster_multicast": True}


@pytest.mark.parametrize("shape,tiles", [
    ((1024, 1024, 1024), dict(bm=128, bn=256, bk=64, threads=256, stages=4)),
    ((1000, 520, 264), dict(bm=128, bn=256, bk=64, threads=256, stages=3)),  # ragged, 8 row blocks
    ((256, 512, 64), dict(bm=64, bn=256, bk=64, threads=256, stages=2)),  # one iteration
])
def test_cluster_gemm_matches_torch(tmp_path, shape, tiles):
    M, N, K = shape
    func = kernels.make_gemm(M, N, K, dtype=T.float16, out_dtype=T.float16, **tiles)
    kernel, source = hopper.build(func, tmp_path, **CLUSTER)
    assert "__cluster_dims__(1, 2, 1)" in source and "tl_tma_load_multicast" in source
    hopper.check_gemm(kernel, M, N, K, False, torch.float16)


@pytest.mark.parametrize("seq_len,dim", [(1024, 128), (1000, 128)])
def test_cluster_attention_matches_torch(seq_len, dim):
    import tilelang_core as tl

    ex = hopper.example("attention/flash_attention.py")
    func = ex.flash_attention.get_tir(2, 3, seq_len, dim, False, block_M=128, block_N=128, threads=256)
    kernel = tl.compile(func, out_idx=[3], target="cuda:sm_90a", pass_configs={"tl.enable_cluster_multicast": True})
    assert "__cluster_dims__(2, 1, 1)" in kernel.get_kernel_source()
    q, k, v = (torch.randn(2, seq_len, 3, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    out = kernel(q, k, v)
    ref = ex.reference(q.cpu(), k.cpu(), v.cpu(), False)
    assert (out.cpu().double() - ref).abs().max().item() < 2e-2
