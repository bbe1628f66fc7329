"""Individual language constructs: loops, allocations, expressions, annotations, dynamic sizes."""

import pytest
import tvm
from language_irutil import allocs, attrs, ext, launches, loop_kind, loops, mins, op_names, tile_ops

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.ir import Atomic, Cumsum, Reduce


def test_kernel_1d_grid_binds_single_index_and_2d_threads():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=(32, 2)) as bx:
            A[bx] = T.cast(T.get_thread_binding(1), T.float32)

    # one thread dimension of 64 (test_block_shapes.py): ty = tx // 32
    assert launches(k) == {"blockIdx.x": 4, "threadIdx.x": 64}
    assert "tx // 32" in k.script().split("A[bx] =")[1].splitlines()[0]


def test_kernel_3d_grid():
    @T.prim_func
    def k(A: T.Tensor((8, 4, 2), T.float32)):
        with T.Kernel(2, 4, 8, threads=64) as (bx, by, bz):
            A[bz, by, bx] = 1.0

    assert launches(k) == {"blockIdx.x": 2, "blockIdx.y": 4, "blockIdx.z": 8,
                           "threadIdx.x": 64}


def test_alloc_scopes():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((16, 8), "bfloat16")
            f = T.alloc_fragment((16,), T.float32)
            loc = T.alloc_local((4,), T.int8)
            v = T.alloc_var(T.int32, init=3)
            v = v + 1
            A[0] = T.cast(v, T.float32) + f[0] + T.cast(s[0, 0], T.float32) + \
                T.cast(loc[0], T.float32)

    assert allocs(k) == {"s": ([16, 8], "bfloat16", "shared.dyn"),
                         "f": ([16], "float32", "local.fragment"),
                         "loc": ([4], "int8", "local"),
                         "v": ([1], "int32", "local.var")}
    stores = [s for s in _stores(k) if str(s.buffer.name) == "v"]
    assert len(stores) == 2  # the init and the reassignment both store into the variable


def _stores(func):
    import tvm_ffi
    found = []
    tvm_ffi.structural_walk(func.body, [(tvm.tirx.BufferStore, found.append)], order="pre")
    return found


def test_loop_kinds_and_pipeline_annotations():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.serial(4):
                A[i] = 0.0
            for i in T.unroll(4):
                A[i] = 1.0
            for i in T.vectorized(4):
                A[i] = 2.0
            for i in range(2, 6):
                A[i] = 3.0
            for i in T.Pipelined(1, 9, num_stages=2, order=[1, 0], stage=[0, 1],
                                 group=[[0], [1]]):
                A[i] = 4.0
            for i, j, m in T.Parallel(2, 3, 4):
                A[i * 12 + j * 4 + m] = 5.0

    ls = loops(k)
    assert [loop_kind(lp) for lp in ls] == ["serial", "unrolled", "vectorized", "serial",
                                           "serial", "parallel", "parallel", "parallel"]
    assert [int(lp.min) for lp in ls[3:5]] == [2, 1]
    assert [int(lp.extent) for lp in ls[3:5]] == [4, 8]
    pipe = ls[4]
    assert dict(pipe.annotations)["tl.num_stages"] == 2
    assert [int(x) for x in pipe.annotations["tl.order"]] == [1, 0]
    assert [int(x) for x in pipe.annotations["tl.stage"]] == [0, 1]
    assert [[int(x) for x in g] for g in pipe.annotations["tl.group"]] == [[0], [1]]
    assert [int(lp.extent) for lp in ls[5:]] == [2, 3, 4]
    assert dict(ls[0].annotations) == {}


def test_python_if_on_constant_is_resolved_at_parse_time_and_symbolic_if_is_ir():
    flag = False

    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(2, threads=32) as bx:
            if flag:
                A[0] = 1.0
            if bx == 0:
                A[1] = 2.0
            else:
                A[2] = 3.0

    text = k.script()
    assert "A[0]" not in text
    assert "if bx == 0" in text and "else" in text


def test_while_and_augmented_assignment():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32), n: T.int32):
        with T.Kernel(1, threads=32):
            i = T.alloc_var(T.int32, 0)
            while i < n:
                A[i] += 1.0
                i += 1

    text = k.script()
    assert "while i < n" in text
    assert "A[i] = A[i] + T.float32(1.0)" in text
    assert "i = i + 1" in text
    assert [str(p.name) for p in k.params] == ["A", "n"]


def test_expression_helpers():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float16)):
        with T.Kernel(1, threads=32) as bx:
            x = A[0]
            A[1] = T.exp(x) + T.exp2(x) + T.log(x) + T.log2(x) + T.sqrt(x) + T.rsqrt(x)
            A[2] = T.tanh(x) + T.sigmoid(x) + T.abs(x) + T.max(x, 0.0) + T.min(x, 1.0)
            A[3] = T.if_then_else(bx > 0, x, -T.infinity(T.float32))
            B[0] = T.cast(x, T.float16)
            A[4] = T.float32(T.ceildiv(10, 3)) + T.max(2, 7)

    text = k.script()
    for fn in ("T.exp(", "T.exp2(", "T.log(", "T.log2(", "T.sqrt(", "T.rsqrt(", "T.tanh(",
               "T.sigmoid(", "T.fabs(", "T.max(", "T.min(", "T.if_then_else(", "-inf"):
        assert fn in text, fn
    assert 'B[0] = T.Cast("float16", x)' in text
    assert "A[4] = T.float32(11.0)" in text  # Python ints fold at parse time
    assert "x: T.let[T.float32] = A[0]" in text  # a read binds an immutable value


def test_dtype_names_and_constructors():
    assert T.float16 == "float16" and T.bfloat16 == "bfloat16" and T.int8 == "int8"
    assert str(T.float32(1.5).ty) == "float32"
    assert T.canonical_dtype("half") == "float16"
    import numpy as np
    import torch
    assert T.canonical_dtype(torch.bfloat16) == "bfloat16"
    assert T.canonical_dtype(np.dtype("float32")) == "float32"
    assert T.canonical_dtype(np.int8) == "int8"


def test_ceildiv_on_ints_stays_python_int():
    assert T.ceildiv(1000, 128) == 8 and isinstance(T.ceildiv(1000, 128), int)


def test_dynamic_shapes_flow_into_params_grid_and_regions():
    m = T.dynamic("m")

    @T.prim_func
    def k(A: T.Tensor((m, 64), T.float16), B: T.Tensor[(m, 64), "float16"]):
        with T.Kernel(T.ceildiv(m, 32), threads=128) as bx:
            s = T.alloc_shared((32, 64), T.float16)
            T.copy(A[bx * 32, 0], s)
            T.copy(s, B[bx * 32:bx * 32 + 32, :])

    a, b = k.params
    assert str(a.ty.shape[0]) == "m" and a.ty.shape[0].same_as(b.ty.shape[0])
    assert "m" in str(launches(k)["blockIdx.x"])
    load, store = tile_ops(k)
    assert ext(load.src) == [32, 64] and mins(load.src) == ["bx * 32", "0"]
    assert ext(store.dst) == [32, 64]


def test_reductions_cumsum_and_atomics():
    @T.prim_func
    def k(A: T.Tensor((64, 32), T.float32), out: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 32), T.float32)
            r = T.alloc_fragment((64,), T.float32)
            T.copy(A, f)
            T.reduce_min(f, r, dim=1)
            T.reduce_abssum(f, r, dim=-1)
            T.reduce_absmax(f, r, 1, False)
            T.cumsum(f, dim=1, reverse=True)
            T.cumsum(r, r)
            T.atomic_add(out[0], r[0])
            T.atomic_add(out[0], r)
            T.atomic_max(A[0:64, 0:32], f)
            T.atomic_min(A[0, 0], 1.0)

    ops = tile_ops(k)[1:]
    assert [type(o).__name__ for o in ops] == ["Reduce"] * 3 + ["Cumsum"] * 2 + ["Atomic"] * 4
    assert [(o.kind, o.dim, o.clear) for o in ops[:3]] == [("min", 1, True), ("abssum", 1, True),
                                                           ("absmax", 1, False)]
    c0, c1 = ops[3], ops[4]
    assert c0.dim == 1 and c0.reverse and c0.src.source.same_as(c0.dst.source)
    assert c1.dim == 0 and not c1.reverse
    scalar_add, tile_add, tile_max, scalar_min = ops[5:]
    assert not scalar_add.src_is_region and ext(scalar_add.dst) == [1]
    assert tile_add.src_is_region and ext(tile_add.dst) == [64]  # extent from the source tile
    assert tile_max.kind == "max" and ext(tile_max.dst) == [64, 32]
    assert scalar_min.kind == "min" and str(scalar_min.src.ty) == "float32"


def test_copy_between_fragment_and_shared_with_dtype_conversion():
    @T.prim_func
    def k(A: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((2, 64, 64), T.float16)
            f = T.alloc_fragment((64, 64), T.float32)
            T.copy(f, s[1, :, :])
            T.copy(s[0, 0:64, 0:64], f)
            T.copy(f, A)

    a, b, c = tile_ops(k)
    assert ext(a.dst) == [1, 64, 64] and mins(a.dst) == ["1", "0", "0"]
    assert str(a.dst.source.ty.dtype) == "float16" and str(a.src.source.ty.dtype) == "float32"
    assert ext(b.src) == [1, 64, 64]
    assert str(c.dst.source.name) == "A"


def test_fill_and_clear_on_regions():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((8, 8), T.float16)
            T.fill(f, 1.5)
            T.fill(f[0:4, :], 2)
            T.clear(f)

    a, b, c = tile_ops(k)
    assert float(a.value.value) == 1.5 and str(a.value.ty) == "float16"
    assert ext(b.dst) == [4, 8]
    assert float(c.value.value) == 0.0


def test_annotate_layout_and_use_swizzle_attrs():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(4, 4, threads=32):
            T.use_swizzle(panel_size=8, order="col")
            s = T.alloc_shared((8, 8), T.float16)
            T.annotate_layout({s: tvm.tirx.const(7)})
            T.clear(s)

    (sw,) = attrs(k, "tl.swizzle")
    assert sw.node.value == "col" and int(sw.value) == 8
    (lm,) = attrs(k, "tl.layout_map")
    ((buf, layout),) = list(lm.node.items())
    assert str(buf.name) == "s" and int(layout.value) == 7
    assert op_names(k) == ["tl.tile.fill"]  # the clear is inside the annotated body
    assert isinstance(lm.body, tvm.tirx.TilePrimitiveCall)


def test_use_swizzle_disabled_emits_nothing():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=32):
            T.use_swizzle(4, enable=False)

    assert attrs(k, "tl.swizzle") == []


def test_gemm_config_options():
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((64, 16), T.float16)
            b = T.alloc_shared((64, 16), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.gemm(a, b, c, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True,
                   k_pack=2, wg_wait=-1)

    (g,) = tile_ops(k)
    assert g.config() == {"transpose_A": False, "transpose_B": True, "policy": "full_col",
                          "clear_accum": True, "k_pack": 2, "wg_wait": -1}
    assert str(g.A.source.ty.storage_scope) == "local.fragment"


@pytest.mark.parametrize("private", [False, True])
def test_prim_func_with_options(private):
    @T.prim_func(private=private)
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            A[0] = 1.0

    assert isinstance(k, tvm.tirx.PrimFunc)
    assert (k.attrs is not None and "global_symbol" in k.attrs) is not private


def test_isinstance_checks_of_op_classes_match_names():
    assert Reduce.name == "reduce" and Cumsum.name == "cumsum" and Atomic.name == "atomic"


def test_macro_body_is_inlined_at_each_call():
    @T.macro
    def zero_row(buf, r):
        for j in T.Parallel(8):
            buf[r, j] = 0.0

    @T.prim_func
    def k(A: T.Tensor((8, 8), T.float32)):
        with T.Kernel(1, threads=32):
            zero_row(A, 0)
            zero_row(A, 3)

    text = k.script()
    assert "A[0, j] = T.float32(0.0)" in text and "A[3, j] = T.float32(0.0)" in text
    assert len(loops(k)) == 2


def test_macro_outside_a_kernel_is_an_error():
    @T.macro
    def noop(x):
        pass

    with pytest.raises(FrontendError, match="can only be called inside a kernel"):
        noop(1)


def test_clamp_and_thread_binding_loop():
    @T.prim_func
    def k(A: T.Tensor((32,), T.float32)):
        for t in T.thread_binding(32, thread="threadIdx.x"):
            A[t] = T.clamp(A[t], 0.0, 6.0)

    # outside a T.Kernel, the thread-binding loop is the launch (test_tvmscript_launch.py)
    assert loops(k) == [] and launches(k) == {"blockIdx.x": 1, "threadIdx.x": 32}
    assert "T.max(T.min(A[t], T.float32(6.0)), T.float32(0.0))" in k.script()
    assert T.clamp(9, 0, 6) == 6


def test_annotate_layout_converts_python_layouts_to_index_maps():
    from tilelang_core.layout import make_swizzled_layout

    swizzle = make_swizzled_layout(8, 64, 16)

    @T.prim_func
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((8, 64), T.float16)
            t = T.alloc_shared((4, 4), T.float16)
            T.annotate_layout({s: swizzle, t: lambda i, j: (j, i)})
            T.clear(s)

    (lm,) = attrs(k, "tl.layout_map")
    maps = {str(b.name): m for b, m in lm.node.items()}
    # a make_swizzled_layout travels with its kind: a request a backend may answer with its own swizzle
    s_map, s_kind = maps["s"]
    assert isinstance(s_map, tvm.tirx.IndexMap) and isinstance(maps["t"], tvm.tirx.IndexMap)
    assert s_kind.value == swizzle.kind == "swizzle8x16B"
    assert [int(x) for x in s_map.map_indices([1, 8])] == [swizzle.offset(1, 8)]
    assert [int(x) for x in maps["t"].map_indices([1, 3])] == [3, 1]


def test_annotate_layout_rank_mismatch_is_an_error():
    from tilelang_core.layout import Layout

    def build():
        @T.prim_func
        def k(A: T.Tensor((64,), T.float32)):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((8, 64), T.float16)
                T.annotate_layout({s: Layout.row_major((8, 8, 8))})

    with pytest.raises(FrontendError, match="has 3 dimensions but the buffer has 2"):
        build()


def test_alloc_var_starts_at_zero_and_takes_tileLang_positional_forms():
    # TileLang declares a local.var '= 0' when no initial value is given; a sum kept in one
    # relies on it (its frontend_v2 while-loop test). Positional forms: (init), (scope), (init, scope).
    @T.prim_func
    def k(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32):
            z = T.alloc_var(T.float32)
            s = T.alloc_var(T.int32, "local.var")
            t = T.alloc_var(T.int32, 5, "local.var")
            u = T.alloc_var(T.float32, 2.5)
            A[0] = z
            A[1] = T.cast(s, T.float32)
            A[2] = T.cast(t, T.float32)
            A[3] = u

    assert {str(s.buffer.name): str(s.value) for s in _stores(k) if s.buffer.name != "A"} == \
        {"z": "T.float32(0.0)", "s": "0", "t": "5", "u": "T.float32(2.5)"}
    with pytest.raises(FrontendError, match="given twice"):
        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=32):
                v = T.alloc_var(T.int32, 1, init=2)
                A[0] = T.cast(v, T.float32)


def test_alloc_var_initial_value_keeps_its_dtype_and_range():
    # a float64 variable keeps a float64 literal whole (1e300, 0.1 to the last bit); a literal past
    # the dtype's largest finite value is TileLang's ValueError, naming the dtype
    import tilelang_core
    import torch

    @T.prim_func
    def k(A: T.Tensor((2,), T.float64)):
        with T.Kernel(1, threads=1):
            big = T.alloc_var(T.float64, init=1e300)
            tenth = T.alloc_var(T.float64, init=0.1)
            A[0] = big
            A[1] = tenth

    a = torch.zeros(2, dtype=torch.float64)
    tilelang_core.compile(k, target="cpu")(a)
    assert a.tolist() == [1e300, 0.1]
    for dtype, value in ((T.float32, 1e300), (T.float16, 7e4), (T.float16, -7e4)):
        with pytest.raises(ValueError, match=f"exceeds maximum of {dtype}"):
            @T.prim_func
            def bad(A: T.Tensor((1,), dtype)):
                with T.Kernel(1, threads=1):
                    v = T.alloc_var(dtype, init=value)
                    A[0] = v
