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


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "metal:apple7"])
def test_chained_stores_assign_one_value_to_every_target(path):
    """``A[i] = B[i] = C[i] = 1`` (TileLang's chain_equal test), and a value that reads a target:
    Python computes it once, so the later targets get the old value plus one, not more."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def chain(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                A[i] = B[i] = C[i] = 1
            for i in T.Parallel(8):
                C[i] = B[i] = C[i] + 1

    out = run(path, chain, A=np.zeros(8, np.float32), B=np.zeros(8, np.float32), C=np.zeros(8, np.float32))
    assert (out["A"] == 1).all() and (out["B"] == 2).all() and (out["C"] == 2).all()


def test_let_binds_a_declared_variable_and_align_up_rounds():
    @T.prim_func
    def offsets(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), S: T.Tensor((2,), "int32")):
        with T.Kernel(2, threads=32) as bx:
            offset = T.int32()
            T.let(offset, bx * 32)
            for i in T.Parallel(32):
                B[offset + i] = A[offset + i] * 2.0
            t = T.int32()
            S[bx] = T.align_up(bx * 32 + 5, 16) + T.let(t, 3, t * 2)

    a, b, s = torch.randn(64), torch.zeros(64), torch.zeros(2, dtype=torch.int32)
    tilelang.compile(offsets, target="cpu")(a, b, s)
    torch.testing.assert_close(b, 2 * a)
    assert s.tolist() == [16 + 6, 48 + 6]


def test_let_refuses_a_non_variable():
    with pytest.raises(TileLangError, match=r"T.let binds a variable"):
        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                T.let(A[0], 1)


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
    """What tilelang_core.cuda does not provide (the mma emitter is provided: cuda/intrinsics)."""
    from tilelang_core.cuda.intrinsics.macro.wgmma_macro_generator import TensorCoreIntrinEmitter
    from tilelang_core.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitterSM120
    from tilelang_core.cuda import language as cuda_T

    with pytest.raises(TileLangError, match="TensorCoreIntrinEmitter is TileLang's hand-written CUDA"):
        TensorCoreIntrinEmitter(a_dtype="float16")
    with pytest.raises(TileLangError, match="write the kernel with T.gemm"):
        cuda_T.ptx_wgmma_ss  # noqa: B018
    with pytest.raises(TileLangError):
        class Sub(TensorCoreIntrinEmitterSM120):  # noqa: F811 - subclassing is a use too
            pass


def test_the_emitters_newer_import_path():
    """TileLang's newer kernels import the emitters from tilelang.cuda.language.intrinsics: the mma one
    is ours there too; the WGMMA / TCGEN05 ones and tilelang.utils.language's helpers refuse use."""
    from tilelang_core.cuda.intrinsics import TensorCoreIntrinEmitter as ours
    from tilelang_core.cuda.language.intrinsics import (TCGEN05TensorCoreIntrinEmitter, TensorCoreIntrinEmitter,
                                                        WGMMATensorCoreIntrinEmitter)
    from tilelang_core.utils.language import to_buffer_region

    assert TensorCoreIntrinEmitter is ours
    for name, unavailable in (("WGMMATensorCoreIntrinEmitter", WGMMATensorCoreIntrinEmitter),
                              ("TCGEN05TensorCoreIntrinEmitter", TCGEN05TensorCoreIntrinEmitter),
                              ("to_buffer_region", to_buffer_region)):
        with pytest.raises(TileLangError, match=f"{name} is TileLang's hand-written CUDA"):
            unavailable(a_dtype="float16")


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_90a", "hip:gfx942"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_infinity_of_every_float_dtype(path, dtype):
    """T.infinity(T.bfloat16) (TVM's infinity() knows no bfloat16; TileLang's infinity test)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def fill(B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            A = T.alloc_shared((32,), dtype)
            T.fill(A, T.infinity(dtype))
            for i in T.Parallel(32):
                B[i] = T.cast(A[i], "float32")

    assert np.isposinf(run(path, fill, B=np.zeros(32, np.float32))["B"]).all()


def test_infinity_of_float8_e5m2_compiles_for_cuda():
    """float8_e5m2 has an infinity (float8_e4m3fn has none): a cast of float32 inf, which CUDA
    converts exactly. (The interpreters have no fp8 storage; the H200 suite runs it.)"""
    @T.prim_func
    def fill(A: T.Tensor((32,), "float8_e5m2")):
        with T.Kernel(1, threads=32):
            T.fill(A, T.infinity("float8_e5m2"))

    source = tilelang.compile(fill, target="cuda:sm_90a").get_kernel_source()
    assert "__global__" in source


def test_dtype_of_scalar_expressions_and_variables():
    """TileLang reads ``.dtype`` off expressions (its fast-math tests: ``T.__exp(x).dtype``) and
    off ``T.int32()`` variables; TVM 0.27 keeps it on buffers only."""
    from tvm import tirx

    x = tirx.Var("x", "float16")
    assert T.__exp(x).dtype == "float16" and (x + x).dtype == "float16"
    assert T.int32().dtype == "int32"
    assert tirx.decl_buffer((2,), "int8").dtype == "int8"  # buffers as before
    import tvm

    assert not hasattr(tvm.ir.StringImm("s"), "dtype")


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_a_kernel_without_grid_extents_is_one_block(path):
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def single(A: T.Tensor((4,), "float32")):
        with T.Kernel(threads=4):
            tx = T.get_thread_binding()
            T.atomic_add(A[tx], 1.0)

    assert (run(path, single, A=np.zeros(4, np.float32))["A"] == 1).all()


def test_clamp_takes_tilelang_keyword_names():
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def clamp(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                A[i] = T.clamp(A[i], min_val=-1.0, max_val=2.0)

    a = np.linspace(-4, 4, 8).astype(np.float32)
    np.testing.assert_array_equal(run("cpu", clamp, A=a.copy())["A"], np.clip(a, -1, 2))


def test_c_style_dtype_names_are_their_canonical_dtype():
    # TileLang's dequantize examples check `T.dtype(source_format) in [T.int, T.uint]` on "uint"
    assert T.dtype("uint") == T.uint == T.uint32 and T.dtype("uint") in [T.int, T.uint]
    assert T.dtype("float") == T.float32 and T.dtype("half") == T.float16
    assert T.dtype("int") != T.uint and str(T.dtype("double")) == "float64"


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_if_then_else_takes_a_lazy_comparison(path):
    """``T.if_then_else(bits != 0, 1, 0)`` on a reinterpreted value (TileLang's DeepSeek-V4
    act_quant): TVM keeps ``==`` / ``!=`` of expressions as lazy EqualOp / NotEqualOp objects."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def odd_mantissa(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                bits = T.reinterpret(A[i], "uint32")
                B[i] = T.if_then_else((bits & 1) != 0, 1, 0) + T.if_then_else(A[i] == 0.5, 10, 0)

    a = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    a[3] = 0.5
    out = run(path, odd_mantissa, A=a, B=np.zeros(64, np.int32))
    expected = (a.view(np.uint32) & 1).astype(np.int32) + np.where(a == 0.5, 10, 0)
    np.testing.assert_array_equal(out["B"], expected)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_fill_of_one_element_sets_only_that_element(path):
    """``T.fill(s_num[0], 0)`` / ``T.fill(C[2, 1], 9)`` (DeepSeek-V3.2's top-k selector): a region
    of one element, the rest untouched."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def one(A: T.Tensor((4, 4), "int32"), B: T.Tensor((4, 4), "int32"), C: T.Tensor((4, 4), "int32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((2,), "int32")
            T.fill(s, 5)
            T.fill(s[1], 7)
            for i, j in T.Parallel(4, 4):
                B[i, j] = A[i, j] + s[0] * 10 + s[1]
            T.fill(C[2, 1], 9)
            T.clear(C[0, 3])

    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    out = run(path, one, A=a, B=np.zeros((4, 4), np.int32), C=np.full((4, 4), 3, np.int32))
    np.testing.assert_array_equal(out["B"], a + 57)
    expected = np.full((4, 4), 3, np.int32)
    expected[2, 1], expected[0, 3] = 9, 0
    np.testing.assert_array_equal(out["C"], expected)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_while_loop_sums_into_a_variable_declared_without_a_value(path):
    """TileLang's frontend_v2 while loop: ``s = T.alloc_var(T.int32)`` starts at 0 (it gave 1 on
    the H200 when the variable was left uninitialized)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def while_sum(A: T.Tensor((32,), "int32"), n: T.int32):
        with T.Kernel(1, threads=32) as _:
            i = T.alloc_var(T.int32, 0)
            s = T.alloc_var(T.int32)
            while i < n:
                s += i + T.get_thread_binding()
                i += 1
            A[T.get_thread_binding()] = s

    out = run(path, while_sum, A=np.full(32, -7, np.int32), n=10)
    np.testing.assert_array_equal(out["A"], 45 + 10 * np.arange(32))


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_parallel_loops_inside_a_while_loop_are_distributed(path):
    """A T.Parallel loop in a ``while`` body was left undistributed on the SIMT backends: every
    thread ran the whole loop (a shared-memory race on the GPU; a fragment in it was refused)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def doubling(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32"),
                 n: T.int32):
        with T.Kernel(1, threads=32) as _:
            f = T.alloc_fragment((64,), "float32")
            s = T.alloc_shared((64,), "float32")
            T.copy(A, f)
            T.copy(A, s)
            i = T.alloc_var(T.int32, 0)
            while i < n:
                for j in T.Parallel(64):
                    f[j] = f[j] * 2.0
                for j in T.Parallel(64):
                    s[j] = s[j] + 1.0
                i += 1
            T.copy(f, B)
            T.copy(s, C)

    a = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    out = run(path, doubling, A=a, B=np.zeros(64, np.float32), C=np.zeros(64, np.float32), n=3)
    np.testing.assert_allclose(out["B"], a * 8)
    np.testing.assert_allclose(out["C"], a + 3, rtol=1e-6)
    if path != "cpu":
        lowered = str(tilelang.compile(doubling, target=path).asm["lowered"])
        assert "tl.parallel" not in lowered


@T.macro
def _plus_one(x):
    y = x + 1.0
    return y


@T.macro
def _fresh(x):
    return T.alloc_var(T.float32, init=x)


@T.macro
def _apply(x, fn):
    return fn(x)


@T.macro
def _set(x: T.Var, value):
    x = value  # noqa: F841 - stores into the caller's T.alloc_var


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "metal:apple7"])
def test_macros_return_values_and_write_variables(path):
    """TileLang's macros return their last statement's value (an expression, a fresh variable, a
    Python value) and assign a T.alloc_var argument (``x: T.Var``) in the caller."""
    import numpy as np
    from tilelang_core.testing.oracle import run

    @T.prim_func
    def kernel(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            c = _plus_one(A[1])
            v = _fresh(3.0)
            d = _apply(5.0, lambda x: x * 2.0)
            w = T.alloc_var(T.float32)
            _set(w, A[2] * 4.0)
            B[0] = c
            B[1] = v
            B[2] = d
            B[3] = w

    a = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    b = np.zeros(4, np.float32)
    run(path, kernel, A=a, B=b)
    np.testing.assert_allclose(b, [a[1] + 1, 3, 10, a[2] * 4], rtol=1e-6)


def test_a_macro_returns_early_only_at_compile_time_branches():
    @T.macro
    def early(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TileLangError, match="returns early only under conditions known"):
        @T.prim_func
        def kernel(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A[0] = early(A[1])


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_tuple_assignment_reads_every_value_first(path):
    """``a, b = b, a`` and ``A[0], A[1] = A[1], A[0]`` swap, as in Python."""
    import numpy as np
    from tilelang_core.testing.oracle import run

    @T.prim_func
    def kernel(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            a = T.alloc_var(T.float32, A[0])
            b = T.alloc_var(T.float32, A[1])
            a, b = b, a
            A[0], A[1] = a, b
            A[2], A[3] = A[3], A[2]

    a = np.arange(4, dtype=np.float32)
    run(path, kernel, A=a)
    np.testing.assert_array_equal(a, [1, 0, 3, 2])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_integer_literals_compare_with_low_precision_floats(dtype):
    """``x == 0`` and ``1 < x`` on a bfloat16 / float8 element (TVM 0.27 turned the integer into a
    constant of the element's type only for int and float types, and failed to parse these);
    the constant takes the element's type, as a float literal does."""
    name = str(dtype).split(".")[-1]

    @T.prim_func
    def compare(X: T.Tensor((64,), name), Y: T.Tensor((64, 3), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                Y[i, 0] = T.if_then_else(X[i] == 0, 1.0, 0.0)
                Y[i, 1] = T.if_then_else(1 < X[i], 1.0, 0.0)
                if X[i] >= 2:
                    Y[i, 2] = 1.0
                else:
                    Y[i, 2] = 0.0

    x = torch.tensor([0.0, -0.0, 1.0, 1.125, 2.0, -2.0, 0.5, 3.0] * 8).to(dtype)
    y = torch.full((64, 3), float("nan"))
    tilelang.compile(compare, target="cpu")(x, y)
    xd = x.double()
    torch.testing.assert_close(y, torch.stack([xd == 0, xd > 1, xd >= 2], 1).float())


@pytest.mark.parametrize("path", __import__("tilelang_core.testing.oracle", fromlist=["PATHS"]).PATHS)
def test_select_on_a_python_bool_and_one_block_index_named_as_a_tuple(path):
    """``T.Select(True, a, b)`` (TileLang's select test) picks at compile time; ``with T.Kernel(n)
    as (bx,):`` names the one block index (its PDL and sync_threads tests)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    @T.prim_func
    def select(A: T.Tensor((96, 3), "float32"), B: T.Tensor((96, 3), "float32")):
        with T.Kernel(3, threads=32) as (bx,):
            r = bx * 32 + T.get_thread_binding()
            B[r, 0] = T.Select(True, A[r, 0], 0.0)
            B[r, 1] = T.Select(False, 1.0, A[r, 1])
            B[r, 2] = T.Select(A[r, 2] > 0, A[r, 2], T.if_then_else(T.Select(True, False, True), 1.0, 2.0))

    a = np.random.default_rng(5).standard_normal((96, 3)).astype(np.float32)
    out = run(path, select, A=a, B=np.full((96, 3), np.nan, np.float32))
    want = a.copy()
    want[:, 2] = np.where(a[:, 2] > 0, a[:, 2], 2.0)
    np.testing.assert_array_equal(out["B"], want)


def masked(dtype, masks):
    @T.prim_func
    def bits(A: T.Tensor((64,), dtype), B: T.Tensor((64, 3), dtype)):
        with T.Kernel(1, threads=64):
            t = T.get_thread_binding()
            B[t, 0] = A[t] & masks[0]
            B[t, 1] = masks[1] | A[t]
            B[t, 2] = A[t] ^ masks[2]

    return bits


@pytest.mark.parametrize("path", __import__("tilelang_core.testing.oracle", fromlist=["PATHS"]).PATHS)
@pytest.mark.parametrize("dtype, masks", [
    ("int64", (0x17FFFFFFF, 0x7FFFFFFF00000000, 0x5555555555555555)),  # were cut to their low 32 bits
    ("uint32", (0xFFFFFFFF, 0x80000000, 0xF0F0F0F0)),                     # failed: "cannot make uint"
    ("int32", (0xFFFFFFFF, 0x80000000, 0x7FFF))])                         # the same bits, as int32
def test_bitwise_literals_take_the_other_operands_type(path, dtype, masks):
    """TileLang's test_tilelang_intimm: integer literals beside integer expressions in & | ^."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    info = np.iinfo(dtype)
    a = np.random.default_rng(11).integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    bits = [np.array(m & ((1 << info.bits) - 1), dtype=f"uint{info.bits}").view(dtype) for m in masks]
    out = run(path, masked(dtype, masks), A=a, B=np.zeros((64, 3), dtype))
    np.testing.assert_array_equal(out["B"], np.stack([a & bits[0], bits[1] | a, a ^ bits[2]], axis=1))


def test_a_bitwise_literal_wider_than_its_operand_is_refused():
    with pytest.raises(TileLangError, match="0x1ffffffff has bits beyond the 32-bit int32 operand"):
        masked("int32", (0x1FFFFFFFF, 0, 0))
