"""The frontend of TileLang's warp intrinsics and explicit vector accesses: argument checks,
result types, and the errors TileLang gives (TypeError for a float predicate)."""

import pytest
from tvm import tirx

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.ir.intrinsics import intrinsic_of

PREDICATED = [T.any_sync, T.all_sync, T.ballot_sync, T.ballot, T.syncthreads_count, T.syncthreads_and,
              T.syncthreads_or]


@pytest.mark.parametrize("intrinsic", PREDICATED, ids=lambda f: f.__name__)
def test_float_predicates_are_a_type_error(intrinsic):
    with pytest.raises(TypeError, match="requires an integer or boolean predicate"):
        intrinsic(tirx.FloatImm("float32", 0.5))
    with pytest.raises(TypeError, match="requires an integer or boolean predicate"):
        intrinsic(0.5)


@pytest.mark.parametrize("predicate", [1, True, tirx.IntImm("int8", 3), tirx.Var("p", "bool")])
@pytest.mark.parametrize("intrinsic", PREDICATED, ids=lambda f: f.__name__)
def test_integer_and_boolean_predicates_build_a_call(intrinsic, predicate):
    call = intrinsic(predicate)
    assert intrinsic_of(call) is not None
    assert str(call.args[-1].ty) == "bool"  # the helpers take a bool


@pytest.mark.parametrize("make,dtype", [(lambda: T.any_sync(1), "int32"), (lambda: T.all_sync(1), "int32"),
                                        (lambda: T.ballot_sync(1), "uint64"), (lambda: T.ballot(1), "uint64"),
                                        (lambda: T.activemask(), "uint64"), (lambda: T.match_any_sync(1), "uint32"),
                                        (lambda: T.match_all_sync(2.0), "uint32"),
                                        (lambda: T.syncthreads_count(1), "int32"),
                                        (lambda: T.shfl_xor(tirx.Var("v", "float16"), 1), "float16"),
                                        (lambda: T.warp_reduce_sum(tirx.Var("v", "int64")), "int64"),
                                        (lambda: getattr(T, "__ffs")(tirx.Var("m", "uint64")), "int32"),
                                        (lambda: getattr(T, "__fns")(0xFF, 0, 1), "uint32")])
def test_result_types_are_tilelangs(make, dtype):
    assert str(make().ty) == dtype


def test_lane_masks_are_uint32():
    assert str(T.ballot_sync(1).args[0]) == "T.uint32(4294967295)"
    assert int(T.any_sync(1, -1).args[0].value) == 0xFFFFFFFF
    assert str(T.any_sync(1, tirx.Var("m", "int32")).args[0].ty) == "uint32"
    with pytest.raises(ValueError, match="does not fit in 32 bits"):
        T.any_sync(1, 1 << 32)
    with pytest.raises(TypeError, match="lane mask must be"):
        T.any_sync(1, 1.0)


def test_shuffle_width_must_be_a_constant_power_of_two():
    v = tirx.Var("v", "float32")
    with pytest.raises(ValueError, match="power of two"):
        T.shfl_sync(v, 0, 12)
    with pytest.raises(ValueError, match="power of two"):
        T.shfl_down(v, 1, tirx.Var("w", "int32"))
    with pytest.raises(TypeError, match="lane operand must be an integer"):
        T.shfl_up(v, 1.5)


def test_bitwise_warp_reductions_take_integers():
    with pytest.raises(TypeError, match="requires an integer value"):
        T.warp_reduce_bitand(tirx.Var("v", "float32"))
    with pytest.raises(TypeError, match="got bool"):
        T.warp_reduce_sum(tirx.Var("b", "bool"))


def test_bit_scans_take_integers():
    with pytest.raises(TypeError, match="requires an integer value"):
        getattr(T, "__ffs")(tirx.Var("x", "float32"))
    # narrow integers widen to 32 bits (the same lowest set bit)
    assert str(getattr(T, "__ffs")(tirx.Var("x", "int8")).args[0].ty) == "int32"


def test_match_refuses_16_bit_floats():
    with pytest.raises(TypeError, match="32- or 64-bit"):
        T.match_any_sync(tirx.Var("h", "float16"))


def test_warp_group_needs_a_warp_size_with_warps_per_group():
    @T.prim_func
    def ok(A: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            A[tx] = T.get_warp_group_idx(32, 2)

    with pytest.raises(FrontendError, match="expects `warp_size` when specifying `warps_per_group`"):
        @T.prim_func
        def bad(A: T.Tensor((128,), "int32")):
            with T.Kernel(1, threads=128):
                tx = T.get_thread_binding()
                A[tx] = T.get_warp_group_idx(None, 2)


def test_lane_queries_need_a_kernel():
    with pytest.raises(FrontendError, match="inside 'with T.Kernel"):
        T.get_lane_idx()


def test_lane_queries_count_the_linear_thread_index():
    @T.prim_func
    def k(A: T.Tensor((8, 16), "int32")):
        with T.Kernel(1, threads=(16, 8)):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            A[ty, tx] = T.get_lane_idx()

    assert "T.tl_get_lane_idx(tx, -1)" in str(k)  # the one launch of 128 threads is the linear index


def test_shuffle_elect_extent_is_a_non_negative_constant():
    with pytest.raises(FrontendError, match="non-negative constant"):
        @T.prim_func
        def k(A: T.Tensor((64,), "int32")):
            with T.Kernel(1, threads=64):
                tx = T.get_thread_binding()
                A[tx] = T.shuffle_elect(-32)


# -- explicit vector accesses --------------------------------------------------------------------
def parse(body):
    @T.prim_func
    def k(X: T.Tensor((64,), "float32"), H: T.Tensor((64,), "float16"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=16):
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float32")  # noqa: F841
            body(X, H, Y, S, tx)

    return k


def test_vector_loads_return_uint32_vectors():
    seen = {}

    def body(X, H, Y, S, tx):
        seen["32"] = T.ldg32(X[tx])
        seen["64"] = T.ldg64(X[tx * 2:tx * 2 + 2])
        seen["128"] = T.ldg128(H[tx * 8:tx * 8 + 8])
        seen["256"] = T.ldg256(X[0:8])
        seen["pred"] = T.ldg128(X[tx * 4], pred=tx < 3)
        seen["lds"] = T.lds64(S[tx * 2])

    parse(body)
    assert {k: str(v.ty) for k, v in seen.items()} == {"32": "uint32", "64": "uint32x2", "128": "uint32x4",
                                                       "256": "uint32x8", "pred": "uint32x4", "lds": "uint32x2"}


@pytest.mark.parametrize("body,match", [
    (lambda X, H, Y, S, tx: T.ldg32(S[tx]), "accesses global memory, but 'S' is in shared"),
    (lambda X, H, Y, S, tx: T.lds32(X[tx]), "accesses shared memory, but 'X' is in global"),
    (lambda X, H, Y, S, tx: T.ldg128(X[tx * 4 + 1]), "is not 16-byte aligned"),
    (lambda X, H, Y, S, tx: T.ldg128(X[0:2]), "moves 16 bytes .* the slice of 'X' is"),
    (lambda X, H, Y, S, tx: T.stg32(Y[tx], X[tx]), "stores the bits of a uint32 value, got float32"),
    (lambda X, H, Y, S, tx: T.stg64(Y[tx * 2], T.ldg32(X[tx])), "stores the bits of a uint32x2 value, got uint32"),
    (lambda X, H, Y, S, tx: getattr(T, "__ldg")(S[tx]), "read-only cache; 'S' is in shared"),
], ids=["ldg-shared", "lds-global", "unaligned", "slice-size", "float-value", "narrow-value", "ldg-shared-cache"])
def test_vector_access_refusals(body, match):
    with pytest.raises((FrontendError, TypeError), match=match):
        parse(body)


def test_ldg_buffer_form_needs_an_index():
    with pytest.raises(FrontendError, match="requires an index when passing a Buffer"):
        parse(lambda X, H, Y, S, tx: getattr(T, "__ldg")(X))


def test_tilelangs_hip_availability_check_follows_the_device_probe(monkeypatch):
    from tilelang_core.rocm.target import check_hip_availability
    from tilelang_core.testing import pytest_helpers

    monkeypatch.setattr(pytest_helpers, "has_rocm", lambda: True)
    assert check_hip_availability() is True
    monkeypatch.setattr(pytest_helpers, "has_rocm", lambda: False)
    assert check_hip_availability() is False
