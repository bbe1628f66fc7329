"""The cpu backend's passes, checked on the IR they produce."""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

import tilelang_core.language as T
from tilelang_cpu.options import CpuOptions
from tilelang_cpu.pipeline import CpuBackend, has_global_atomics
from tilelang_cpu.transform import blocks_to_loops, legalize_for_cpu, threads_to_loops


def loops_of(func_or_stmt):
    body = func_or_stmt.body if isinstance(func_or_stmt, tirx.PrimFunc) else func_or_stmt
    loops = []
    tvm_ffi.structural_walk(body, [(tirx.For, loops.append)], order="pre")
    return loops


def copy_tiles(M, N):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 32), threads=128) as (bx, by):
            s = T.alloc_shared((32, 64), "float32")
            T.copy(A[by * 32, bx * 64], s)
            for i, j in T.Parallel(32, 64):
                s[i, j] = s[i, j] * 2.0
            T.copy(s, B[by * 32, bx * 64])

    return k


def lowered(func, **options):
    mod = CpuBackend(None).lower(func, CpuOptions(**options))
    return next(iter(mod.functions.values()))


def test_grid_becomes_one_fused_parallel_loop_over_all_blocks():
    func = blocks_to_loops(threads_to_loops(copy_tiles(96, 192)))
    outer = loops_of(func)[0]
    assert outer.kind == tirx.ForKind.PARALLEL and int(outer.extent) == 3 * 3
    script = func.script(show_meta=False)
    assert "blockIdx" not in script and "threadIdx" not in script
    assert "block % 3" in script and "block // 3" in script  # bx and by recovered from the fused index


def test_serial_block_loop_on_request():
    func = blocks_to_loops(threads_to_loops(copy_tiles(96, 192)), parallel=False)
    assert loops_of(func)[0].kind == tirx.ForKind.SERIAL


def test_exact_tiles_have_no_bounds_checks_and_ragged_tiles_do():
    exact = lowered(copy_tiles(96, 192)).script(show_meta=False)
    ragged = lowered(copy_tiles(100, 190)).script(show_meta=False)
    assert "if_then_else" not in exact and "if " not in exact
    assert "if_then_else" in ragged and "< 100" in ragged and "< 190" in ragged


def test_parallel_loops_become_serial_and_buffers_plain_arrays():
    func = lowered(copy_tiles(96, 192))
    kinds = [loop.kind for loop in loops_of(func)]
    assert kinds.count(tirx.ForKind.PARALLEL) == 1  # only the block loop
    script = func.script(show_meta=False)
    assert "shared" not in script and "tl." not in script


def test_gemm_inner_loop_is_vectorized_only_when_asked():
    @T.prim_func
    def mm(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32"),
           C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((32, 32), "float32")
            b = T.alloc_shared((32, 32), "float32")
            c = T.alloc_fragment((32, 32), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)

    vec = [loop.kind for loop in loops_of(lowered(mm, vectorize=True))]
    novec = [loop.kind for loop in loops_of(lowered(mm, vectorize=False))]
    assert vec.count(tirx.ForKind.VECTORIZED) == 1
    assert tirx.ForKind.VECTORIZED not in novec


def test_pipelined_loop_is_a_plain_serial_loop():
    @T.prim_func
    def k(A: T.Tensor((128,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as _:
            s = T.alloc_shared((32,), "float32")
            acc = T.alloc_fragment((32,), "float32")
            T.clear(acc)
            for step in T.Pipelined(4, num_stages=3):
                T.copy(A[step * 32], s)
                for i in T.Parallel(32):
                    acc[i] = acc[i] + s[i]
            T.copy(acc, B)

    func = legalize_for_cpu(threads_to_loops(k))
    pipelined = [loop for loop in loops_of(func) if int(loop.extent) == 4]
    assert pipelined and pipelined[0].kind == tirx.ForKind.SERIAL
    assert not pipelined[0].annotations or "tl.num_stages" not in pipelined[0].annotations


def test_only_global_atomics_serialize_blocks():
    @T.prim_func
    def glob(Y: T.Tensor((4,), "float32")):
        with T.Kernel(8, threads=32) as _:
            T.atomic_add(Y[0], 1.0)

    @T.prim_func
    def shared(Y: T.Tensor((4,), "float32")):
        with T.Kernel(8, threads=32) as bx:
            s = T.alloc_shared((4,), "float32")
            T.clear(s)
            T.atomic_add(s[0], 1.0)
            T.copy(s, Y) if False else None

    assert has_global_atomics(glob) and not has_global_atomics(shared)
    assert loops_of(lowered(glob))[0].kind == tirx.ForKind.SERIAL
    assert loops_of(lowered(shared))[0].kind == tirx.ForKind.PARALLEL
