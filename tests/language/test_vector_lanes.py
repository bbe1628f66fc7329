"""Vector values the kernel builds and takes apart (TileLang's spellings): ``T.bfloat16x2(a, b)``
packs lanes, ``T.extract_lane(v, k)`` reads one, ``T.alloc_var(T.float16x2)`` is a vector
register starting at zero. Numerics on every reference path; CUDA source compiled by nvcc."""

import numpy as np
import pytest
from tvm import tirx

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

CASES = [("bfloat16", 2), ("float16", 2), ("float32", 2), ("float32", 4)]


def reverse_through_a_vector(dtype, lanes):
    """B = A reversed, through one packed vector variable; C = the variable before packing."""
    vector = getattr(T, f"{dtype}x{lanes}")

    @T.prim_func
    def kernel(A: T.Tensor((lanes,), dtype), B: T.Tensor((lanes,), dtype), C: T.Tensor((lanes,), dtype)):
        with T.Kernel(1, threads=1):
            packed = T.alloc_var(vector)
            C[0] = T.extract_lane(packed, 0)
            C[lanes - 1] = T.extract_lane(packed, lanes - 1)
            if lanes == 2:
                packed = vector(A[0], A[1])
            else:
                packed = vector(A[0], A[1], A[2], A[3])
            B[lanes - 1] = T.extract_lane(packed, 0)
            B[lanes - 2] = T.extract_lane(packed, 1)
            if lanes == 4:
                B[1] = T.extract_lane(packed, 2)
                B[0] = T.extract_lane(packed, 3)

    return kernel


def _np(dtype):
    # bfloat16 arrays are float32 on the interpreters' side (which hold bfloat16 as float32);
    # the cpu path gets torch bfloat16 tensors (_run)
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


def _run(path, func, dtype, **arrays):
    if path != "cpu" or dtype != "bfloat16":
        return run(path, func, **arrays)
    import torch

    import tilelang_core as tilelang

    tensors = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in arrays.items()}
    tilelang.compile(func, target="cpu")(*tensors.values())
    for k, v in arrays.items():
        v[...] = tensors[k].float().numpy()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("dtype", "lanes"), CASES)
def test_pack_and_extract_lanes(path, dtype, lanes):
    if path.startswith(("hip", "metal")) and dtype == "bfloat16":
        pytest.skip("bfloat16 tensors: covered on cpu and cuda")
    if path.startswith("metal"):  # the Metal backend's dtype table has no vector registers
        from tilelang_core.errors import LoweringError

        with pytest.raises(LoweringError, match=f"uses {dtype}x{lanes}"):
            run(path, reverse_through_a_vector(dtype, lanes), A=np.zeros(lanes, dtype),
                B=np.zeros(lanes, dtype), C=np.zeros(lanes, dtype))
        return
    a = (np.arange(lanes) * 1.25 - 2.5).astype(_np(dtype))
    b = np.zeros(lanes, _np(dtype))
    c = np.full(lanes, 7, _np(dtype))
    _run(path, reverse_through_a_vector(dtype, lanes), dtype, A=a, B=b, C=c)
    np.testing.assert_array_equal(b.astype(np.float64), a[::-1].astype(np.float64))
    assert c[0] == 0 and c[lanes - 1] == 0  # a vector variable starts at zero, every lane


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_vector_variables_compile_for_cuda(arch, tmp_path):
    from test_printer_limits import _cuda_source

    for i, (dtype, lanes) in enumerate(CASES):
        (tmp_path / str(i)).mkdir()
        _cuda_source(reverse_through_a_vector(dtype, lanes), arch, tmp_path / str(i))


def test_extract_lane_builds_a_shuffle_and_checks_its_lane():
    v = tirx.Var("v", "float16x2")
    lane = T.extract_lane(v, tirx.IntImm("int32", 1))
    assert isinstance(lane, tirx.Shuffle) and str(lane.ty) == "float16" and int(lane.indices[0]) == 1
    with pytest.raises(TypeError, match="expects a PrimExpr"):
        T.extract_lane(1, 0)
    with pytest.raises(ValueError, match="expects a vector"):
        T.extract_lane(tirx.Var("s", "float16"), 0)
    with pytest.raises(TypeError, match="compile-time integer"):
        T.extract_lane(v, tirx.Var("k", "int32"))
    with pytest.raises(IndexError, match="out of bounds"):
        T.extract_lane(v, 2)


def test_packing_the_wrong_number_of_lanes_is_refused():
    from tilelang_core.errors import FrontendError

    with pytest.raises(FrontendError, match="packs 2 lanes, got 3 values"):
        @T.prim_func
        def kernel(A: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=1):
                packed = T.alloc_var(T.float16x2)
                packed = T.float16x2(A[0], A[1], A[2])
                A[3] = T.extract_lane(packed, 0)


def test_tilelang_tir_module_path_reexports_the_builders():
    from tilelang_core.language.tir import ir as tir_ir

    assert tir_ir.Shuffle is tirx.Shuffle and "Shuffle" in tir_ir.__all__
    assert tir_ir.extract_lane is T.extract_lane and tir_ir.copy is T.copy
