"""On the GPU present: TileLang's hand-written MMA code (T.ptx_ldmatrix / T.ptx_mma and the
TensorCoreIntrinEmitter of tilelang_core/cuda/intrinsics) against torch in float64: every operand
type and major, ragged shapes (the T.Parallel tile loads become pipelined copies that zero-fill
past the edge), on the target's default schedule (TMA producer on sm_90a) and the Ampere-class one
(cp.async). The interpreter checks the same on the CPU (test_warp_matrix_interpreted.py)."""

import warnings

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import emitter_kernels as ek  # noqa: E402
import tilelang_core as tl  # noqa: E402

AMPERE = {"tl.disable_wgmma": True, "tl.disable_warp_specialized": True, "tl.disable_tma_lower": True}


def operands(M, N, K, dtype, a_t, b_t):
    if dtype == "int8":
        a = torch.randint(-128, 128, (M, K), dtype=torch.int8, device="cuda")
        b = torch.randint(-128, 128, (K, N), dtype=torch.int8, device="cuda")
    else:
        a = torch.randn(M, K, device="cuda", dtype=getattr(torch, dtype))
        b = torch.randn(K, N, device="cuda", dtype=getattr(torch, dtype))
    return a, b, (a.t().contiguous() if a_t else a), (b.t().contiguous() if b_t else b)


def expect(c, a, b, dtype):
    if dtype == "float32":  # tf32 operands: the low 13 mantissa bits ignored
        a, b = (x.view(torch.int32).bitwise_and(-8192).view(torch.float32) for x in (a, b))
    ref = a.double() @ b.double()
    if dtype == "int8":
        assert torch.equal(c.long(), ref.long())
    else:
        torch.testing.assert_close(c.double(), ref, atol=1e-3 * a.shape[1] ** 0.5, rtol=1e-3)


@pytest.mark.parametrize("schedule", ["default", "ampere"])
@pytest.mark.parametrize("shape,dtype,acc,kw,majors", [
    ((256, 256, 256), "float16", "float32", {"warp_tiles": (64, 64)}, (False, True)),
    ((256, 256, 256), "bfloat16", "float32", {}, (False, False)),
    ((200, 136, 120), "float16", "float32", {"warp_tiles": (32, 24)}, (True, False)),   # ragged, 8-wide tiles
    ((256, 128, 256), "int8", "int32", {"chunk": 64}, (False, True)),
    ((128, 128, 128), "int8", "int32", {"chunk": 64}, (True, False)),                    # element loads
    ((128, 128, 64), "float32", "float32", {"chunk": 16}, (False, True)),
    ((256, 256, 128), "float16", "float32", {"layout": "mma", "c_rank": 2, "stages": 3, "warps": (4, 2)},
     (False, True)),
    # the accumulator a fragment laid out by make_mma_store_layout (T.copy / stmatrix epilogue)
    ((200, 136, 120), "float16", "float32", {"warp_tiles": (32, 24), "c_fragment": "copy"}, (False, True)),
    ((256, 128, 256), "int8", "int32", {"chunk": 64, "c_fragment": "stmatrix"}, (False, True)),
])
def test_emitter_gemm(shape, dtype, acc, kw, majors, schedule):
    M, N, K = shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(ek.emitter_gemm(M, N, K, dtype, acc, *majors, **kw), target="cuda",
                            pass_configs=AMPERE if schedule == "ampere" else None)
    a, b, A, B = operands(M, N, K, dtype, *majors)
    c = torch.full((M, N), 7, device="cuda", dtype=getattr(torch, acc))
    kernel(A, B, c)
    expect(c, a, b, dtype)


@pytest.mark.parametrize("dtype,trans_a,num_b", [("float16", False, 2), ("float16", True, 2), ("bfloat16", False, 1),
                                                 ("int8", False, 2), ("float32", False, 1)])
def test_one_mma(dtype, trans_a, num_b):
    kernel = tl.compile(ek.one_mma(dtype, trans_a, num_b), target="cuda")
    k = {"float16": 16, "bfloat16": 16, "int8": 32, "float32": 8}[dtype]
    a, bt, A, _ = operands(16, 8, k, dtype, trans_a, False)
    bt = bt.t().contiguous()  # (8, k)
    c = torch.zeros(16, 8, device="cuda", dtype=torch.int32 if dtype == "int8" else torch.float32)
    kernel(A, bt, c)
    expect(c, a, bt.t(), dtype)
