"""TileLang's whole atomic family on every reference path: thread-level atomics (every thread that
runs one performs it), ``return_prev=True``, ``T.atomic_load`` / ``T.atomic_store``, memory orders,
the bitwise atomics, 16-bit max/min, the paired/quad adds returning their previous values; the
CUDA source for sm_80 and sm_90a, HIP code objects, MSL, and the refusals."""

import re
import shutil
import warnings

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run

RNG = np.random.default_rng(11)
SIMT = [p for p in PATHS if p != "cpu"]


# -- kernels --------------------------------------------------------------------------------------
def count_threads(blocks, threads):
    @T.prim_func
    def count(Y: T.Tensor((1,), "float32")):
        with T.Kernel(blocks, threads=threads):
            T.atomic_add(Y[0], 1.0)  # no thread index: still once per thread (TileLang)

    return count


def histogram(blocks, threads, bins):
    @T.prim_func
    def hist(X: T.Tensor((blocks, threads), "float32"), Y: T.Tensor((bins,), "float32")):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            T.atomic_add(Y[tx % bins], X[bx, tx])

    return hist


def compaction(n, block):
    """TileLang's stream compaction: the previous counter value, used twice, is one atomic."""
    @T.prim_func
    def compact(x: T.Tensor((n,), "float32"), out: T.Tensor((n,), "int32"), again: T.Tensor((n,), "int32"),
                counter: T.Tensor((1,), "int32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            tx = T.get_thread_binding()
            i = bx * block + tx
            if i < n and x[i] > 0:
                pos = T.atomic_add(counter[0], 1, return_prev=True)
                out[pos] = i
                again[pos] = pos + 1

    return compact


def previous_in_parallel(M, N, bM, bN, dtype="float32"):
    @T.prim_func
    def prev(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), Old: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), T.ceildiv(N, bN), threads=32) as (bx, by):
            for i, j in T.Parallel(bM, bN):
                Old[bx * bM + i, by * bN + j] = T.atomic_add(B[bx * bM + i, by * bN + j],
                                                             A[bx * bM + i, by * bN + j], return_prev=True)

    return prev


def scalar_previous(kind, dtype, value, order="relaxed"):
    op = getattr(T, f"atomic_{kind}")

    @T.prim_func
    def main(Dst: T.Tensor((1,), dtype), Prev: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=1):
            Prev[0] = op(Dst[0], value, memory_order=order, return_prev=True)

    return main


def load_store(M, N, bM, bN, load_order="acquire", store_order="release"):
    @T.prim_func
    def copy(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), T.ceildiv(N, bN), threads=32) as (bx, by):
            for i, j in T.Parallel(bM, bN):
                if bx * bM + i < M and by * bN + j < N:
                    v = T.atomic_load(A[bx * bM + i, by * bN + j], memory_order=load_order)
                    T.atomic_store(B[bx * bM + i, by * bN + j], v, memory_order=store_order)

    return copy


def bitwise(kind, n, slots, order="relaxed"):
    op = getattr(T, f"atomic_{kind}")
    identity = -1 if kind == "and" else 0

    @T.prim_func
    def combine(X: T.Tensor((n,), "int32"), Y: T.Tensor((slots + 1,), "int32"), P: T.Tensor((n,), "int32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            tx = T.get_thread_binding()
            if bx * 32 + tx < n:
                op(Y[tx % slots], X[bx * 32 + tx], memory_order=order)
                P[bx * 32 + tx] = op(Y[slots], identity, return_prev=True)  # leaves Y[slots] as it was

    return combine


def max_min(kind, dtype, blocks, n, order="relaxed"):
    op = getattr(T, f"atomic_{kind}")

    @T.prim_func
    def combine(X: T.Tensor((blocks, n), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(blocks, threads=32) as bx:
            for j in T.Parallel(n):
                op(Y[j], X[bx, j], memory_order=order)

    return combine


def vector_previous(lanes, form):
    add = T.atomic_addx2 if lanes == 2 else T.atomic_addx4

    @T.prim_func
    def sliced(Dst: T.Tensor((8,), "float32"), Val: T.Tensor((8,), "float32"), Prev: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            Prev[0:lanes] = add(Dst[0:lanes], Val[0:lanes], return_prev=True)

    @T.prim_func
    def bound(Dst: T.Tensor((8,), "float32"), Val: T.Tensor((8,), "float32"), Prev: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            dst = Dst[0:lanes]
            Prev[0:lanes] = add(dst, Val[0], return_prev=True)

    @T.prim_func
    def ramp(Dst: T.Tensor((8,), "float32"), Val: T.Tensor((8,), "float32"), Prev: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            Prev[0:lanes] = add(Dst[T.Ramp(0, 1, lanes)], Val[T.Ramp(0, 1, lanes)], return_prev=True)

    return {"slice": sliced, "bound": bound, "ramp": ramp}[form]


# -- numerics on every path -----------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
def test_an_element_atomic_is_performed_by_every_thread(path):
    y = np.zeros(1, np.float32)
    run(path, count_threads(3, 8), Y=y)
    assert y[0] == 24.0  # 3 blocks x 8 threads; it was once per block (3) before


@pytest.mark.parametrize("path", PATHS)
def test_per_thread_atomics_keep_every_thread_update(path):
    x = RNG.standard_normal((3, 32)).astype(np.float32)
    y = np.zeros(4, np.float32)
    run(path, histogram(3, 32, 4), X=x, Y=y)
    np.testing.assert_allclose(y, x.astype(np.float64).reshape(3, 8, 4).sum((0, 1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_return_prev_compaction_happens_once_per_thread(path):
    n = 70  # three blocks of 32, the last one ragged
    x = RNG.standard_normal(n).astype(np.float32)
    out, again = np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    counter = np.zeros(1, np.int32)
    run(path, compaction(n, 32), x=x, out=out, again=again, counter=counter)
    positive = np.nonzero(x > 0)[0]
    assert counter[0] == len(positive)  # one atomic per positive element, not one per use
    assert sorted(out[:counter[0]].tolist()) == positive.tolist()
    np.testing.assert_array_equal(again[:counter[0]], np.arange(1, counter[0] + 1))
    assert (out[counter[0]:] == -1).all()


@pytest.mark.parametrize("path", PATHS)
def test_return_prev_in_a_ragged_parallel_loop(path):
    M, N = 10, 12  # tiles of 4 x 8 overhang both dims
    a = RNG.standard_normal((M, N)).astype(np.float32)
    b = RNG.standard_normal((M, N)).astype(np.float32)
    b0, old = b.copy(), np.zeros((M, N), np.float32)
    run(path, previous_in_parallel(M, N, 4, 8), A=a, B=b, Old=old)
    np.testing.assert_array_equal(old, b0)
    np.testing.assert_allclose(b, b0.astype(np.float64) + a, rtol=1e-6)


CASES = [("add", "float32", 5.0, 8.0), ("max", "float32", 5.0, 5.0), ("min", "float32", 1.0, 1.0),
         ("max", "float32", 1.0, 3.0), ("or", "int32", 12, 15), ("and", "int32", 6, 2), ("xor", "int32", 5, 6),
         ("add", "int32", -4, -1)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind, dtype, value, after", CASES)
def test_return_prev_of_every_kind_is_the_old_value(path, kind, dtype, value, after):
    np_dtype = np.dtype(dtype)
    dst, prev = np.array([3], np_dtype), np.zeros(1, np_dtype)
    run(path, scalar_previous(kind, dtype, value), Dst=dst, Prev=prev)
    assert prev[0] == 3 and dst[0] == after


@pytest.mark.parametrize("path", PATHS)
def test_atomic_load_and_store_copy_a_ragged_tensor(path):
    M, N = 9, 13
    ordered = path != "metal:apple7"  # MSL atomics are relaxed only (refusal tested below)
    kernel = load_store(M, N, 4, 8, *(("acquire", "release") if ordered else ("relaxed", "relaxed")))
    a = RNG.standard_normal((M, N)).astype(np.float32)
    b = np.zeros((M, N), np.float32)
    run(path, kernel, A=a, B=b)
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["or", "and", "xor"])
def test_bitwise_atomics_combine_every_thread(path, kind):
    n, slots = 70, 4
    x = RNG.integers(0, 1 << 30, n).astype(np.int32)
    y = RNG.integers(0, 1 << 30, slots + 1).astype(np.int32)
    if kind == "and":
        y[slots] = -1
    y0, p = y.copy(), np.zeros(n, np.int32)
    order = "relaxed" if path == "metal:apple7" else "acq_rel"
    run(path, bitwise(kind, n, slots, order), X=x, Y=y, P=p)
    f = {"or": np.bitwise_or, "and": np.bitwise_and, "xor": np.bitwise_xor}[kind]
    expected = y0[:slots].copy()
    for i in range(n):
        expected[i % slots] = f(expected[i % slots], x[i])
    np.testing.assert_array_equal(y[:slots], expected)
    assert (p == y0[slots]).all() and y[slots] == y0[slots]


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_float16_max_and_min(path, kind):
    x = RNG.standard_normal((3, 40)).astype(np.float16)
    y = np.zeros(40, np.float16)
    run(path, max_min(kind, "float16", 3, 40, "seq_cst"), X=x, Y=y)
    f = np.maximum if kind == "max" else np.minimum
    np.testing.assert_array_equal(y, f(np.float16(0), f.reduce(x, axis=0)))


@pytest.mark.parametrize("kind", ["max", "min"])
def test_bfloat16_max_and_min(kind):
    import torch

    from tilelang_core.jit import compile as compile_kernel

    x = torch.randn(3, 40).to(torch.bfloat16)
    f = torch.maximum if kind == "max" else torch.minimum
    expected = f(torch.zeros(40, dtype=torch.bfloat16), x.amax(0) if kind == "max" else x.amin(0))
    y = torch.zeros(40, dtype=torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile_kernel(max_min(kind, "bfloat16", 3, 40), target="cpu")(x, y)
    assert torch.equal(y, expected)
    # the interpreter holds bfloat16 as float32: the same values, exactly
    yi = np.zeros(40, np.float32)
    run("cuda:sm_80", max_min(kind, "bfloat16", 3, 40), X=x.float().numpy(), Y=yi)
    np.testing.assert_array_equal(yi, expected.float().numpy())


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("form", ["slice", "bound", "ramp"])
def test_paired_and_quad_adds_return_the_previous_values(path, lanes, form):
    dst = np.arange(1, 9, dtype=np.float32)
    val = np.arange(10, 90, 10, dtype=np.float32)
    prev = np.zeros(8, np.float32)
    d0 = dst.copy()
    run(path, vector_previous(lanes, form), Dst=dst, Val=val, Prev=prev)
    np.testing.assert_array_equal(prev[:lanes], d0[:lanes])
    np.testing.assert_array_equal(dst[:lanes], d0[:lanes] + val[:lanes])
    np.testing.assert_array_equal(dst[lanes:], d0[lanes:])
    assert (prev[lanes:] == 0).all()


def test_a_bfloat16_value_bound_in_a_parallel_loop_compiles_on_cpu():
    """TileLang's different-memory-orders test binds ``val = A[i, j]``; TVM's LLVM legalization of
    bfloat16 could not retype such a Bind."""
    import torch

    from tilelang_core.jit import compile as compile_kernel

    @T.prim_func
    def orders(A: T.Tensor((16, 16), "bfloat16"), B: T.Tensor((16, 16), "bfloat16"),
               C: T.Tensor((16, 16), "bfloat16")):
        with T.Kernel(2, 2, threads=32) as (bx, by):
            for i, j in T.Parallel(8, 8):
                val = A[bx * 8 + i, by * 8 + j]
                T.atomic_add(B[bx * 8 + i, by * 8 + j], val, memory_order="release")
                T.atomic_max(C[bx * 8 + i, by * 8 + j], val)

    a = torch.randn(16, 16).to(torch.bfloat16)
    b, c = torch.zeros_like(a), torch.zeros_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile_kernel(orders, target="cpu")(a, b, c)
    assert torch.equal(b, a) and torch.equal(c, torch.maximum(a, torch.zeros_like(a)))


def test_global_atomics_of_any_form_run_cpu_blocks_serially():
    from tilelang_cpu.pipeline import has_global_atomics

    assert has_global_atomics(compaction(64, 32))
    assert has_global_atomics(load_store(8, 8, 4, 4))


# -- generated source -----------------------------------------------------------------------------
def every_form(bf16=True, int64=True):
    """One kernel using every helper: statement, ordered and returning forms of each kind on each
    element type, loads and stores, global and shared memory."""

    @T.prim_func
    def forms(D16: T.Tensor((4,), "float16"), Dbf: T.Tensor((4,), "bfloat16"), D32: T.Tensor((4,), "float32"),
              D64: T.Tensor((4,), "float64"), I32: T.Tensor((4,), "int32"), I64: T.Tensor((4,), "int64"),
              Out: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32):
            tx = T.get_thread_binding()
            s = T.alloc_shared((32,), "float32")
            s[tx] = 0.0
            T.sync_threads()
            T.atomic_add(D16[tx % 4], 1.0)
            T.atomic_max(D16[tx % 4], 1.0, memory_order="acq_rel")
            Out[tx] += T.cast(T.atomic_min(D16[tx % 4], 2.0, memory_order="seq_cst", return_prev=True), "float32")
            if bf16:
                T.atomic_add(Dbf[tx % 4], 1.0, memory_order="release")
                T.atomic_min(Dbf[tx % 4], 1.0)
                Out[tx] += T.cast(T.atomic_max(Dbf[tx % 4], 2.0, return_prev=True), "float32")
            T.atomic_add(D32[tx % 4], 1.0, memory_order="acq_rel")
            T.atomic_min(D32[tx % 4], 1.0, memory_order="acquire")
            Out[tx] += T.atomic_max(D32[tx % 4], 2.0, memory_order="seq_cst", return_prev=True)
            Out[tx] += T.atomic_add(D32[tx % 4], 2.0, return_prev=True)
            T.atomic_max(D64[tx % 4], 1.0)
            Out[tx] += T.cast(T.atomic_min(D64[tx % 4], 2.0, memory_order="consume", return_prev=True), "float32")
            Out[tx] += T.cast(T.atomic_add(D64[tx % 4], 2.0, return_prev=True), "float32")
            T.atomic_or(I32[tx % 4], 3, memory_order="release")
            T.atomic_and(I32[tx % 4], 7)
            Out[tx + 32] += T.cast(T.atomic_xor(I32[tx % 4], 1, memory_order="acq_rel", return_prev=True), "float32")
            Out[tx + 32] += T.cast(T.atomic_max(I32[tx % 4], 1, return_prev=True), "float32")
            if int64:
                T.atomic_add(I64[tx % 4], 3)
                T.atomic_xor(I64[tx % 4], 3, memory_order="seq_cst")
                Out[tx + 32] += T.cast(T.atomic_min(I64[tx % 4], 1, return_prev=True), "float32")
                Out[tx + 32] += T.cast(T.atomic_or(I64[tx % 4], 1, return_prev=True), "float32")
            T.atomic_add(s[tx], 1.0, memory_order="acquire")
            T.atomic_store(I32[0], 7, memory_order="release")
            Out[tx] += T.cast(T.atomic_load(I32[1], memory_order="acquire"), "float32") + T.atomic_load(s[tx])
            Out[tx] += T.atomic_load(D32[2], memory_order="relaxed")

    return forms


requires_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@requires_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_of_every_form_compiles(arch, tmp_path):
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        def __init__(self, a):
            self.arch = a

    backend, options = CudaBackend(Target(arch)), CudaOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(every_form(), options), options)
    kernel = source[source.index('extern "C" __global__'):]
    for helper in ("tl_atomic_add_ret(", "tl_atomic_max_ret(", "tl_atomic_xor_ret(", "tl_atomic_or(",
                   "tl_atomic_store(", "tl_atomic_load("):
        assert helper in kernel, helper
    # ids of cuda::memory_order: acq_rel 4, seq_cst 5, release 3, acquire 2
    # the memory orders as cuda::memory_order's ids: consume 1, acquire 2, release 3, acq_rel 4, seq_cst 5
    for order_id in range(1, 6):
        assert re.search(rf"tl_atomic_\w+\([^;]*, {order_id}\)", kernel), order_id
    device = codegen.split_source(source).device
    compiler.compile_cubin(device, arch, tmp_path, options)
    from tilelang_cuda import nvrtc

    if nvrtc.available():  # the default device compiler where it is found: no headers there
        nvrtc.compile_cubin(device, arch, options, "kernel_device.cu")


@requires_nvcc
def test_return_prev_is_one_helper_call_in_cuda_source():
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        arch = "sm_90a"

    backend, options = CudaBackend(Target()), CudaOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(compaction(256, 64), options), options)
    kernel = source[source.index('extern "C" __global__'):]
    assert kernel.count("tl_atomic_add_ret(") == 1


@pytest.mark.skipif(shutil.which("clang++-19") is None and shutil.which("clang-19") is None,
                    reason="clang-19 missing: bash tools/dev.sh setup installs it")
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_hip_code_object_of_every_form(arch, tmp_path):
    from tilelang_hip import codegen, compiler
    from tilelang_hip.options import HipOptions
    from tilelang_hip.pipeline import HipBackend

    class Target:
        def __init__(self, a):
            self.arch = a

    backend, options = HipBackend(Target(arch)), HipOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(every_form(bf16=False), options), options)
    code_object = compiler.compile_device(codegen.split(source).device, arch, tmp_path, options)
    asm = compiler.disassemble(code_object, arch)
    assert "atomic_add" in asm and "atomic_cmpswap" in asm  # native adds; CAS loops for float max/min


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 missing")
def test_metal_source_of_the_relaxed_forms_passes_the_msl_check():
    from tilelang_metal.check import check_msl
    from tilelang_metal.options import MetalOptions
    from tilelang_metal.pipeline import MetalBackend

    class Target:
        arch = "apple7"

    backend = MetalBackend(Target())
    for func in (compaction(64, 32), bitwise("xor", 64, 4), load_store(8, 8, 4, 4, "relaxed", "relaxed"),
                 max_min("max", "float32", 2, 32)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_msl(backend.codegen(backend.lower(func, MetalOptions())))


# -- refusals -------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["acquire", "seq_cst"])
def test_metal_refuses_ordered_atomics_by_name(order):
    with pytest.raises(LoweringError, match=rf"memory_order='{order}'.*metal backend"):
        lower("metal:apple7", bitwise("or", 32, 4, order))


@pytest.mark.parametrize("path, dtype", [("metal:apple7", "float16"), ("hip:gfx942", "bfloat16")])
def test_a_kind_without_a_device_atomic_is_refused(path, dtype):
    with pytest.raises(LoweringError, match=rf"atomic_max on {dtype} has no"):
        lower(path, max_min("max", dtype, 2, 32))


def test_return_prev_on_a_replicated_parallel_element_is_refused():
    @T.prim_func
    def replicated(A: T.Tensor((16, 32), "float32"), G: T.Tensor((16,), "float32"), Old: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((16, 32), "float32")
            r = T.alloc_fragment((16,), "float32")
            T.copy(A, a)
            T.reduce_sum(a, r, dim=1)
            for i in T.Parallel(16):
                Old[i] = T.atomic_add(G[i], r[i], return_prev=True)

    with pytest.raises(LoweringError, match=r"T.atomic_add\(return_prev=True\).*several threads"):
        lower("cuda:sm_80", replicated)


def test_ascend_refuses_what_it_has_no_form_for():
    pytest.importorskip("tilelang_ascend")
    from tilelang_ascend.pipeline import lower_program

    with pytest.raises(LoweringError, match=r"T.atomic_add\(return_prev=True\) on counter\[0\]"):
        lower_program(compaction(64, 32))


def test_frontend_refusals():
    with pytest.raises(FrontendError, match="atomic_load does not support memory_order='release'"):
        load_store(8, 8, 4, 4, load_order="release")
    with pytest.raises(FrontendError, match="atomic_store does not support memory_order='acquire'"):
        load_store(8, 8, 4, 4, store_order="acquire")
    with pytest.raises(ValueError, match="atomic_store does not support memory_order"):  # TileLang's type
        load_store(8, 8, 4, 4, store_order="consume")
    with pytest.raises(FrontendError, match="bitwise atomic.*integer type, not float32"):
        scalar_previous("or", "float32", 1.0)
    with pytest.raises(FrontendError, match="memory_order='weird'"):
        scalar_previous("add", "float32", 1.0, order="weird")

    with pytest.raises(FrontendError, match="needs one element as its destination"):
        @T.prim_func
        def tile(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.atomic_add(A[0:8], 1.0, return_prev=True)

    with pytest.raises(FrontendError, match="condition of a while loop"):
        @T.prim_func
        def spin(F: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1):
                while T.atomic_add(F[0], 1, return_prev=True) < 3:
                    F[0] = 0

    with pytest.raises(FrontendError, match="exactly 4 consecutive elements"):
        @T.prim_func
        def narrow(D: T.Tensor((8,), "float32"), S: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                T.atomic_addx4(D[0:2], S[0:4])

    with pytest.raises(FrontendError, match="index the buffer"):
        @T.prim_func
        def whole(D: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                T.atomic_store(D, 1.0)


def test_a_spin_wait_on_atomic_load_reads_again_each_test():
    """``while T.atomic_load(...)`` is an expression in the loop condition, not a value read once."""
    @T.prim_func
    def wait(F: T.Tensor((1,), "int32"), N: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1):
            while T.atomic_load(F[0], memory_order="acquire") < 5:
                T.atomic_add(F[0], 1)
                T.atomic_add(N[0], 1)

    f, n = np.zeros(1, np.int32), np.zeros(1, np.int32)
    run("cpu", wait, F=f, N=n)
    assert f[0] == 5 and n[0] == 5


@pytest.mark.parametrize("path", PATHS)
def test_return_prev_per_thread_and_per_element_in_one_kernel(path):
    """A per-thread atomic's previous value is the thread's own; one in a T.Parallel body is the
    element's (the cpu backend makes only the first a per-thread register)."""
    @T.prim_func
    def both(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32"), Old: T.Tensor((32,), "float32"),
             C: T.Tensor((1,), "int32"), Slot: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            Slot[tx] = T.atomic_add(C[0], 1, return_prev=True)
            for i in T.Parallel(32):
                Old[i] = T.atomic_add(B[i], A[i], return_prev=True)

    a, b = RNG.standard_normal(32).astype(np.float32), RNG.standard_normal(32).astype(np.float32)
    b0, old = b.copy(), np.zeros(32, np.float32)
    c, slot = np.zeros(1, np.int32), np.full(32, -1, np.int32)
    run(path, both, A=a, B=b, Old=old, C=c, Slot=slot)
    assert c[0] == 32 and sorted(slot.tolist()) == list(range(32))
    np.testing.assert_array_equal(old, b0)
    np.testing.assert_allclose(b, b0.astype(np.float64) + a, rtol=1e-6)


def test_a_returned_atomic_counts_as_a_write_of_its_buffer():
    """Passes that move reads ahead (pipelines, producers) ask written_buffers what the kernel
    writes: an atomic bound to a name writes its element too."""
    from tilelang_core.transform.bindings import written_buffers

    names = {str(b.name) for b in written_buffers(compaction(64, 32).body)}
    assert {"counter", "out", "again"} <= names


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_a_thread_level_atomic_on_a_layout_annotated_tensor_stays_per_thread(path):
    @T.prim_func
    def k(G: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=8):
            T.annotate_layout({G: T.Layout((4, 8), lambda i, j: [j, i])})
            T.atomic_add(G[1, 2], 1.0, memory_order="acq_rel")

    from tilelang_core.ir import Atomic, TileOp, is_tile_op
    import tvm_ffi
    from tvm import tirx

    ops = []
    tvm_ffi.structural_walk(k.body, [(tirx.TilePrimitiveCall, lambda c: ops.append(TileOp.from_stmt(c))
                                      if is_tile_op(c) else None)])
    (op,) = [o for o in ops if isinstance(o, Atomic)]
    assert op.per_thread and op.memory_order == "acq_rel"
    g = np.zeros((4, 8), np.float32)
    run(path, k, G=g)
    assert g.reshape(-1)[2 * 4 + 1] == 8.0 and g.sum() == 8.0  # element (1, 2) at offset j * 4 + i
