"""Python spellings TileLang kernels use that TVMScript alone does not accept."""

import pytest
import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core import TileLangError


def test_chained_assignment_binds_every_name():
    @T.prim_func
    def chained(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        BK = BV = 32  # TileLang's NSA example writes its block sizes this way
        with T.Kernel(64 // BK, threads=32) as bx:
            for i in T.Parallel(BV):
                x = y = A[bx * BK + i] * 2.0
                B[bx * BK + i] = x + y

    a = torch.randn(64)
    b = torch.zeros(64)
    tilelang.compile(chained, target="cpu")(a, b)
    torch.testing.assert_close(b, 4 * a)


def test_tvm_primexpr_is_available_for_annotations():
    from tvm import tirx

    assert tirx.PrimExpr is not None
    assert isinstance(tirx.const(1, "int32"), tirx.PrimExpr)


def test_engine_callbacks_import_but_refuse_registration():
    from tilelang_core.engine import lower
    from tilelang_core.engine.callback import register_cuda_postproc_callback

    assert lower is tilelang.lower
    with pytest.raises(TileLangError, match="not supported by TileLang-X"):
        @register_cuda_postproc_callback
        def post(code, target):
            return code


def test_tilelang_cuda_internals_import_and_refuse_use():
    from tilelang_core.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter
    from tilelang_core.cuda import language as cuda_T

    with pytest.raises(TileLangError, match="TensorCoreIntrinEmitter is TileLang's hand-written CUDA"):
        TensorCoreIntrinEmitter(a_dtype="float16")
    with pytest.raises(TileLangError, match="write the kernel with T.gemm"):
        cuda_T.ptx_ldmatrix  # noqa: B018
    with pytest.raises(TileLangError):
        class Sub(TensorCoreIntrinEmitter):  # noqa: F811 - subclassing is a use too
            pass
