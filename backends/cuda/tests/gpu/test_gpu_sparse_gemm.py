"""On the GPU present: T.gemm_sp (TileLang's 2:4 sparse GEMM, language/sparse_gemm.py) against
torch in float64 on random sparsity patterns: fp16/int8/float32 (tf32), 8-, 16- and 32-bit
metadata, transposed A_sparse and E, ragged M and N, the default sm_90a schedule (wgmma reading
the expanded tile) and the Ampere-class one. The cpu oracle and the interpreters run the same in
tests/language/test_sparse_gemm.py."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

sys.path.insert(0, str(Path(__file__).parents[4] / "tests" / "language"))
import sparse_gemm_kernels as sk  # noqa: E402
import tilelang_core as tl  # noqa: E402

AMPERE = {"tl.disable_wgmma": True, "tl.disable_warp_specialized": True}


@pytest.mark.parametrize("schedule", ["default", "ampere"])
@pytest.mark.parametrize("M,N,K,dtype,meta,kw", [
    (256, 256, 256, "float16", "int16", {"bm": 128, "bn": 128, "bk": 64}),
    (200, 136, 128, "float16", "int32", {"trans_a": True, "trans_e": True}),
    (128, 128, 128, "int8", "int32", {}),
    (128, 128, 128, "float32", "int16", {}),
    (128, 64, 128, "float16", "int8", {"trans_e": True}),
])
def test_sparse_gemm(M, N, K, dtype, meta, kw, schedule):
    rng = np.random.default_rng(M + K)
    dense = sk.semi_sparse(rng, M, K, dtype)
    sparse, e = sk.compress(dense, dtype, meta)
    tdt = {"float16": torch.float16, "float32": torch.float32, "int8": torch.int8}[dtype]
    acc = "int32" if dtype == "int8" else "float32"
    b = torch.randint(-100, 100, (K, N), device="cuda").to(tdt) if dtype == "int8" else \
        torch.randn(K, N, device="cuda").to(tdt)
    a_in = torch.from_numpy(np.ascontiguousarray(sparse.T if kw.get("trans_a") else sparse)).to(tdt).cuda()
    e_in = torch.from_numpy(np.ascontiguousarray(e.T if kw.get("trans_e") else e)).cuda()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(sk.sparse_gemm(M, N, K, dtype, meta, acc, **kw), target="cuda",
                            pass_configs=AMPERE if schedule == "ampere" else None)
    c = torch.full((M, N), 7, device="cuda", dtype=getattr(torch, acc))
    kernel(a_in, e_in, b, c)
    ref = torch.from_numpy(dense).cuda() @ b.double()
    if dtype == "int8":
        assert torch.equal(c.long(), ref.long())
    elif dtype == "float32":
        torch.testing.assert_close(c.double(), ref, rtol=2e-3, atol=2e-2 * K ** 0.5)
    else:
        torch.testing.assert_close(c.double(), ref, rtol=1e-3, atol=1e-3 * K ** 0.5)
