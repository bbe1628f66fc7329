"""Eager-style programs: shapes bound from arguments, checks, outputs, cache keys."""

import numpy as np
import pytest
import torch
from language_irutil import allocs, launches, tile_ops

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.language.eager import EagerProgram, Specialization


def matmul_relu(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def two_outputs(X, scale: float = 2.0):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    Y = T.empty((N,), T.float32)
    Z = T.empty((N * 2,), T.float16)
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            Y[bx * 128 + i] = X[bx * 128 + i] * scale
            Z[bx * 128 + i] = T.cast(X[bx * 128 + i], T.float16)
    return Z, Y


m_dyn = T.dynamic("m")


def with_dynamic(X):
    N = T.const("N")
    X: T.Tensor((m_dyn, N), T.float32)
    with T.Kernel(T.ceildiv(m_dyn, 4), threads=128) as bx:
        f = T.alloc_fragment((4, N), T.float32)
        T.copy(X[bx * 4, 0], f)
        T.copy(f, X[bx * 4, 0])


def _f16(*shape):
    return torch.empty(*shape, dtype=torch.float16)


def test_signature_separates_tensors_and_compile_time_params():
    sig = EagerProgram(matmul_relu).signature
    assert sig.tensor_params == ("A", "B")
    assert sig.compile_time_params == ("block_M", "block_N", "block_K")
    assert sig.const_names == ("M", "N", "K")
    assert sig.outputs == ("C",)
    assert sig.defaults["block_K"] == 32


def test_specialize_binds_consts_from_argument_shapes():
    p = EagerProgram(matmul_relu)
    spec = p.specialize((_f16(256, 128), _f16(128, 512)), {"block_M": 128})
    assert isinstance(spec, Specialization)
    assert dict(spec.const_values) == {"M": 256, "K": 128, "N": 512}
    assert [str(x.name) for x in spec.func.params] == ["A", "B", "C"]
    assert [list(map(int, x.ty.shape)) for x in spec.func.params] == [[256, 128], [128, 512],
                                                                      [256, 512]]
    assert spec.out_idx == (2,)
    assert launches(spec.func) == {"blockIdx.x": 8, "blockIdx.y": 2, "threadIdx.x": 128}
    assert allocs(spec.func)["A_shared"] == ([128, 32], "float16", "shared.dyn")
    assert [o.name for o in tile_ops(spec.func)] == ["fill", "copy", "copy", "gemm", "copy"]


def test_cache_key_matches_specialization_and_separates_variants():
    p = EagerProgram(matmul_relu)
    a, b = _f16(256, 128), _f16(128, 512)
    spec = p.specialize((a, b), {})
    assert p.cache_key((a, b), {}) == spec.key
    assert p.cache_key((a, b, 64, 64, 32), {}) == spec.key  # defaults spelled out
    assert p.cache_key((a, b), {"block_M": 128}) != spec.key
    assert p.cache_key((_f16(512, 128), b), {}) != spec.key
    assert p.cache_key((a.float(), b), {}) != spec.key
    hash(spec.key)


def test_positional_key_separates_whatever_cache_key_separates():
    p = EagerProgram(matmul_relu)
    key = p.positional_key()
    a, b = _f16(256, 128), _f16(128, 512)
    calls = [(a, b, 64, 64, 32), (_f16(256, 128), _f16(128, 512), 64, 64, 32),
             (a, b, 128, 64, 32), (_f16(512, 128), b, 64, 64, 32), (a.float(), b, 64, 64, 32),
             (a.numpy(), b.numpy(), 64, 64, 32), (a, b), (a, b, 128)]
    for x in calls:
        for y in calls:
            if key(x) == key(y):
                assert p.cache_key(x, {}) == p.cache_key(y, {})
    assert key(calls[0]) == key(calls[1]) and hash(key(calls[0])) == hash(key(calls[1]))
    assert len({key(c) for c in calls}) == len(calls) - 1
    assert key((a,)) is None  # B missing: the caller takes the cache_key route, which explains


def test_numpy_arrays_are_accepted():
    p = EagerProgram(two_outputs)
    spec = p.specialize((np.zeros(256, dtype=np.float32),), {})
    assert dict(spec.const_values) == {"N": 256}


def test_outputs_follow_inputs_and_out_idx_follows_return_order():
    p = EagerProgram(two_outputs)
    spec = p.specialize((torch.zeros(256),), {"scale": 3.0})
    assert [str(x.name) for x in spec.func.params] == ["X", "Y", "Z"]
    assert [int(x.ty.shape[0]) for x in spec.func.params] == [256, 256, 512]
    assert spec.out_idx == (2, 1)
    assert "T.float32(3.0)" in spec.func.script()


def test_dynamic_dims_stay_symbolic_and_out_of_the_key():
    p = EagerProgram(with_dynamic)
    spec = p.specialize((torch.zeros(32, 16),), {})
    assert str(spec.func.params[0].ty.shape[0]) == "m"
    assert int(spec.func.params[0].ty.shape[1]) == 16
    assert p.cache_key((torch.zeros(64, 16),), {}) == spec.key
    assert p.cache_key((torch.zeros(64, 8),), {}) != spec.key


def test_shape_mismatch_names_the_parameter_and_line():
    p = EagerProgram(matmul_relu)
    with pytest.raises(FrontendError) as info:
        p.specialize((_f16(256, 128), _f16(64, 512)), {})
    text = str(info.value)
    assert "parameter 'B'" in text and "K = 128" in text
    assert "test_language_eager.py:16" in text and "B: T.Tensor((K, N), T.float16)" in text
    assert "^" in text


def test_dtype_mismatch_names_the_parameter():
    p = EagerProgram(matmul_relu)
    with pytest.raises(FrontendError, match="dtype mismatch for parameter 'A': expected float16, "
                                            "got float32"):
        p.specialize((torch.zeros(256, 128), _f16(128, 512)), {})


def test_rank_mismatch_names_the_parameter():
    p = EagerProgram(matmul_relu)
    with pytest.raises(FrontendError, match="parameter 'A' expects a 2-D tensor"):
        p.specialize((_f16(256), _f16(128, 512)), {})


def test_tensor_for_unannotated_parameter_is_an_error():
    p = EagerProgram(matmul_relu)
    with pytest.raises(FrontendError, match="parameter 'block_M' received a tensor"):
        p.specialize((_f16(256, 128), _f16(128, 512), _f16(2)), {})


def test_const_and_empty_outside_eager_kernels_are_errors():
    with pytest.raises(FrontendError, match="T.const can only be used in an eager-style kernel"):
        T.const("M")
    with pytest.raises(FrontendError, match="T.empty can only be used in an eager-style kernel"):
        T.empty((4,), T.float32)


def lazy_style(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=32):
            A[0, 0] = 1.0

    return main


def test_looks_eager_tells_eager_programs_from_prim_func_factories():
    assert T.looks_eager(matmul_relu) and T.looks_eager(two_outputs)
    assert not T.looks_eager(lazy_style)


def with_plain_header(X, block: int = 64):
    dtype = T.bfloat16
    rows = block // 2
    N = T.const("N")
    X: T.Tensor((rows, N), dtype)
    with T.Kernel(1, threads=128):
        f = T.alloc_fragment((rows, N), T.float32)
        T.copy(X, f)


def test_plain_assignments_before_the_kernel_feed_annotations():
    p = EagerProgram(with_plain_header)
    spec = p.specialize((torch.zeros(32, 8, dtype=torch.bfloat16),), {})
    assert dict(spec.const_values) == {"N": 8}
    with pytest.raises(FrontendError, match="expected .*32, 8.* but got shape \\(16, 8\\)"):
        p.specialize((torch.zeros(16, 8, dtype=torch.bfloat16),), {})
    assert spec.out_idx == ()


def _some_jit(fn):
    return fn


@_some_jit
def decorated(X):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    with T.Kernel(1, threads=32):
        X[0] = 1.0


def test_any_decorator_on_an_eager_program_is_ignored_by_the_parser():
    spec = EagerProgram(decorated).specialize((torch.zeros(8),), {})
    assert [str(p.name) for p in spec.func.params] == ["X"]


def unbound_const(X):
    N, P = T.const("N, P")
    X: T.Tensor((N,), T.float32)
    Y = T.empty((P,), T.float32)
    with T.Kernel(1, threads=32):
        Y[0] = X[0]
    return Y


def test_const_not_bound_by_any_argument_is_an_error():
    with pytest.raises(FrontendError, match="T.const P is not the size or stride of any dimension"):
        EagerProgram(unbound_const).specialize((torch.zeros(4),), {})


def test_scalar_passed_for_a_tensor_parameter_is_an_error():
    with pytest.raises(FrontendError, match="parameter 'X' expects a tensor"):
        EagerProgram(two_outputs).specialize((3,), {})
    with pytest.raises(FrontendError, match="parameter 'X' expects a tensor"):
        EagerProgram(two_outputs).cache_key((3,), {})


def test_wrong_arguments_are_reported_like_a_call():
    with pytest.raises(FrontendError, match="two_outputs\\(\\): missing a required argument"):
        EagerProgram(two_outputs).specialize((), {})


def test_several_dynamic_sizes_from_one_string():
    """``batch, seq = T.dynamic("batch, seq")`` (DeepSeek-V3.2's pipelined sparse MLA): one call,
    one variable per name, each bound from the argument's shape at call time."""
    import tilelang_core as tilelang

    @tilelang.jit(target="cpu")
    def doubled(A, heads: int = 4):
        batch, seq = T.dynamic("batch, seq")
        A: T.Tensor([batch, seq, heads], T.float32)
        B = T.empty([batch, seq, heads], T.float32)
        with T.Kernel(batch, seq, threads=32) as (bx, by):
            for i in T.Parallel(heads):
                B[bx, by, i] = A[bx, by, i] * 2.0 + bx
        return B

    for shape in [(2, 3, 4), (1, 5, 4)]:
        a = torch.randn(*shape)
        torch.testing.assert_close(doubled(a), 2 * a + torch.arange(shape[0])[:, None, None])
    one = T.dynamic("n, m, k")
    assert [str(v.name) for v in one] == ["n", "m", "k"]


def strided_copy(A, B):
    N, M, S0, S1 = T.const("N, M, S0, S1")
    A: T.StridedTensor[[N, M], [S0, S1], T.float32]
    B: T.StridedTensor[[N, M], [S0, S1], T.float32]
    with T.Kernel(1, threads=32):
        for i, j in T.Parallel(N, M):
            B[i, j] = A[i, j] + 1.0


def test_const_strides_bind_from_the_tensors():
    """TileLang's eager copy5: T.const strides of a T.StridedTensor take the argument's strides."""
    import tilelang_core as tl

    kernel = tl.jit(target="cpu")(strided_copy)
    a, b = torch.randn(8, 2, 6, 2), torch.zeros(8, 2, 6, 2)
    kernel(a[:, 0, :, 0], b[:, 0, :, 0])
    torch.testing.assert_close(b[:, 0, :, 0], a[:, 0, :, 0] + 1.0)
    assert (b[:, 1] == 0).all()
    a2, b2 = torch.randn(8, 3, 6), torch.zeros(8, 3, 6)  # other strides: another kernel
    kernel(a2[:, 1, :], b2[:, 1, :])
    torch.testing.assert_close(b2[:, 1, :], a2[:, 1, :] + 1.0)
    with pytest.raises(FrontendError, match="stride mismatch for parameter 'B'"):
        kernel(a[:, 0, :, 0], torch.zeros(8, 6))


@T.macro
def copy_into_new(A):
    M, N = A.shape
    B = T.empty(M, N, dtype=A.dtype)
    with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
        for i, j in T.Parallel(32, N):
            B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2.0
    return B


def returned_from_a_macro(A):
    N = T.dynamic("N")
    M = T.const("M")
    A: T.Tensor[[N, M], T.float32]
    return copy_into_new(A)


@T.macro
def new_output():
    return T.empty((8,), T.float32)


def empty_inside_the_kernel(A):
    A: T.Tensor[[8], T.float32]
    with T.Kernel(1, threads=32):
        B = new_output()
        B[0] = A[0]


def test_t_empty_in_a_macro_called_at_the_top_level():
    """TileLang's eager test_jit2_return: the macro allocates the output and returns it."""
    import tilelang_core as tl

    kernel = tl.jit(target="cpu")(returned_from_a_macro)
    for rows in (64, 70, 1):
        a = torch.randn(rows, 16)
        torch.testing.assert_close(kernel(a), a * 2.0)
    with pytest.raises(FrontendError, match="T.empty must be called at the top level"):
        tl.jit(target="cpu")(empty_inside_the_kernel)(torch.zeros(8))
