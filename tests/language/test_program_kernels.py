"""Programs of several ``T.Kernel`` blocks sharing ``T.alloc_global`` workspaces (TileLang's split +
combine kernels): the kernels run in program order, every block of a later kernel sees what every
block of an earlier one wrote, the workspace is one buffer of the whole call. On the cpu backend
and the cuda (sm_80) interpreter, against numpy in float64; hip/metal refuse such programs."""

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import CompileError, LoweringError
from tilelang_core.testing.oracle import run
from tilelang_core.transform.program_kernels import hoist_workspaces, split_program

PATHS = ("cpu", "cuda:sm_80")
RNG = np.random.default_rng(11)


def reversed_through_workspace(N, block, alloc=T.alloc_global):
    """Kernel 0 writes W = 2 * A, kernel 1 reads W in reverse: each block of kernel 1 reads what
    other blocks of kernel 0 wrote. (``T.alloc_buffer`` without a scope is TileLang's way to the
    same workspace: its default scope is global.)"""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        W = alloc((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                W[bx * block + i] = A[bx * block + i] * 2.0
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = W[(N - 1) - (bx * block + i)] + 1.0

    return main


def split_sum(S, N, chunk):
    """Split-K style: kernel 0 writes one partial sum per (split, row) into a workspace, kernel 1
    combines the splits (flash decoding's glse / Output_partial shape, reduced to sums)."""

    @T.prim_func
    def main(X: T.Tensor((S * chunk, N), T.float32), Out: T.Tensor((N,), T.float32)):
        part = T.alloc_global((S, N), T.float32)
        with T.Kernel(S, threads=32) as s:
            tile = T.alloc_fragment((chunk, N), T.float32)
            acc = T.alloc_fragment((N,), T.float32)
            T.copy(X[s * chunk, 0], tile)
            T.reduce_sum(tile, acc, dim=0)
            T.copy(acc, part[s, 0])
        with T.Kernel(1, threads=32) as _:
            all_parts = T.alloc_fragment((S, N), T.float32)
            total = T.alloc_fragment((N,), T.float32)
            T.copy(part, all_parts)
            T.reduce_sum(all_parts, total, dim=0)
            T.copy(total, Out)

    return main


def dynamic_workspace(block):
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        W = T.alloc_global((n,), T.float32)
        half = n // 2  # a named value between kernels: substituted into both
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    W[bx * block + i] = A[bx * block + i] - half
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = W[(n - 1) - (bx * block + i)] * 3.0

    return main


def three_kernels_no_workspace(N):
    """Three kernels, each reading what the one before wrote (race-free within each)."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                A[bx * 32 + i] = A[bx * 32 + i] * 2.0
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + A[(bx * 32 + i + 1) % N]
        with T.Kernel(1, threads=32) as _:
            tx = T.get_thread_binding()
            if tx == 0:
                A[0] = B[N - 1] - 1.0

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N,block", [(37, 16), (1, 16), (64, 32)])
@pytest.mark.parametrize("alloc", [T.alloc_global, T.alloc_buffer], ids=["alloc_global", "alloc_buffer"])
def test_a_later_kernel_sees_what_every_block_of_an_earlier_one_wrote(path, N, block, alloc):
    a = RNG.standard_normal(N).astype(np.float32)
    out = run(path, reversed_through_workspace(N, block, alloc), A=a, B=np.zeros(N, np.float32))
    np.testing.assert_allclose(out["B"], (2.0 * a.astype(np.float64))[::-1] + 1.0, rtol=1e-6)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("S,N,chunk", [(3, 5, 4), (1, 1, 2)])
def test_split_then_combine_through_a_2d_workspace(path, S, N, chunk):
    x = RNG.standard_normal((S * chunk, N)).astype(np.float32)
    out = run(path, split_sum(S, N, chunk), X=x, Out=np.zeros(N, np.float32))
    np.testing.assert_allclose(out["Out"], x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [1, 23])
def test_a_workspace_sized_by_a_dynamic_extent(path, n):
    a = RNG.standard_normal(n).astype(np.float32)
    out = run(path, dynamic_workspace(8), A=a, B=np.zeros(n, np.float32))
    np.testing.assert_allclose(out["B"], (a.astype(np.float64) - n // 2)[::-1] * 3.0, rtol=1e-6)


def test_a_compiled_dynamic_workspace_is_sized_per_call():
    kernel = tilelang.compile(dynamic_workspace(8), target="cpu")
    for n in (5, 100, 1):
        a = RNG.standard_normal(n).astype(np.float32)
        b = np.zeros(n, np.float32)
        kernel(a, b)
        np.testing.assert_allclose(b, (a.astype(np.float64) - n // 2)[::-1] * 3.0, rtol=1e-6)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N", [3, 40])
def test_kernels_run_in_program_order(path, N):
    a = RNG.standard_normal(N).astype(np.float32)
    out = run(path, three_kernels_no_workspace(N), A=a.copy(), B=np.zeros(N, np.float32))
    twice = 2.0 * a.astype(np.float64)
    b = twice + np.roll(twice, -1)
    np.testing.assert_allclose(out["B"], b, rtol=1e-6)
    np.testing.assert_allclose(out["A"], np.concatenate([[b[-1] - 1.0], twice[1:]]), rtol=1e-6)


def workspace_inside_kernel(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            W = T.alloc_global((N,), T.float32)
            for i in T.Parallel(block):
                W[bx * block + i] = A[bx * block + i] + 1.0
            for i in T.Parallel(block):
                B[bx * block + i] = W[bx * block + i] * 2.0

    return main


def test_a_workspace_allocated_in_a_kernel_is_one_buffer_for_all_blocks():
    hoisted = hoist_workspaces(workspace_inside_kernel(40, 16))
    text = hoisted.script()
    assert text.index("T.alloc_buffer((40,))") < text.index("launch_thread")
    kernel = tilelang.compile(workspace_inside_kernel(40, 16), target="cpu")
    lowered = kernel.asm["lowered"]
    assert lowered.index("alloc_buffer") < lowered.index("T.parallel")  # not one per block
    a = RNG.standard_normal(40).astype(np.float32)
    b = np.zeros(40, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, (a.astype(np.float64) + 1.0) * 2.0, rtol=1e-6)


@pytest.mark.parametrize("path", PATHS)
def test_a_workspace_in_a_kernel_runs_on_every_path(path):
    a = RNG.standard_normal(40).astype(np.float32)
    out = run(path, workspace_inside_kernel(40, 16), A=a, B=np.zeros(40, np.float32))
    np.testing.assert_allclose(out["B"], (a.astype(np.float64) + 1.0) * 2.0, rtol=1e-6)


def sized_by_block(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32)):
        with T.Kernel(N, threads=32) as bx:
            W = T.alloc_global((bx + 1,), T.float32)
            W[0] = 1.0
            A[bx] = W[0]

    return main


def test_a_workspace_sized_by_a_block_index_is_refused():
    with pytest.raises(LoweringError, match="alloc_global W .* uses names of the kernel"):
        hoist_workspaces(sized_by_block(4))


def memory_read_between_kernels(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            A[0] = 1.0
        first = A[0]
        with T.Kernel(1, threads=32) as _:
            B[0] = first

    return main


def test_a_memory_read_between_kernels_is_refused_naming_it():
    with pytest.raises(LoweringError, match="value 'first' .*reads memory"):
        split_program(memory_read_between_kernels(4))


def test_split_program_finds_kernels_and_workspaces():
    assert len(split_program(three_kernels_no_workspace(4)).kernels) == 3
    single = workspace_inside_kernel(8, 8)
    program = split_program(single)  # hoisted workspace: the kernel takes it as a parameter
    assert [str(w.name) for w in program.workspaces] == ["W"]
    assert [str(p.name) for p in program.kernels[0].params] == ["A", "B", "W"]

    @T.prim_func
    def plain(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            A[0] = 1.0

    assert split_program(plain) is None


@pytest.mark.parametrize("target", ["hip:gfx942", "metal:apple7", "ascend"])
def test_backends_without_multi_kernel_programs_refuse_them(target):
    kind = target.split(":")[0]
    pytest.importorskip(f"tilelang_{kind}")
    with pytest.raises(CompileError, match=r"2 T.Kernel blocks and 1 T.alloc_global workspace; "
                                           rf"the {kind} backend builds programs of one T.Kernel"):
        tilelang.compile(reversed_through_workspace(16, 16), target=target)


def variable_cleared():
    @T.prim_func
    def main(A: T.Tensor((2,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            x = T.alloc_var(T.float32)
            n = T.alloc_var(T.int32)
            T.clear(x)
            T.fill(n, 3)
            for k in T.serial(4):
                x += k
            A[0] = x
            A[1] = n

    return main


@pytest.mark.parametrize("path", PATHS)
def test_clear_and_fill_assign_a_variable(path):
    # DeepSeek MLA's combine kernel: T.clear(lse_logsum_local) on a T.alloc_var
    out = run(path, variable_cleared(), A=np.full(2, np.nan, np.float32))
    np.testing.assert_array_equal(out["A"], [6.0, 3.0])


def gemm_into_workspace(M, N, K, bm=64, bn=64, bk=32):
    """Kernel 0: W = fp16(A @ B) tile by tile; kernel 1 reads W back through shared memory."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), D: T.Tensor((M, N), T.float32)):
        W = T.alloc_global((M, N), T.float16)
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, W[by * bm, bx * bn])
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            W_s = T.alloc_shared((bm, bn), T.float16)
            T.copy(W[by * bm, bx * bn], W_s)
            for i, j in T.Parallel(bm, bn):
                D[by * bm + i, bx * bn + j] = W_s[i, j] * 2.0

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_tensor_core_gemm_into_a_workspace_read_by_a_second_kernel(path):
    M, N, K = 64, 80, 40  # N and K ragged against the 64 x 64 x 32 tiles
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    out = run(path, gemm_into_workspace(M, N, K), A=a, B=b, D=np.zeros((M, N), np.float32))
    want = 2.0 * (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(out["D"], want, rtol=2e-3, atol=2e-2)
