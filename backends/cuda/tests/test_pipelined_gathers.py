"""Row gathers into shared memory in a T.Pipelined body (TileLang's sparse MLA and NSA load K/V
rows through an index tensor) are pipeline producers: a slot per stage, issued num_stages - 1
iterations ahead as 16-byte cp.async copies predicated on the row's bounds
(simt/transform/gathers.py). The SIMT interpreter, with each async copy landing only at the wait
that covers it and shared-memory races checked, against numpy in float64: indices out of the
tensor (zero rows), a gather after other statements of the body, stage counts, the source, and
the forms left as plain loops."""

import numpy as np
import pytest

import tilelang_core.language as T
from lowered import lower
from tilelang_cuda.interpreter import run_kernel

pytest.importorskip("tvm")


def gather_sum(rows, width, block, n_idx, stages=2, threads=128, dtype="float16", offset=0, mask_first=True):
    """O[it] = sum over columns of the rows KV[Idx[it * block + i], offset:offset + width] * mask,
    the gather after a mask loop (sparse MLA's order; ``mask_first=False``: the gather leads the
    body), a T.reduce over the gathered tile."""
    n_iter = n_idx // block

    @T.prim_func
    def main(KV: T.Tensor((rows, width + offset), dtype), Idx: T.Tensor((n_idx,), "int32"),
             O: T.Tensor((n_iter, block), "float32")):
        with T.Kernel(1, threads=threads):
            m = T.alloc_fragment((block,), "bool")
            S = T.alloc_shared((block, width), dtype)
            acc = T.alloc_fragment((block, width), "float32")
            row = T.alloc_fragment((block,), "float32")
            for it in T.Pipelined(n_iter, num_stages=stages):
                if mask_first:
                    for i in T.Parallel(block):
                        m[i] = Idx[it * block + i] >= 0
                for i, j in T.Parallel(block, width):
                    S[i, j] = KV[Idx[it * block + i], offset + j]
                if not mask_first:
                    for i in T.Parallel(block):
                        m[i] = Idx[it * block + i] >= 0
                for i, j in T.Parallel(block, width):
                    acc[i, j] = T.if_then_else(m[i], T.Cast("float32", S[i, j]), T.float32(0))
                T.reduce_sum(acc, row, dim=1)
                T.copy(row, O[it, 0])

    return main


def reference(kv, idx, block, width, offset):
    rows = np.where((idx >= 0)[:, None] & (idx < kv.shape[0])[:, None],
                    kv[np.clip(idx, 0, kv.shape[0] - 1), offset:offset + width].astype(np.float64), 0.0)
    return rows.sum(axis=1).reshape(-1, block)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("rows,width,block,n_idx,offset,mask_first", [
    (64, 64, 16, 64, 0, True),
    (100, 128, 32, 128, 0, True),
    (50, 64, 16, 48, 64, True),      # the rope part of a row (K_tail: KV[..., D + j])
    (64, 64, 16, 64, 0, False),      # the gather leads the body
])
def test_gathered_rows_match_numpy(stages, rows, width, block, n_idx, offset, mask_first):
    rng = np.random.default_rng(rows + width + stages)
    kv = rng.standard_normal((rows, width + offset)).astype(np.float16)
    idx = rng.integers(-3, rows + 3, n_idx).astype(np.int32)  # some rows outside the tensor: zeros
    out = np.full((n_idx // block, block), np.nan, np.float32)
    func = lower(gather_sum(rows, width, block, n_idx, stages, offset=offset, mask_first=mask_first))
    run_kernel(func, {"KV": kv, "Idx": idx, "O": out}, cp_async_lands_at_wait=True)
    np.testing.assert_allclose(out, reference(kv, idx, block, width, offset), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("mask_first", [True, False])
def test_the_gather_is_issued_ahead_as_async_copies(mask_first):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        arch = "sm_80"

    backend, options = CudaBackend(Target()), CudaOptions()
    source = backend.codegen(backend.lower(gather_sum(64, 64, 16, 64, mask_first=mask_first), options), options)
    assert "tl_cp_async_16(" in source and "tl_cp_async_commit" in source
    # the tile has a slot per stage: no element-wise store into it is left
    assert "KV_ptr[" not in source.split("tl_cp_async_16(")[0].split("__global__")[-1]


@pytest.mark.parametrize("path", ["cpu", "hip:gfx942"])
def test_backends_without_async_copies_keep_the_loop(path):
    from tilelang_core.testing.oracle import run

    rng = np.random.default_rng(1)
    kv = rng.standard_normal((64, 64)).astype(np.float16)
    idx = rng.integers(-2, 66, 64).astype(np.int32)
    out = run(path, gather_sum(64, 64, 16, 64), KV=kv, Idx=idx, O=np.full((4, 16), np.nan, np.float32))
    np.testing.assert_allclose(out["O"], reference(kv, idx, 16, 64, 0), rtol=1e-3, atol=1e-2)
