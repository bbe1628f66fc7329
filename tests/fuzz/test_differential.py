"""Differential fuzz: generated kernels of every family in tilelang_core/testing/fuzz_kernels.py
run on the cpu backend and on each SIMT interpreter (cuda sm_80, hip gfx942 / gfx1100, metal
apple7) and are compared with numpy in float64. A lowering that maps an element to a thread that does not hold it, drops a
binding, or reads the wrong row shows up as a mismatch on the path that does it.

Bounded for CI (a fixed seed, a few examples per family);
``pytest tests/fuzz --hypothesis-profile=nightly`` runs many more, with random seeds. The same
families run on a GPU in backends/cuda/tests/gpu/test_gpu_fuzz.py.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from tilelang_core.testing.oracle import PATHS, run

from tilelang_core.testing import fuzz_kernels as K

# CI: a fixed seed and a few examples per family; the nightly profile (root conftest.py) many more
CI = settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings() if settings.default.max_examples >= 300 else CI

PATH = st.sampled_from(PATHS)
THREADS = st.sampled_from([32, 64, 128])
SIZE = st.sampled_from([1, 2, 3, 5, 8, 16, 17, 31, 32, 48, 64])
BLOCK = st.sampled_from([1, 2, 4, 8, 16, 32])


def check(path, case):
    out = run(path, case.func, **case.inputs)
    for name, want in case.expected.items():
        np.testing.assert_allclose(out[name], want, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case!r} on {path}: output {name}")


@FUZZ
@given(path=PATH, M=SIZE, N=SIZE, bM=BLOCK, bN=BLOCK, threads=THREADS,
       staging=st.sampled_from(["shared", "fragment", "shared_fragment", "fragment_shared"]), seed=st.integers(0, 99))
def test_copies(path, M, N, bM, bN, threads, staging, seed):
    check(path, K.copy_case(np.random.default_rng(seed), M, N, bM, bN, threads, staging))


@FUZZ
@given(path=PATH, M=SIZE, N=SIZE, bM=BLOCK, bN=BLOCK, threads=THREADS, seed=st.integers(0, 99))
def test_broadcast_elementwise(path, M, N, bM, bN, threads, seed):
    check(path, K.broadcast_case(np.random.default_rng(seed), M, N, bM, bN, threads))


@FUZZ
@given(path=PATH, rows=SIZE, cols=SIZE, block=BLOCK, threads=THREADS,
       kind=st.sampled_from(sorted(K._REDUCE)), dim=st.sampled_from([0, 1]),
       source=st.sampled_from(["fragment", "shared"]), seed=st.integers(0, 99))
def test_reductions(path, rows, cols, block, threads, kind, dim, source, seed):
    check(path, K.reduce_case(np.random.default_rng(seed), rows, cols, block, threads, kind, dim, source))


@FUZZ
@given(path=PATH, M=SIZE, N=SIZE, bM=BLOCK, threads=THREADS, seed=st.integers(0, 99))
def test_row_softmax(path, M, N, bM, threads, seed):
    check(path, K.softmax_case(np.random.default_rng(seed), M, N, bM, threads))


GEMM_SIZE = st.sampled_from([1, 7, 16, 33, 64])
# tiles every warp count here can split into 16x16 warp tiles (smaller ones are refused by name:
# "gemm accumulator 16x16 cannot be split over 2 warps")
GEMM_TILE = st.sampled_from([32, 64])


@FUZZ
@given(path=PATH, M=GEMM_SIZE, N=GEMM_SIZE, K_=GEMM_SIZE, bM=GEMM_TILE, bN=GEMM_TILE, bK=st.sampled_from([16, 32]),
       trans_a=st.booleans(), trans_b=st.booleans(), stages=st.sampled_from([0, 2]),
       threads=st.sampled_from([64, 128]), seed=st.integers(0, 99))
def test_gemms(path, M, N, K_, bM, bN, bK, trans_a, trans_b, stages, threads, seed):
    check(path, K.gemm_case(np.random.default_rng(seed), M, N, K_, bM, bN, bK, trans_a, trans_b, stages, threads))


@FUZZ
@given(path=PATH, M=GEMM_SIZE, N=GEMM_SIZE, K_=st.sampled_from([16, 40, 96]), splits=st.sampled_from([1, 2, 3]),
       seed=st.integers(0, 99))
def test_split_k_atomics(path, M, N, K_, splits, seed):
    check(path, K.splitk_case(np.random.default_rng(seed), M, N, K_, 32, 32, 16, splits, 128))


@FUZZ
@given(path=PATH, M=SIZE, N=SIZE, bM=BLOCK, bN=BLOCK, threads=THREADS, seed=st.integers(0, 99))
def test_fragments_out_of_loop_order(path, M, N, bM, bN, threads, seed):
    check(path, K.transpose_case(np.random.default_rng(seed), M, N, bM, bN, threads))


@FUZZ
@given(path=PATH, M=SIZE, N=SIZE, bM=BLOCK, threads=THREADS, dim=st.sampled_from([0, 1]), seed=st.integers(0, 99))
def test_statistic_next_to_shared_tiles(path, M, N, bM, threads, dim, seed):
    check(path, K.centered_case(np.random.default_rng(seed), M, N, bM, threads, dim))
