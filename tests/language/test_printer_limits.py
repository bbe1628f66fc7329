"""Kernels TVM's printers or passes could not take (found running TileLang's language tests and
examples): ``T.unroll`` over an extent known only at run time, a loop-invariant 8-bit value
stored through a vectorized loop (a broadcast of a variable, or of a constant over more than 4
lanes: TileKernels' fused per-channel cast zeroing a padding row of float8), comparisons over
more than 4 lanes, and a name bound in a T.Parallel body to a bfloat16 element converted to
float32 (TVM's LLVM build; cpu transform/bf16_binds.py).
Each runs on every reference path and matches numpy; the CUDA source is compiled by nvcc for
sm_80 and sm_90a."""

import shutil
from pathlib import Path

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(11)


def runtime_unroll():
    @T.prim_func
    def kernel(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            acc = T.alloc_var("float32")
            acc = A[tx]
            for i in T.unroll(n % 8):
                acc += A[i]
            B[tx] = acc

    return kernel


def int8_broadcast(lanes, dtype):
    @T.prim_func
    def kernel(A: T.Tensor((1,), dtype), B: T.Tensor((lanes,), dtype)):
        with T.Kernel(1, threads=32):
            a = T.alloc_local((lanes,), dtype)
            b = T.alloc_var(dtype)
            b = A[0] + 1
            for i in T.vectorized(lanes):
                a[i] = b
            for i in T.serial(lanes):
                B[i] = a[i]

    return kernel


def padded_rows(dtype, lanes, fill, rows=8):
    """Row i of Y is row Pos[i] of X, or ``fill`` where Pos[i] < 0, staged in shared memory by
    vectorized loops of ``lanes`` (TileKernels' per_channel_cast_fused with a token expansion)."""
    cols = 32 * lanes

    @T.prim_func
    def kernel(X: T.Tensor((rows, cols), dtype), Pos: T.Tensor((rows,), "int32"), Y: T.Tensor((rows, cols), dtype)):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            s = T.alloc_shared((rows, cols), dtype)
            for i in T.serial(rows):
                if Pos[i] >= 0:
                    for j in T.vectorized(lanes):
                        s[i, tx * lanes + j] = X[Pos[i], tx * lanes + j]
                else:
                    for j in T.vectorized(lanes):
                        s[i, tx * lanes + j] = fill
            for i in T.serial(rows):
                for j in T.vectorized(lanes):
                    Y[i, tx * lanes + j] = s[i, tx * lanes + j]

    return kernel


def half_select(lanes=8):
    @T.prim_func
    def kernel(A: T.Tensor((32 * lanes,), "float16"), B: T.Tensor((32 * lanes,), "float16"),
               C: T.Tensor((32 * lanes,), "float16")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            for j in T.vectorized(lanes):
                C[tx * lanes + j] = T.Select(A[tx * lanes + j] > B[tx * lanes + j], A[tx * lanes + j],
                                             B[tx * lanes + j])

    return kernel


def bound_bf16_conversion():
    @T.prim_func
    def kernel(X: T.Tensor((8, 256), "bfloat16"), Y: T.Tensor((8, 128), "float32")):
        with T.Kernel(1, threads=128):
            gate = T.alloc_fragment((8, 128), "bfloat16")
            y = T.alloc_fragment((8, 128), "float32")
            T.copy(X[0, 128], gate)
            for i, j in T.Parallel(8, 128):
                g = T.cast(gate[i, j], "float32")
                y[i, j] = g / (1.0 + T.exp(-g))
            T.copy(y, Y)

    return kernel


@pytest.mark.parametrize("path", [p for p in PATHS if not p.startswith("metal")])  # (apple7: no bf16)
def test_a_bound_bf16_conversion_in_a_parallel_body(path):
    import torch

    x = torch.randn(8, 256).bfloat16()
    expect = torch.nn.functional.silu(x[:, 128:].double()).float().numpy()
    y = np.zeros((8, 128), np.float32)
    if path == "cpu":
        import tilelang_core as tilelang

        out = torch.zeros(8, 128)
        tilelang.compile(bound_bf16_conversion(), target="cpu")(x, out)
        y = out.numpy()
    else:
        run(path, bound_bf16_conversion(), X=x.float().numpy(), Y=y)
    np.testing.assert_allclose(y, expect, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [0, 5, 15])
def test_unroll_over_a_runtime_extent(path, n):
    a = RNG.standard_normal(32).astype(np.float32)
    b = np.zeros(32, np.float32)
    run(path, runtime_unroll(), A=a, B=b, n=n)
    np.testing.assert_allclose(b, a.astype(np.float64) + a[:n % 8].sum(dtype=np.float64),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("lanes", "dtype"), [(4, "int8"), (16, "int8"), (32, "int8")])
def test_vectorized_store_of_an_8bit_variable(path, lanes, dtype):
    a = np.array([-7], dtype)
    b = np.zeros(lanes, dtype)
    run(path, int8_broadcast(lanes, dtype), A=a, B=b)
    np.testing.assert_array_equal(b, np.full(lanes, a[0] + np.array(1, dtype), dtype))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("fill", [0, -3])
def test_vectorized_store_of_an_8bit_constant_fills_padding_rows(path, lanes, fill):
    rng = np.random.default_rng(lanes)
    x = rng.integers(-100, 100, (8, 32 * lanes)).astype(np.int8)
    pos = np.array([3, -1, 0, 7, -1, 2, -1, 5], np.int32)
    out = run(path, padded_rows("int8", lanes, fill), X=x, Pos=pos, Y=np.full_like(x, 99))
    np.testing.assert_array_equal(out["Y"], np.where(pos[:, None] >= 0, x[np.maximum(pos, 0)], np.int8(fill)))


@pytest.mark.parametrize("path", PATHS)
def test_a_select_over_8_half_lanes(path):
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(256).astype(np.float16) for _ in range(2))
    out = run(path, half_select(), A=a, B=b, C=np.full(256, np.nan, np.float16))
    np.testing.assert_array_equal(out["C"], np.maximum(a, b))


def _cuda_source(func, arch, tmp_path) -> str:
    """The kernel's CUDA source, its device code compiled by nvcc for ``arch`` on the way."""
    pytest.importorskip("tilelang_cuda")
    if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("nvcc (CUDA toolkit) is not installed")
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend, options = CudaBackend(type("Target", (), {"arch": arch})()), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(func, options), options)
    compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    return source[source.find('extern "C" __global__'):]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_runtime_extent_unroll_is_a_pragma_loop_in_cuda(arch, tmp_path):
    kernel = _cuda_source(runtime_unroll(), arch, tmp_path)
    assert "#pragma unroll\n" in kernel and "& 7)" in kernel  # a loop, not unrolled in the IR


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("lanes", [4, 16, 32])
def test_8bit_variable_broadcast_compiles_for_cuda(arch, lanes, tmp_path):
    _cuda_source(int8_broadcast(lanes, "int8"), arch, tmp_path)


@pytest.mark.parametrize(("arch", "dtype"), [("sm_80", "int8"), ("sm_90a", "int8"), ("sm_90a", "uint8"),
                                           ("sm_90a", "float8_e4m3fn"), ("sm_90a", "float8_e5m2")])
@pytest.mark.parametrize("lanes", [8, 16])
def test_8bit_constant_over_more_than_4_lanes_is_stored_as_words(arch, dtype, lanes, tmp_path):
    """TVM's printer wrote an 8- or 16-lane int8 constant as ``make_int2`` of 8 chars (nvcc: too
    many arguments) and failed inside itself on float8 (``lanes == 1 || lanes == 2 || lanes == 4``:
    TileKernels' per_channel_cast_fused on the H100). Now runs of 4 lanes: one 32-bit store each."""
    fill = 1.5 if dtype.startswith("float") else 1
    kernel = _cuda_source(padded_rows(dtype, lanes, fill), arch, tmp_path)
    word = {"int8": "*(int*)", "uint8": "*(uint*)", "float8_e4m3fn": "*(__nv_fp8x4_e4m3*)",
            "float8_e5m2": "*(__nv_fp8x4_e5m2*)"}[dtype]
    assert kernel.count(word) >= lanes // 4, kernel


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_select_over_8_half_lanes_compiles_for_cuda(arch, tmp_path):
    """Eight float16 comparisons were a ``boolx8``, for which TVM's CUDA printer has no type."""
    _cuda_source(half_select(), arch, tmp_path)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_bool_tile_is_stored_one_byte_per_element(arch, tmp_path):
    """A vectorized loop storing comparisons into a bool fragment was printed as
    ``*(ushort4*)(mask_ptr + 0) = ...``: 2-byte lanes into 1-byte bools, the second lane in the
    first's high byte and the store 4 bytes past the tile (TileLang's sparse MLA backward gave a
    wrong dQ on the H200). Now one byte per element; the values are checked on every path in
    test_bool_masks_select_per_element."""
    import re

    from fidelity_kernels import index_mask

    kernel = _cuda_source(index_mask(), arch, tmp_path)
    assert not re.search(r"\*\(\w+\*\)\(mask_ptr", kernel), re.findall(r"\*\(\w+\*\)\(mask_ptr[^;]*", kernel)
    assert "mask_ptr[1] = " in kernel


@pytest.mark.parametrize("path", PATHS)
def test_bool_masks_select_per_element(path):
    from fidelity_kernels import index_mask

    rng = np.random.default_rng(9)
    ind = rng.integers(0, 21, 64).astype(np.int32)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    out = run(path, index_mask(), Ind=ind, A=a, O=np.full((32, 64), np.nan, np.float32))
    np.testing.assert_array_equal(out["O"], np.where(ind[None, :] <= 10, a, -1.0).astype(np.float32))


@pytest.mark.parametrize("target", ["hip", "metal"])
def test_a_bool_tile_of_comparisons_compiles_for_hip_and_metal(target):
    """The same kernel did not compile there (HIP: clang on the ushort vector store; Metal: "Cannot
    convert type boolx4 to Metal type")."""
    import tilelang_core as tl
    from fidelity_kernels import index_mask

    pytest.importorskip(f"tilelang_{target}")
    assert "mask" in tl.compile(index_mask(), target=target).get_kernel_source()
