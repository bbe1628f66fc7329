"""Reductions across 24, 48, 96 threads, and over rows 3, 10 or 12 lanes apart
(tests/simt/test_odd_thread_reductions.py's kernels), on the GPU against torch in float64: lanes a
xor butterfly cannot pair exchange partials through shared memory, partial warps included."""

import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

sys.path.insert(0, str(Path(__file__).parents[4] / "tests" / "simt"))
from gpu_compile import compiled  # noqa: E402
from test_odd_thread_reductions import FOLDS, reduce_kernel  # noqa: E402


@pytest.mark.parametrize("kind", sorted(FOLDS))
@pytest.mark.parametrize("rows,width,threads", [(1, 24, 24), (3, 48, 48), (2, 192, 96), (4, 40, 40)])
def test_a_row_over_threads_not_a_power_of_two(kind, rows, width, threads):
    fold, ref = FOLDS[kind]
    a = torch.randn(rows, width, device="cuda")
    b = torch.full((rows,), float("nan"), device="cuda")
    compiled(reduce_kernel(fold, (rows, width), 1, threads))(a, b)
    torch.testing.assert_close(b.double().cpu(), torch.from_numpy(ref(a.double().cpu().numpy(), 1)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("height,scale", [(12, 2), (6, 4), (48, 2), (2, 3), (2, 10), (2, 12)])
def test_a_column_over_threads_not_a_power_of_two(height, scale):
    fold, ref = FOLDS["sum"]
    a = torch.randn(height, scale, device="cuda")
    b = torch.full((scale,), float("nan"), device="cuda")
    compiled(reduce_kernel(fold, (height, scale), 0, height * scale))(a, b)
    torch.testing.assert_close(b.double().cpu(), torch.from_numpy(ref(a.double().cpu().numpy(), 0)),
                               rtol=1e-5, atol=1e-5)
