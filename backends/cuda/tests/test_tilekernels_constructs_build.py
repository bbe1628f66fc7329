"""The constructs DeepSeek's TileKernels use that TileLang-X added (T.thread_return, T.Ref macro
parameters, packed bfloat16x2 math, T.copysign, T.Parallel loop_layout, per-thread T.alloc_local
copies) and a shared tile allocated but never used compile with nvcc for sm_80
and sm_90a, and the thread_return kernel runs right on the SIMT interpreter at the sm_90a
lowering (the reference paths test the rest)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "language"))

from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402
from test_macro_references import kernel as reference_kernel  # noqa: E402
from test_parallel_loop_layout import transposed_copy  # noqa: E402
from test_per_thread_buffers import row_kernel  # noqa: E402
from test_thread_return import expected, guarded  # noqa: E402
from lowered import lower  # noqa: E402
import tilelang_core.language as T  # noqa: E402
from tilelang_cuda.interpreter import run_kernel  # noqa: E402


def bf16_absmax(n=64):
    """amax of |x| over bfloat16 pairs, the TileKernels quantization pattern."""
    @T.prim_func
    def main(X: T.Tensor((n, 8), T.bfloat16), O: T.Tensor((n, 2), T.bfloat16), S: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=n):
            t = T.get_thread_binding()
            amax = T.alloc_var(T.bfloat16x2)
            amax = T.abs2(T.bfloat16x2(X[t, 0], X[t, 1]))
            for j in T.unroll(1, 4):
                amax = T.max2(T.abs2(T.bfloat16x2(X[t, 2 * j], X[t, 2 * j + 1])), amax)
            O[t, 0] = T.extract_lane(amax, 0)
            O[t, 1] = T.extract_lane(amax, 1)
            S[t] = T.copysign(T.cast(O[t, 0], T.float32), T.cast(X[t, 0], T.float32))

    return main


def unused_staging_tile(rows=64, cols=64):
    """Row absmax with the output staging tile allocated and never used, the only shared tile of
    the kernel (TileKernels' per_token_cast with sf_only=True: TVM's printer refused the 0-byte
    dynamic shared array it got)."""
    @T.prim_func
    def main(X: T.Tensor((rows, cols), T.float32), S: T.Tensor((rows,), T.float32)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((rows, cols), T.float32)
            amax = T.alloc_fragment((rows,), T.float32)
            staged = T.alloc_shared((rows, cols), T.float16)  # noqa: F841 - never used
            T.copy(X, x)
            T.reduce_absmax(x, amax, dim=1)
            T.copy(amax, S)

    return main


KERNELS = {"thread_return": lambda: guarded(13), "references": reference_kernel,
           "bf16_absmax": bf16_absmax, "loop_layout": transposed_copy,
           "per_thread_rows": lambda: row_kernel(128, 8, 1000)}


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_compiles_with_nvcc(name, arch, tmp_path):
    compiles(KERNELS[name](), arch, tmp_path)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_kernel_whose_only_shared_tile_is_unused_has_no_shared_array(arch, tmp_path):
    source = compiles(unused_staging_tile(), arch, tmp_path)
    assert "__shared__" not in source[source.find('extern "C" __global__'):]


def test_thread_return_at_the_sm90a_lowering():
    a = np.random.default_rng(9).integers(0, 8, 13).astype(np.int32)
    b = np.zeros(13, np.int32)
    run_kernel(lower(guarded(13), arch="sm_90a"), {"A": a, "B": b})
    np.testing.assert_array_equal(b, expected(a))
