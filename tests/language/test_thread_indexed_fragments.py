"""A fragment element named by the thread's own index outside T.Parallel (TileLang's rule,
simt/transform/thread_indexed_fragments.py): taken when every thread names only elements it holds
(checked over all threads and loop iterations), refused with the reason otherwise. The pattern of
hand-written register code: an accumulator laid out like mma.sync's C fragment and addressed by
lane. Numerics on every reference path against numpy."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run


def mma_c_layout(i, j):
    """(thread, register) of element (i, j) of a 16 x 16 tile per mma.sync's C fragment, two n8
    halves: lane (i % 8) * 4 + (j % 8) // 2, register (i // 8) * 2 + j % 2 + 4 * (j // 8)."""
    return (i % 8) * 4 + (j % 8) // 2, (i // 8) * 2 + j % 2 + 4 * (j // 8)


def lane_addressed(shift=0, bind_row=False, warps=1):
    """C[r, c] = 2 * C[r, c] + 16 * r + c (16 * warps x 16, warp w owns rows 16w..), each lane
    updating its 8 accumulators by the PTX ISA's C fragment order; ``shift``: lane l names lane
    l + shift's. (The added position tells a register swapped for another of the thread's.)"""
    rows = 16 * warps

    @T.prim_func
    def main(A: T.Tensor((rows, 16), "float32"), B: T.Tensor((rows, 16), "float32")):
        with T.Kernel(1, threads=32 * warps):
            C = T.alloc_fragment((rows, 16), "float32")
            T.annotate_layout({C: T.Fragment((rows, 16), forward_fn=lambda i, j: (
                i // 16 * 32 + mma_c_layout(i % 16, j)[0], mma_c_layout(i % 16, j)[1]))})
            T.copy(A, C)
            tx = T.get_thread_binding()
            lane = (tx + shift) % 32
            for e in T.unroll(8):
                if bind_row:
                    row = tx // 32 * 16 + 8 * (e % 4 // 2) + lane // 4
                    col = 8 * (e // 4) + 2 * (lane % 4) + e % 2
                    C[row, col] = C[row, col] * 2.0 + T.cast(row * 16 + col, "float32")
                else:
                    C[tx // 32 * 16 + 8 * (e % 4 // 2) + lane // 4, 8 * (e // 4) + 2 * (lane % 4) + e % 2] = \
                        C[tx // 32 * 16 + 8 * (e % 4 // 2) + lane // 4, 8 * (e // 4) + 2 * (lane % 4) + e % 2] \
                        * 2.0 + T.cast((tx // 32 * 16 + 8 * (e % 4 // 2) + lane // 4) * 16
                                       + 8 * (e // 4) + 2 * (lane % 4) + e % 2, "float32")
            T.copy(C, B)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bind_row,warps", [(False, 1), (True, 1), (True, 4)])
def test_each_lane_updates_the_accumulators_it_holds(path, bind_row, warps):
    a = np.random.default_rng(warps).standard_normal((16 * warps, 16)).astype(np.float32)
    out = run(path, lane_addressed(bind_row=bind_row, warps=warps), A=a, B=np.zeros_like(a))
    position = np.arange(16 * warps)[:, None] * 16 + np.arange(16)[None, :]
    np.testing.assert_allclose(out["B"], a.astype(np.float64) * 2 + position, rtol=1e-6)


@pytest.mark.parametrize("path", [p for p in PATHS if p != "cpu"])
@pytest.mark.parametrize("shift", [1, 4, 31])
def test_a_lane_naming_another_lanes_element_is_refused(path, shift):
    with pytest.raises(LoweringError, match=r"outside T.Parallel.*C: thread \d+ names element \[\d+, \d+\], which "
                                            r"thread \d+ holds"):
        lower(path, lane_addressed(shift=shift))


def replicated(store: bool):
    """A 4-element fragment every 32-thread group holds a copy of (threads t and t + 4k hold element
    t % 4); each thread reads, or writes, element tx % 4."""

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_fragment((4,), "float32")
            T.annotate_layout({S: T.Fragment((4,), forward_fn=lambda i, rep: (rep * 4 + i, 0), replicate=8)})
            T.copy(A, S)
            tx = T.get_thread_binding()
            if store:
                S[tx % 4] = S[tx % 4] + 1.0
            o = T.alloc_local((1,), "float32")
            o[0] = S[tx % 4]
            B[tx] = o[0]

    return main


@pytest.mark.parametrize("path", PATHS)
def test_every_copy_of_a_replicated_element_reads_alike(path):
    a = np.arange(4, dtype=np.float32) + 0.5
    out = run(path, replicated(store=False), A=a, B=np.zeros(32, np.float32))
    np.testing.assert_array_equal(out["B"], np.tile(a, 8))


@pytest.mark.parametrize("path", [p for p in PATHS if p != "cpu"])
def test_a_store_to_one_copy_of_a_replicated_element_is_refused(path):
    with pytest.raises(LoweringError, match="replicated fragment outside T.Parallel would change one copy"):
        lower(path, replicated(store=True))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_lane_addressed_accumulators_compile_with_nvcc(arch, tmp_path):
    """The registers the lanes name are one local array in the CUDA source (no spill to local
    memory: each index is a constant after unrolling), which nvcc compiles."""
    import re
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc (CUDA toolkit) is not installed")
    pytest.importorskip("tilelang_cuda")
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        def __init__(self, arch):
            self.arch = arch

    backend, options = CudaBackend(Target(arch)), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(lane_addressed(bind_row=True, warps=4), options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    if compiler.find_cuobjdump() is not None:
        assert not re.search(r"\b(LDL|STL)\b", compiler.sass(cubin)), "the accumulators spilled to local memory"


def whole_then_thread_indexed(via_var=False):
    """Nothing spreads F over the threads (a T.clear and a T.copy): every thread holds it whole,
    and F[tx] = ... would write one element of each thread's own copy. ``via_var``: the index held
    in a T.alloc_var set from the thread index."""

    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            F = T.alloc_fragment((32,), "float32")
            T.clear(F)
            tx = T.get_thread_binding()
            if via_var:
                idx = T.alloc_var("int32")
                idx = tx
                F[idx] = A[idx] * 2.0
            else:
                F[tx] = A[tx] * 2.0
            T.copy(F, B)

    return main


@pytest.mark.parametrize("path", [p for p in PATHS if p != "cpu"])
@pytest.mark.parametrize("via_var", [False, True])
def test_a_thread_indexed_store_to_a_whole_fragment_is_refused(path, via_var):
    """It was silently wrong on every GPU path (B all zeros but B[0]: thread 0's copy)."""
    with pytest.raises(LoweringError, match=r"store to fragment 'F' at \[.*\] outside T.Parallel depends on the thread"):
        lower(path, whole_then_thread_indexed(via_var))


def uniform_counter():
    """A T.alloc_var counter every thread steps alike indexes a whole fragment: not per-thread,
    so each thread's copy gets the same elements (not refused)."""

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            F = T.alloc_fragment((4,), "float32")
            T.clear(F)
            k = T.alloc_var("int32")
            k = 0
            for i in T.serial(4):
                F[k] = A[i] + 1.0
                k = k + 1
            T.copy(F, B)

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_uniform_counter_indexes_a_whole_fragment(path):
    a = np.arange(4, dtype=np.float32)
    out = run(path, uniform_counter(), A=a, B=np.zeros(4, np.float32))
    np.testing.assert_array_equal(out["B"], a + 1)
