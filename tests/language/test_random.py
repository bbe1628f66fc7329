"""TileLang's random numbers (``T.rng_init``, ``T.rng_rand``, ``T.rng_rand_float``, language/
random.py): cuRAND on the cuda backend (the CUDA source draws once per element, in order, never
as a vector, and nvcc builds it for every generator where cuRAND's headers are installed); the
other backends and misuse are refused by name. The numbers themselves are checked on the GPU
(backends/cuda/tests/gpu/test_gpu_random.py)."""

import re
import warnings

import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LoweringError, NoToolchainError
from tilelang_core.language.random import GENERATORS


def draws(M=256, per_thread=8, threads=32, generator="curandStatePhilox4_32_10_t", seed=42):
    """Each thread draws per_thread uint32, uniform floats, uniform doubles and normals."""
    @T.prim_func
    def kernel(A: T.Tensor((M,), "uint32"), B: T.Tensor((M,), "float32"), C: T.Tensor((M,), "float64"),
               D: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, threads * per_thread), threads=threads) as bx:
            T.rng_init(seed, generator=generator)
            for i, j in T.Parallel(threads, per_thread):
                idx = (bx * threads + i) * per_thread + j
                if idx < M:
                    A[idx] = T.rng_rand()
                    B[idx] = T.rng_rand_float()
                    C[idx] = T.rng_rand_float(bit=64)
                    D[idx] = T.rng_rand_float(dist="normal")

    return kernel


def _cuda(func, arch="sm_90a"):
    pytest.importorskip("tilelang_cuda")
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend, options = CudaBackend(type("Target", (), {"arch": arch})()), CudaOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(func, options), options)
    return source, source[source.find('extern "C" __global__'):].split("#include")[0]


def test_cuda_draws_once_per_element_from_one_state():
    source, kernel = _cuda(draws(M=256))
    assert "#include <curand_kernel.h>" in source
    assert kernel.count("TL_RNG_STATE_curandStatePhilox4_32_10_t()") == 1
    assert kernel.count("tl_rng_init(") == 1
    # 8 elements per thread, four draws each, in program order, never a vector of one draw
    assert len(re.findall(r"tl_rng_rand\(\)", kernel)) == 8
    assert len(re.findall(r"tl_rng_uniform\(\)", kernel)) == 8
    assert len(re.findall(r"tl_rng_uniform_double\(\)", kernel)) == 8
    assert len(re.findall(r"tl_rng_normal\(\)", kernel)) == 8
    assert "make_uint4" not in kernel and "(uint4)" not in kernel


@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvcc_builds_every_generator(generator, arch, tmp_path):
    from test_printer_limits import _cuda_source

    try:
        _cuda_source(draws(generator=generator), arch, tmp_path)
    except NoToolchainError as err:
        pytest.skip(str(err))


def test_the_default_sequence_is_the_global_thread_index():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "uint32")):
        with T.Kernel(2, threads=32) as bx:
            T.rng_init(7)
            A[bx * 32 + T.get_thread_binding()] = T.rng_rand()

    _, kernel_src = _cuda(kernel)
    assert "tl_rng_init((uint64_t)7ULL, ((uint64_t)((((int)blockIdx.x) * 32) + ((int)threadIdx.x))), (uint64_t)0ULL);" \
        in kernel_src


@pytest.mark.parametrize("path", ["cpu", "hip:gfx942", "metal:apple7"])
def test_other_backends_refuse_by_name(path):
    import numpy as np
    from tilelang_core.testing.oracle import run

    @T.prim_func
    def uniform(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            T.rng_init(3)
            A[bx * 32 + T.get_thread_binding()] = T.rng_rand_float()

    with pytest.raises(LoweringError, match="cuRAND, which only the cuda backend has"):
        run(path, uniform, A=np.zeros(64, np.float32))


def test_misuse_is_refused():
    with pytest.raises(FrontendError, match="call T.rng_init\\(seed\\) before it"):
        @T.prim_func
        def no_init(A: T.Tensor((32,), "uint32")):
            with T.Kernel(1, threads=32):
                A[T.get_thread_binding()] = T.rng_rand()

    with pytest.raises(FrontendError, match="is not one of"):
        @T.prim_func
        def bad_generator(A: T.Tensor((32,), "uint32")):
            with T.Kernel(1, threads=32):
                T.rng_init(1, generator="curandStateSobol32_t")
                A[T.get_thread_binding()] = T.rng_rand()

    with pytest.raises(FrontendError, match="must be 32 or 64"):
        @T.prim_func
        def bad_bits(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                T.rng_init(1)
                A[T.get_thread_binding()] = T.rng_rand_float(bit=16)
