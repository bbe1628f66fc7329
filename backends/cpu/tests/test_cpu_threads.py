"""Per-thread code (T.get_thread_binding) on the cpu backend: run as loops over threads where that
is sound, refused with a LoweringError saying why where it is not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tilelang_core.language as T
from cpu_harness import assert_close, compile_cpu, rand
from tilelang_core.errors import LoweringError


def test_thread_indexed_elementwise_with_symbolic_size():
    n = T.dynamic("n")

    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            tx = T.get_thread_binding()
            idx = bx * 128 + tx
            if idx < n:
                C[idx] = A[idx] * 3.0

    kernel = compile_cpu(scale)
    for size in (5, 300):
        a, c = rand((size,), torch.float32, size), torch.zeros(size)
        kernel(a, c)
        assert_close(c, 3 * a.double())


def test_registers_are_per_thread_and_tile_ops_split_thread_loops():
    """Thread t writes s[t]; after a block-wide copy, thread t reads s[63 - t]: only correct when
    the copy is a barrier between two thread loops and each thread keeps its own register."""

    @T.prim_func
    def reverse(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"),
                C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            r = T.alloc_local((1,), "float32")
            r[0] = A[tx] * 2.0
            s[tx] = r[0]
            T.copy(s, B)
            C[tx] = s[63 - tx] + r[0]

    a = rand((64,), torch.float32, 1)
    b, c = torch.zeros(64), torch.zeros(64)
    compile_cpu(reverse)(a, b, c)
    ad = a.double()
    assert_close(b, 2 * ad)
    assert_close(c, 2 * ad.flip(0) + 2 * ad)


def test_thread_index_inside_parallel_loop_is_refused():
    @T.prim_func
    def bad(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            for i in T.Parallel(128):
                A[i] = A[i] + tx

    with pytest.raises(LoweringError, match=r"thread index .* inside a T\.Parallel loop") as info:
        compile_cpu(bad)
    assert "test_cpu_threads.py:" in str(info.value)  # points at the user's loop


def test_tile_op_under_a_thread_range_runs_whole_and_other_conditions_are_refused():
    """TileLang: the threads a range condition selects perform the whole op, so the copy runs
    once; a condition that selects no range of threads is refused (tests/language/
    test_thread_groups.py runs the generated cases on every path)."""
    @T.prim_func
    def ranged(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if tx == 0:
                T.copy(A, s)
            T.copy(s, B)

    a, b = rand((64,), torch.float32, 2), torch.zeros(64)
    compile_cpu(ranged)(a, b)
    assert_close(b, a.double())

    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if tx % 3 == 1:
                T.copy(A, s)
            T.copy(s, B)

    with pytest.raises(LoweringError, match=r"condition that encloses block-wide.*does not select one range"):
        compile_cpu(bad)


def test_two_dimensional_threads_with_per_thread_loop_bounds_and_alloc_var():
    @T.prim_func
    def prefix(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=(8, 4)) as _:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            acc = T.alloc_var("float32")
            acc = 0.0
            for k in T.serial(tx + 1):
                acc = acc + A[ty, k]
            B[ty, tx] = acc

    kernel = compile_cpu(prefix)
    script = kernel.lowered_script()
    # the block loop stays outermost, the registers are one per thread of the one 32-thread
    # launch (threads=(8, 4) is tx + 8 * ty), allocated once per block
    assert script.index("T.parallel") < script.index("alloc_buffer((32, 1))") and "in range(32)" in script
    a, b = rand((4, 8), torch.float32, 1), torch.zeros(4, 8)
    kernel(a, b)
    assert_close(b, a.double().cumsum(1))


def test_register_buffer_copied_by_each_thread_is_its_own():
    """A T.copy to or from a T.alloc_local buffer is each thread's own loop (TileLang's rule; it
    was refused here, and dealt over the threads on the GPU paths)."""
    @T.prim_func
    def per_thread(A: T.Tensor((4,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=4) as _:
            tx = T.get_thread_binding()
            r = T.alloc_local((4,), "float32")
            T.fill(r, A[tx])
            r[1] = r[1] * 2.0
            T.copy(r, B[tx * 4:tx * 4 + 4])

    a = np.arange(1, 5, dtype=np.float32)
    b = np.zeros(16, np.float32)
    compile_cpu(per_thread)(a, b)
    np.testing.assert_array_equal(b.reshape(4, 4), np.stack([a, 2 * a, a, a], 1))


def test_barrier_splits_thread_loops():
    """s[tx] = A[tx]; __syncthreads(); B[tx] = s[63 - tx]: needs two thread loops."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.tirx.script.builder import ir as B

    with IRBuilder() as ib:
        with B.prim_func():
            B.func_name("mirror")
            a, b = B.arg("a", B.handle()), B.arg("b", B.handle())
            A = B.match_buffer(a, (64,), "float32")
            Out = B.match_buffer(b, (64,), "float32")
            with B.launch_thread("blockIdx.x", 1):
                with B.launch_thread("threadIdx.x", 64) as tx:
                    IRBuilder.name("tx", tx)
                    s = B.alloc_buffer((64,), "float32", scope="shared.dyn")
                    B.buffer_store(s, A[tx], [tx])
                    B.evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", "shared"))
                    B.buffer_store(Out, s[63 - tx], [tx])
    kernel = compile_cpu(ib.get())
    assert kernel.lowered_script().count("for tx in range(64)") == 2
    a, out = rand((64,), torch.float32, 4), torch.zeros(64)
    kernel(a, out)
    assert torch.equal(out, a.flip(0))


def test_per_thread_atomics_from_many_blocks():
    @T.prim_func
    def histogram(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(16, threads=64) as bx:
            tx = T.get_thread_binding()
            T.atomic_add(Y[tx % 8], X[bx, tx])

    x, y = rand((16, 64), torch.float32, 2), torch.zeros(8)
    compile_cpu(histogram)(x, y)
    assert_close(y, x.double().view(16, 8, 8).sum((0, 1)))


def test_thread_dependent_bind_keeps_the_value_it_had_when_bound():
    """x = r[0] snapshots the register; changing r afterwards must not change x."""

    @T.prim_func
    def snapshot(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as _:
            tx = T.get_thread_binding()
            r = T.alloc_local((1,), "float32")
            r[0] = A[tx]
            x = r[0] * 2.0
            r[0] = 100.0
            B[tx] = x + r[0]

    a, b = rand((32,), torch.float32, 6), torch.zeros(32)
    compile_cpu(snapshot)(a, b)
    assert_close(b, 2 * a.double() + 100)


def test_values_bound_in_a_thread_range_branch_stay_in_scope_for_its_statements():
    """A branch on a range of threads holding a tile op is spread over its statements, each under
    the condition (ThreadsToLoops.distribute). Registers declared in it (an alloc_var, a value bound
    from the thread's data) must scope over all of them: TileKernels' per-channel cast stopped in
    TVM's LLVM codegen with "cannot find variable" when each declaration got a branch of its own."""
    @T.prim_func
    def ranged(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if tx < 64:
                t = T.alloc_var("float32")
                t = A[tx] * 2.0
                v = t + 1.0
                T.copy(A, s)
                w = v * 3.0
                C[tx] = w + s[63 - tx]
            T.copy(s, B)

    a, b, c = rand((64,), torch.float32, 3), torch.zeros(64), torch.zeros(64)
    compile_cpu(ranged)(a, b, c)
    a64 = a.double()
    assert_close(b, a64)
    assert_close(c, (a64 * 2 + 1) * 3 + a64.flip(0))
