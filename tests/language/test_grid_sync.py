"""T.sync_grid(): a barrier over every thread of every block (language/launch_dependency.py). The
cuda backend prints cooperative groups' grid sync and launches the kernel cooperatively (CUDA
source compiled by nvcc, the launcher's attribute checked); at the top of a T.Parallel body it
splits the loop (test_parallel_barriers.py); where it would hang (under a branch or in a loop
bounded by the thread or block index, nested in a T.Parallel body) it is refused with the line; cpu, hip, metal and the interpreters, which cannot run it, refuse it by name.
backends/cuda/tests/gpu/test_gpu_language_rules.py runs it on the H200."""

import pytest

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import TileLangError


def reverse_across_blocks(N=1024, block=64):
    """Phase 1: each block writes its part of A; phase 2: each block reads another block's part."""
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                A[bx * block + i] = A[bx * block + i] * 2.0
            T.sync_grid()
            for i in T.Parallel(block):
                B[bx * block + i] = A[N - 1 - bx * block - i]

    return k


def misplaced(where):
    @T.prim_func
    def k(A: T.Tensor((256,), "float32")):
        with T.Kernel(4, threads=64) as bx:
            tx = T.get_thread_binding()
            if where == "parallel":
                for i in T.Parallel(64):
                    A[bx * 64 + i] = 1.0
                    if i < 32:
                        T.sync_grid()
            elif where == "thread":
                if tx < 32:
                    T.sync_grid()
            elif where == "block":
                if bx == 0:
                    T.sync_grid()
            else:
                for _ in T.serial(bx + 1):
                    T.sync_grid()

    return k


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_prints_a_grid_sync_and_launches_cooperatively(arch, tmp_path):
    from test_printer_limits import _cuda_source
    from tilelang_cuda.codegen import split_source
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    device = _cuda_source(reverse_across_blocks(), arch, tmp_path)
    assert "tl_sync_grid();" in device
    backend, options = CudaBackend(type("Target", (), {"arch": arch})()), CudaOptions(device_compiler="nvcc")
    parts = split_source(backend.codegen(backend.lower(reverse_across_blocks(), options), options))
    assert "cooperative_groups::this_grid().sync();" in parts.device
    assert "ex_attrs[config->numAttrs + 0].id = cudaLaunchAttributeCooperative;" in parts.host


@pytest.mark.parametrize("where,why", [("parallel", "must stand at the top level of the loop's body"),
                                       ("thread", "under a condition on the thread or block index"),
                                       ("block", "under a condition on the thread or block index"),
                                       ("loop", "inside a loop whose bounds")])
def test_where_it_would_hang_it_is_refused(where, why):
    pytest.importorskip("tilelang_cuda")
    with pytest.raises(TileLangError, match=why):
        tl.compile(misplaced(where), target="cuda:sm_90a")


@pytest.mark.parametrize("target,why", [("cpu", "runs the blocks one after another"),
                                        ("hip", "no barrier over the whole grid"),
                                        ("metal", "no barrier over the whole grid")])
def test_targets_without_a_grid_barrier_refuse_it(target, why):
    pytest.importorskip(f"tilelang_{target}")
    with pytest.raises(TileLangError, match=why):
        tl.compile(reverse_across_blocks(), target=target)


def test_the_interpreter_says_it_cannot_run_it():
    from tilelang_core.testing.oracle import run

    with pytest.raises(NotImplementedError, match="T.sync_grid"):
        import numpy as np
        run("cuda:sm_80", reverse_across_blocks(), A=np.zeros(1024, np.float32), B=np.zeros(1024, np.float32))
