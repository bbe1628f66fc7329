"""Every integer width and signedness on HIP, as on CUDA: TileKernels' scale arithmetic works on a
float's bits as uint32 (``((bits - 1) >> 23) + 1 - 127``) and stores uint8 exponents; uint32 was
refused on every hip arch ("no hip arch supports it"). Numerics on the hip interpreters against
numpy, and the source compiled by clang for gfx942 and gfx1100."""

import warnings

import numpy as np
import pytest
from hip_examples import needs_clang

import tilelang_core.language as T
from tilelang_core.testing.oracle import run
from tilelang_hip import codegen, compiler
from tilelang_hip.options import HipOptions
from tilelang_hip.pipeline import HipBackend

N = 64


@T.prim_func
def bit_scales(A: T.Tensor((N,), "float32"), S: T.Tensor((N,), "float32"), E: T.Tensor((N,), "uint8"),
               H: T.Tensor((N,), "uint16"), G: T.Tensor((N,), "int16"), W: T.Tensor((N,), "uint64")):
    with T.Kernel(1, threads=N):
        tx = T.get_thread_binding()
        bits = T.reinterpret(A[tx], T.uint32)
        exp = ((bits - 1) >> 23) + 1 - 127  # ceil(log2(a)), wrapping below 1 as uint32 does
        S[tx] = T.reinterpret((127 + exp) << 23, T.float32)
        E[tx] = T.Cast("uint8", exp + 127)
        H[tx] = T.Cast("uint16", bits >> 16)
        G[tx] = T.Cast("int16", T.Cast("int32", exp)) - 3
        W[tx] = T.Cast("uint64", bits) * T.uint64(4294967296) + T.Cast("uint64", tx)


def expected(a):
    bits = a.view(np.uint32).astype(np.uint64)
    exp = ((((bits - 1) >> 23) + 1 - 127) & 0xFFFFFFFF).astype(np.uint32)
    scale = (((127 + exp.astype(np.uint64)) << 23) & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return dict(S=scale, E=(exp + 127).astype(np.uint8), H=(bits >> 16).astype(np.uint16),
                G=(exp.view(np.int32) - 3).astype(np.int16),
                W=(bits << np.uint64(32)) + np.arange(N, dtype=np.uint64))


@pytest.mark.parametrize("path", ["hip:gfx942", "hip:gfx1100", "cpu"])
def test_integer_widths_compute_as_numpy(path):
    a = (np.random.default_rng(2).random(N) * 10 + 1e-3).astype(np.float32)
    out = run(path, bit_scales, A=a, S=np.zeros(N, np.float32), E=np.zeros(N, np.uint8), H=np.zeros(N, np.uint16),
              G=np.zeros(N, np.int16), W=np.zeros(N, np.uint64))
    for name, want in expected(a).items():
        np.testing.assert_array_equal(out[name], want, err_msg=name)


class _Target:
    def __init__(self, arch):
        self.arch = arch


@needs_clang
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_integer_widths_compile_with_clang(arch, tmp_path):
    backend, options = HipBackend(_Target(arch)), HipOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = backend.lower(bit_scales, options)
    source = backend.codegen(mod, options)
    code_object = compiler.compile_device(codegen.split(source).device, arch, tmp_path, options)
    assert code_object.stat().st_size > 0
