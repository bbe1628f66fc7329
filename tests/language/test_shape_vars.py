"""A size given only inside a shape expression (``T.Tensor((n * 4,))``, TileLang's annot tests)
is solved from the tensor at the call; a tensor whose size the expression cannot produce is
refused, naming the tensor."""

import numpy as np
import pytest
import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import LaunchError
from tilelang_core.testing.oracle import PATHS, run


def zero_fill(form):
    n = T.symbolic("n")
    shape = {"mul": n * 4, "add": n + 1, "mul_add": n * 3 + 1}[form]

    @T.prim_func
    def kernel(A: T.Tensor((shape,), T.int32), B: T.Tensor((shape,), T.int32)):
        with T.Kernel(1, threads=32):
            for i in T.serial(shape):
                B[i] = A[i] + n

    return kernel


@pytest.mark.parametrize("form, size, n", [("mul", 16, 4), ("add", 16, 15), ("mul_add", 16, 5)])
def test_a_size_inside_a_shape_expression_is_solved_on_cpu(form, size, n):
    kernel = tilelang.compile(zero_fill(form), target="cpu")
    a, b = torch.arange(size, dtype=torch.int32), torch.zeros(size, dtype=torch.int32)
    kernel(a, b)
    assert torch.equal(b, a + n)


@pytest.mark.parametrize("path", [p for p in PATHS if p != "cpu"])
def test_the_solved_size_on_the_simt_interpreters(path):
    a = np.arange(16, dtype=np.int32)
    out = run(path, zero_fill("mul_add"), A=a, B=np.zeros(16, np.int32))
    np.testing.assert_array_equal(out["B"], a + 5)


def test_a_size_the_expression_cannot_produce_is_refused():
    kernel = tilelang.compile(zero_fill("mul"), target="cpu")
    with pytest.raises(LaunchError, match=r"dimension 0 of 'A' is n \* 4: .*a multiple of 4 \(it sets n\)"):
        kernel(torch.zeros(15, dtype=torch.int32), torch.zeros(15, dtype=torch.int32))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_defines_the_solved_size(arch):
    kernel = tilelang.compile(zero_fill("mul"), target=f"cuda:{arch}")
    assert "__global__" in kernel.get_kernel_source()
