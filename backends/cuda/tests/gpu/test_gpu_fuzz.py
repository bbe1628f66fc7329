"""On the H200: the differential fuzz families (tilelang_core/testing/fuzz_kernels.py) compiled for
the GPU present (sm_90a: wgmma, TMA pipelines where chosen) against numpy in float64, with GPU-sized
tiles and thread counts; generated, seeded cases (skipped without a GPU). The same families run on
cpu and every SIMT interpreter in tests/fuzz/test_differential.py."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core as tl  # noqa: E402
from tilelang_core.testing import fuzz_kernels as K  # noqa: E402

GPU = settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings() if settings.default.max_examples >= 300 else GPU


def check(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(case.func, target="cuda")
    args = [torch.from_numpy(case.inputs[p.name]).cuda() for p in kernel.params]
    kernel(*args)
    for p, arg in zip(kernel.params, args):
        if p.name in case.expected:
            np.testing.assert_allclose(arg.cpu().numpy(), case.expected[p.name], rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{case!r} on the GPU: output {p.name}")


SIZE = st.sampled_from([1, 3, 17, 64, 100, 128, 200, 256])
BLOCK = st.sampled_from([1, 4, 16, 32, 64, 128])
THREADS = st.sampled_from([64, 128, 256])


@FUZZ
@given(M=SIZE, N=SIZE, bM=BLOCK, bN=BLOCK, threads=THREADS,
       staging=st.sampled_from(["shared", "fragment", "shared_fragment", "fragment_shared"]), seed=st.integers(0, 99))
def test_copies(M, N, bM, bN, threads, staging, seed):
    check(K.copy_case(np.random.default_rng(seed), M, N, bM, bN, threads, staging))


@FUZZ
@given(M=SIZE, N=SIZE, bM=BLOCK, bN=BLOCK, threads=THREADS, seed=st.integers(0, 99))
def test_broadcast_elementwise(M, N, bM, bN, threads, seed):
    check(K.broadcast_case(np.random.default_rng(seed), M, N, bM, bN, threads))


@FUZZ
@given(rows=SIZE, cols=st.sampled_from([1, 3, 64, 128]), block=BLOCK, threads=THREADS,
       kind=st.sampled_from(sorted(K._REDUCE)), dim=st.sampled_from([0, 1]),
       source=st.sampled_from(["fragment", "shared"]), seed=st.integers(0, 99))
def test_reductions(rows, cols, block, threads, kind, dim, source, seed):
    check(K.reduce_case(np.random.default_rng(seed), rows, cols, block, threads, kind, dim, source))


@FUZZ
@given(M=SIZE, N=st.sampled_from([1, 2, 64, 128, 256]), bM=st.sampled_from([1, 8, 16, 64]), threads=THREADS,
       seed=st.integers(0, 99))
def test_row_softmax(M, N, bM, threads, seed):
    check(K.softmax_case(np.random.default_rng(seed), M, N, bM, threads))


@FUZZ
@given(M=st.sampled_from([64, 100, 256, 333]), N=st.sampled_from([64, 96, 256, 300]),
       K_=st.sampled_from([32, 64, 200, 512]), bM=st.sampled_from([64, 128]), bN=st.sampled_from([64, 128]),
       bK=st.sampled_from([32, 64]), trans_a=st.booleans(), trans_b=st.booleans(),
       stages=st.sampled_from([0, 2, 3]), threads=st.sampled_from([128, 256]), seed=st.integers(0, 99))
def test_gemms(M, N, K_, bM, bN, bK, trans_a, trans_b, stages, threads, seed):
    check(K.gemm_case(np.random.default_rng(seed), M, N, K_, bM, bN, bK, trans_a, trans_b, stages, threads))


@FUZZ
@given(M=st.sampled_from([64, 100, 256]), N=st.sampled_from([64, 130, 256]), K_=st.sampled_from([256, 500, 1024]),
       splits=st.sampled_from([1, 2, 4]), seed=st.integers(0, 99))
def test_split_k_atomics(M, N, K_, splits, seed):
    check(K.splitk_case(np.random.default_rng(seed), M, N, K_, 64, 64, 32, splits, 128))


@FUZZ
@given(M=SIZE, N=SIZE, bM=BLOCK, bN=BLOCK, threads=THREADS, seed=st.integers(0, 99))
def test_fragments_out_of_loop_order(M, N, bM, bN, threads, seed):
    check(K.transpose_case(np.random.default_rng(seed), M, N, bM, bN, threads))


@FUZZ
@given(M=SIZE, N=st.sampled_from([1, 5, 64, 128]), bM=st.sampled_from([1, 4, 16, 64]), threads=THREADS,
       dim=st.sampled_from([0, 1]), seed=st.integers(0, 99))
def test_statistic_next_to_shared_tiles(M, N, bM, threads, dim, seed):
    check(K.centered_case(np.random.default_rng(seed), M, N, bM, threads, dim))
