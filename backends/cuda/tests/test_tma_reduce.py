"""float32 tile atomic adds from shared memory inside a warp-specialized sm_90a loop become TMA
reduce-adds issued by one consumer thread with tl.enable_tma_reduce (tilelang_cuda/hopper/
tma_reduce.py; opt-in until it has run on a GPU): where they are
taken, the order of the wait, the writes, the proxy fence and the issue in the generated CUDA,
UTMAREDG in the SASS, the cases that keep the vector reductions, and the kernel's sums on the cpu
oracle against numpy in float64 (the TMA path's numerics: tests/gpu/test_gpu_tma_reduce.py)."""

import re
import shutil

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import run as run_path


class Target:
    def __init__(self, arch):
        self.arch = arch


def split_k_partials(M, K, N, bm=64, bn=128, bk=64, blocks=3, stages=2, acc_dtype="float32"):
    """Block b walks K in ``bk`` chunks; chunk k's partial product A[b rows, k] B[:, k]^T goes
    through a shared tile and is added into D[k * bm : k * bm + bm, :] (FlashAttention
    backward's dQ pattern: every block adds into the same rows, one row block per iteration). D has
    ``M`` rows: the last chunks' rows run past its end when M is ragged."""
    @T.prim_func
    def main(A: T.Tensor((blocks * bm, K), "float16"), B: T.Tensor((bn, K), "float16"),
             D: T.Tensor((M, bn), acc_dtype)):
        with T.Kernel(blocks, threads=128) as b:
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bn, bk), "float16")
            part = T.alloc_fragment((bm, bn), "float32")
            part_s = T.alloc_shared((bm, bn), acc_dtype)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[b * bm, k * bk], a_s)
                T.copy(B[0, k * bk], b_s)
                T.gemm(a_s, b_s, part, transpose_B=True, clear_accum=True)
                T.copy(part, part_s)
                T.atomic_add(D[k * bm:(k + 1) * bm, :], part_s)

    return main


def expected(a, b, d, bm=64, bk=64, blocks=3):
    out = d.astype(np.float64)
    a, b = a.astype(np.float64), b.astype(np.float64)
    for blk in range(blocks):
        for k in range(-(-a.shape[1] // bk)):
            rows = min(bm, out.shape[0] - k * bm)
            if rows > 0:
                part = a[blk * bm:(blk + 1) * bm, k * bk:(k + 1) * bk] @ b[:, k * bk:(k + 1) * bk].T
                out[k * bm:k * bm + rows] += part[:rows]
    return out


def cuda_source(func, **options):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend, opts = CudaBackend(Target("sm_90a")), CudaOptions(**{"enable_tma_reduce": True, **options})
    source = backend.codegen(backend.lower(func, opts), opts)
    return source, source[source.find('extern "C" __global__'):source.find("#include <tvm/ffi/c_api.h>")]


def test_loop_atomic_becomes_tma_reduce_adds_after_fence_and_before_the_next_write():
    """One reduce-add per 128-byte strip (128 float32 columns: 4), issued by consumer 0 after
    every consumer's proxy fence and a barrier; consumer 0 waits for the previous ones' reads, and
    a barrier follows, before the tile is written again; after the loop it waits once more. The
    tile is laid out in swizzled strips (32 floats a row), and nothing adds by thread any more."""
    source, kernel = cuda_source(split_k_partials(300, 256, 128))
    notes = source[:source.find("#ifdef")]
    assert "atomic add part_s -> D by TMA reduce-adds (4 strips)" in notes
    assert "tl_red_add_v4" not in kernel and "atomicAdd" not in kernel
    issue = kernel.index("tl_tma_reduce_add<2>")
    assert kernel.count("tl_tma_reduce_add<2>") % 4 == 0
    offsets = [int(x) for x in re.findall(r"tl_tma_reduce_add<2>\(\(&\(\(\(float\*\)smem_ptr\)\[(\d+)\]\)\)",
                                          kernel)[:4]]
    assert [o - offsets[0] for o in offsets] == [0, 64 * 32, 2 * 64 * 32, 3 * 64 * 32]  # strips of 64 x 32
    fence = kernel.rindex("tl_fence_proxy_async", 0, issue)
    barrier = kernel.rindex("tl_named_barrier_sync", 0, issue)
    assert fence < barrier < issue
    # the tile's last write comes before the fence; the wait and a barrier before its first write
    first_write = kernel.index("((float*)smem_ptr)[")
    wait = kernel.rindex("tl_bulk_wait_read<0>", 0, first_write)
    assert kernel.index("tl_named_barrier_sync", wait) < first_write
    assert kernel.rindex("((float*)smem_ptr)[", 0, fence) > first_write
    assert "tl_bulk_commit" in kernel[issue:kernel.index("}", issue)]
    assert kernel.count("tl_bulk_wait_read<0>") >= 2  # in the loop, and after it


@pytest.mark.parametrize("options, kwargs, why", [
    ({"enable_tma_reduce": False}, {}, "opt-in: tl.enable_tma_reduce"),
    ({}, {"acc_dtype": "float16"}, "float16 tiles: reduce-adds of float32 only"),
    ({}, {"bn": 8}, "rows of 32 bytes: no 128-byte swizzle"),
    ({"disable_warp_specialized": True}, {}, "no producer warpgroup: the cp.async pipeline")])
def test_other_atomics_keep_the_thread_reductions(options, kwargs, why):
    _, kernel = cuda_source(split_k_partials(300, 256, **{"N": 128, **kwargs}), **options)
    assert "tl_tma_reduce_add" not in kernel and "tl_bulk_wait_read" not in kernel, why


@pytest.mark.parametrize("M, K", [(300, 256), (64, 64), (129, 200)])
def test_the_kernel_adds_every_partial_on_the_cpu_oracle(M, K):
    rng = np.random.default_rng(M + K)
    a = rng.standard_normal((3 * 64, K)).astype(np.float16)
    b = rng.standard_normal((128, K)).astype(np.float16)
    d = rng.standard_normal((M, 128)).astype(np.float32)
    want = expected(a, b, d)
    out = run_path("cpu", split_k_partials(M, K, 128), A=a, B=b, D=d)
    np.testing.assert_allclose(out["D"], want, rtol=1e-4, atol=1e-3)


def test_sass_has_the_tma_reduce(tmp_path):
    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    if shutil.which("nvcc") is None or compiler.find_cuobjdump() is None:
        pytest.skip("nvcc/cuobjdump missing")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(enable_tma_reduce=True)
    mod = backend.lower(split_k_partials(300, 256, 128), options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    sass = compiler.sass(tmp_path / "kernel.cubin")
    assert "UTMAREDG" in sass and "REDG" not in sass.replace("UTMAREDG", "")


def test_a_tile_filled_before_the_loop_is_added_every_iteration_without_a_wait_inside():
    """The tile is not written in the loop, so nothing there waits for the reduce-adds' reads; the
    wait after the loop remains (it used to stop the lowering with a StopIteration)."""
    @T.prim_func
    def main(A: T.Tensor((64, 256), "float16"), S: T.Tensor((64, 128), "float32"), D: T.Tensor((256, 128), "float32")):
        with T.Kernel(2, threads=128) as b:
            a_s = T.alloc_shared((64, 64), "float16")
            t_s = T.alloc_shared((64, 128), "float32")
            T.copy(S, t_s)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[0, k * 64], a_s)
                T.atomic_add(D[k * 64:(k + 1) * 64, :], t_s)

    source, kernel = cuda_source(main)
    loop = kernel[kernel.index("for (int k = 0;"):]
    loop_body = loop[:loop.index("tl_bulk_commit")]
    assert "tl_tma_reduce_add<2>" in loop_body and "tl_bulk_wait_read" not in loop_body
    assert "tl_bulk_wait_read<0>" in loop[loop.index("tl_bulk_commit"):]
