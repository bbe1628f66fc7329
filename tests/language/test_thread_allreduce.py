"""T.tvm_thread_allreduce (TileLang's SIMT gemv form): every thread gets the fold of a value over
the threads that differ only in the named bindings, on the cpu backend and every interpreter."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def allreduce_kernel(threads, dims, op="sum", rounds=1, masked=False):
    """Out[r, t] = fold over the threads sharing t's other coordinates of X[r, t] (each thread
    contributes its own element; masked: only even threads)."""
    total = int(np.prod(threads))
    if op == "sum":
        reducer = lambda: T.comm_reducer(lambda x, y: x + y, [T.float32(0)])  # noqa: E731
    else:
        reducer = lambda: T.comm_reducer(lambda x, y: T.max(x, y), [T.float32(-3.0e38)])  # noqa: E731

    t3 = tuple(threads) + (1,) * (3 - len(threads))
    cond = (lambda f: f % 2 == 0) if masked else (lambda f: True)  # noqa: E731
    two = len(dims) == 2

    @T.prim_func
    def k(X: T.Tensor((rounds, total), "float32"), Out: T.Tensor((rounds, total), "float32")):
        with T.Kernel(1, threads=t3):
            flat = T.get_thread_binding(0) + T.get_thread_binding(1) * t3[0] \
                + T.get_thread_binding(2) * (t3[0] * t3[1])
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            for r in T.serial(rounds):  # the scratch is reused: barriers between the rounds
                acc[0] = X[r, flat]
                with T.attr(reducer(), "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                    if two:  # names bound to the bindings, as TileLang's kernels pass them
                        t_a = T.get_thread_binding(dims[0])
                        t_b = T.get_thread_binding(dims[1])
                        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], cond(flat), red[0], t_a, t_b,
                                                          dtype="handle"))
                    else:
                        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], cond(flat), red[0],
                                                          T.get_thread_binding(dims[0]), dtype="handle"))
                Out[r, flat] = red[0]

    return k


def expected(x, threads, dims, op, masked):
    rounds = x.shape[0]
    shaped = x.astype(np.float64).reshape((rounds,) + tuple(reversed(threads)))  # [r, z, y, x]
    if masked:
        flat = np.arange(x.shape[1]).reshape(tuple(reversed(threads)))
        fill = 0.0 if op == "sum" else -3.0e38
        shaped = np.where(flat[None] % 2 == 0, shaped, fill)
    axes = tuple(len(threads) - d for d in dims)  # binding d is axis len - d of [r, z, y, x]
    fold = shaped.sum(axis=axes, keepdims=True) if op == "sum" else shaped.max(axis=axes, keepdims=True)
    return np.broadcast_to(fold, shaped.shape).reshape(x.shape)


CASES = [
    ((2, 32), (1,), "sum"),     # TileLang's gemv: stride 2, 32 wide: shuffles, then across 2 warps
    ((4, 8), (1,), "max"),      # one warp: shuffles only
    ((64,), (0,), "sum"),       # 1-D block over two warps
    ((3, 8), (1,), "sum"),      # not whole warps, a stride of 3: through shared memory
    ((64, 2), (1,), "max"),     # stride of two warps
    ((4, 4, 2), (1, 2), "sum"),  # two bindings
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads, dims, op", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_allreduce_matches_numpy(path, threads, dims, op):
    rng = np.random.default_rng(hash((threads, dims)) % 2**32)
    total = int(np.prod(threads))
    x = rng.standard_normal((2, total)).astype(np.float32)
    out = run(path, allreduce_kernel(threads, dims, op, rounds=2), X=x, Out=np.zeros_like(x))
    np.testing.assert_allclose(out["Out"], expected(x, threads, dims, op, False), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_false_condition_contributes_the_identity(path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 64)).astype(np.float32)
    out = run(path, allreduce_kernel((2, 32), (1,), "sum", masked=True), X=x, Out=np.zeros_like(x))
    np.testing.assert_allclose(out["Out"], expected(x, (2, 32), (1,), "sum", True), rtol=1e-5, atol=1e-5)


def test_cuda_source_shuffles_inside_the_warp():
    import tilelang_core as tl

    src = tl.compile(allreduce_kernel((4, 8), (1,), "sum"), target="cuda:sm_90a").get_kernel_source()
    # (the kernel's own code: every helper is added on demand, so a shuffle helper is there only if called)
    assert "__shfl_sync(" in src and "tl_shfl_sync(" in src and "__syncthreads" not in src


@pytest.mark.parametrize("scoped, offset, message", [
    (False, 0, "must be inside 'with T.attr\\(T.comm_reducer"),
    (True, 1, "reduces over the kernel's thread bindings"),
])
def test_misuse_is_refused(scoped, offset, message):
    with pytest.raises(FrontendError, match=message):
        @T.prim_func
        def k(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                tx = T.get_thread_binding()
                acc = T.alloc_local((1,), "float32")
                acc[0] = A[tx]
                if scoped:
                    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                                T.reinterpret(T.uint64(0), dtype="handle")):
                        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, acc[0], tx + offset,
                                                          dtype="handle"))
                else:
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, acc[0], tx, dtype="handle"))


def thread_binding_kernel(form):
    """TileLang's dequantize gemv: the thread indices named by T.thread_binding in the body."""
    @T.prim_func
    def k(X: T.Tensor((4, 16), "float32"), Out: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=(16, 4)):
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            if form == "assign":
                kr = T.thread_binding(0, 16, thread="threadIdx.x")
                ni = T.thread_binding(0, 4, thread="threadIdx.y")
                acc[0] = X[ni, kr]
                with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                            T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], kr, dtype="handle"))
                Out[ni] = red[0]
            else:
                for ni in T.thread_binding(4, thread="threadIdx.y"):
                    for kr in T.thread_binding(0, 16, thread="threadIdx.x"):
                        acc[0] = X[ni, kr]
                        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                                    T.reinterpret(T.uint64(0), dtype="handle")):
                            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], kr,
                                                              dtype="handle"))
                        Out[ni] = red[0]

    return k


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
@pytest.mark.parametrize("form", ["assign", "loop"])
def test_thread_binding_names_the_kernels_thread_index(path, form):
    x = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
    out = run(path, thread_binding_kernel(form), X=x, Out=np.zeros(4, np.float32))
    np.testing.assert_allclose(out["Out"], x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_thread_binding_over_another_range_is_refused():
    with pytest.raises(FrontendError, match="must span the kernel's threadIdx.y, 0 to 4"):
        @T.prim_func
        def k(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=(8, 4)):
                ty = T.thread_binding(0, 2, thread="threadIdx.y")
                A[ty] = 0.0
