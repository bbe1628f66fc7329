"""LayoutInference on real kernels: sources of layouts, propagation, defaults, conflicts."""

import pytest

import tilelang_core.language as T
from tilelang_core.errors import LayoutError
from tilelang_core.layout import LOCAL, THREAD, Digit, Fragment
from tilelang_core.transform.layout_inference import infer_layouts


def accumulator(op, num_threads):
    """A stand-in backend hook: 16x16 blocks, thread = block row, 8 registers per thread..."""
    m, n, _ = (int(x) for x in op.mnk)
    rows = (Digit(m, THREAD, 1),)
    cols = (Digit(n, LOCAL, 1),)
    assert m == num_threads
    return Fragment((m, n), (rows, cols), name="acc")


@T.prim_func
def rowwise(A: T.Tensor((64, 32), T.float16), B: T.Tensor((32, 16), T.float16),
            Out: T.Tensor((64,), T.float32)):
    with T.Kernel(1, threads=64) as bx:
        A_s = T.alloc_shared((64, 32), T.float16)
        B_s = T.alloc_shared((32, 16), T.float16)
        acc = T.alloc_fragment((64, 16), T.float32)
        row = T.alloc_fragment((64,), T.float32)
        scaled = T.alloc_fragment((64,), T.float32)
        other = T.alloc_fragment((32, 32), T.float32)
        T.copy(A, A_s)
        T.copy(B, B_s)
        T.gemm(A_s, B_s, acc, clear_accum=True)
        T.reduce_max(acc, row, dim=1)
        for i in T.Parallel(64):
            scaled[i] = row[i] * 2.0
        T.fill(other, 0.0)
        T.copy(scaled, Out[bx * 64])


def test_accumulator_reduction_and_parallel_propagate():
    layouts = {str(b.name): f for b, f in infer_layouts(rowwise, 64, accumulator).items()}
    assert layouts["acc"].describe() == "i0:64t@1 i1:16l@1"
    assert layouts["row"] == layouts["acc"].reduce(1)
    assert layouts["scaled"] == layouts["row"]          # through the T.Parallel loop


def test_unconstrained_fragments_are_spread_in_16_byte_runs():
    layouts = {str(b.name): f for b, f in infer_layouts(rowwise, 64, accumulator).items()}
    other = layouts["other"]
    assert (other.num_threads, other.local_size) == (64, 16)
    assert [other.thread_of(0, j) for j in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]  # 4 x fp32


@T.prim_func
def conflicting(A: T.Tensor((64, 32), T.float16), B: T.Tensor((32, 16), T.float16)):
    with T.Kernel(1, threads=64) as bx:
        A_s = T.alloc_shared((64, 32), T.float16)
        B_s = T.alloc_shared((32, 16), T.float16)
        acc = T.alloc_fragment((64, 16), T.float32)
        acc2 = T.alloc_fragment((64, 16), T.float32)
        T.gemm(A_s, B_s, acc, clear_accum=True)
        T.gemm(A_s, B_s, acc2, clear_accum=True)
        T.copy(acc, acc2)


def test_two_layouts_for_one_fragment_name_it_and_both_sources():
    calls = []

    def two_layouts(op, n):
        calls.append(op)
        base = accumulator(op, n)
        if len(calls) == 1:
            return base
        return Fragment(base.shape, ((Digit(64, THREAD, 1),), (Digit(2, LOCAL, 1), Digit(8, LOCAL, 2))))

    with pytest.raises(LayoutError, match="fragment 'acc2' gets two different layouts") as info:
        infer_layouts(conflicting, 64, two_layouts)
    assert "T.gemm accumulator" in str(info.value) and "copied from 'acc'" in str(info.value)


def test_fragment_indexed_by_an_expression_in_a_parallel_loop_is_held_whole():
    # TileLang's rule: such a fragment is in every thread's registers (numerics:
    # tests/simt/test_whole_fragments.py); the loop follows g's layout
    @T.prim_func
    def shifted(Out: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            f = T.alloc_fragment((65,), T.float32)
            g = T.alloc_fragment((64,), T.float32)
            T.fill(f, 1.0)
            for i in T.Parallel(64):
                g[i] = f[i + 1]
            T.copy(g, Out[bx * 64])

    layouts = {str(b.name): v for b, v in infer_layouts(shifted, 64, accumulator).items()}
    assert layouts["f"].local_size == 65 and layouts["f"].replicas == 64
    assert layouts["g"].local_size == 1


def test_fragment_held_whole_written_by_a_distributed_loop_is_refused():
    @T.prim_func
    def partial(A: T.Tensor((64, 32), T.float16), Out: T.Tensor((63, 64), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            A_s = T.alloc_shared((64, 32), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            f = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, A_s)
            T.gemm(A_s, A_s, acc, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                f[i, j] = acc[i, j]         # each thread writes only its own elements of f ...
            for i, j in T.Parallel(63, 64):
                Out[i, j] = f[i + 1, j]     # ... that every thread must hold whole

    with pytest.raises(LayoutError, match="'f' is held whole by every thread"):
        infer_layouts(partial, 64, accumulator)
