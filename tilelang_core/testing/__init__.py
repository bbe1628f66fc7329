"""Testing helpers for tilelang-core, for backend packages and for ported TileLang tests.

``tilelang_core.testing.conformance`` is the backend conformance suite (subclass its BackendConformance in a backend's tests).

TileLang's ``tilelang.testing`` names live here too (``pytest_helpers``, ``perf_regression``)::

    import tilelang_core.testing

    @tilelang_core.testing.requires_cuda_compute_version_ge(9, 0)
    def test_wgmma():
        tilelang_core.testing.torch_assert_close(out, ref, rtol=1e-2, atol=1e-2)

    if __name__ == "__main__":
        tilelang_core.testing.main()

Importing this package stays cheap: torch, tvm and pytest load inside the functions.
"""

from ..utils.tensor import torch_assert_close
from .perf_regression import process_func, regression
from .pytest_helpers import (main, requires_cdna, requires_cuda, requires_cuda_compute_version,
                             requires_cuda_compute_version_eq, requires_cuda_compute_version_ge,
                             requires_cuda_compute_version_gt, requires_cuda_compute_version_le,
                             requires_cuda_compute_version_lt, requires_cuda_or_cdna, requires_gfx950,
                             requires_llvm, requires_metal, requires_package, requires_rocm,
                             set_random_seed)

__all__ = [
    "main", "process_func", "regression", "requires_cdna", "requires_cuda",
    "requires_cuda_compute_version", "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge", "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_le", "requires_cuda_compute_version_lt", "requires_cuda_or_cdna",
    "requires_gfx950", "requires_llvm", "requires_metal", "requires_package", "requires_rocm",
    "set_random_seed", "torch_assert_close",
]
