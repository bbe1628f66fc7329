"""On the H200: the kernels whose barriers shared_races.py decides (tests/language/barrier_kernels.py)
against numpy, compiled for the GPU present (skipped without one). A barrier wrongly left out is a
wrong answer here only sometimes (a race), so each kernel runs many blocks' worth of launches; a
barrier wrongly placed under a per-thread branch hangs (the suite's timeout catches that)."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "language"))
from gpu_compile import compiled  # noqa: E402
from barrier_kernels import compaction, histogram, producer_branch, ticket  # noqa: E402


@pytest.mark.parametrize("n,rounds", [(64, 2), (128, 3), (1024, 4)])
def test_double_buffered_compaction(n, rounds):
    kernel = compiled(compaction(n, rounds))
    rng = np.random.default_rng(n)
    for _ in range(20):
        a = rng.integers(-40, 60, n).astype(np.int32)
        o = torch.full((n,), -999, dtype=torch.int32, device="cuda")
        c = torch.zeros(1, dtype=torch.int32, device="cuda")
        kernel(torch.from_numpy(a).cuda(), o, c)
        kept = a
        for rnd in range(rounds):
            kept = kept[kept > rnd * 10]
        count = int(c.item())
        assert count == len(kept)
        np.testing.assert_array_equal(np.sort(o[:count].cpu().numpy()), np.sort(kept))


def test_shared_histogram_and_tickets():
    n, bins, per = 256, 16, 7
    hist, take = compiled(histogram(n, bins, per)), compiled(ticket(n))
    for seed in range(20):
        a = np.random.default_rng(seed).integers(0, 1000, n * per).astype(np.int32)
        h = torch.zeros(bins, dtype=torch.int32, device="cuda")
        hist(torch.from_numpy(a).cuda(), h)
        np.testing.assert_array_equal(h.cpu().numpy(), np.bincount(a % bins, minlength=bins))
        b = torch.zeros(n, dtype=torch.int32, device="cuda")
        p = torch.zeros(n, dtype=torch.int32, device="cuda")
        take(b, p)
        assert (b == n).all() and (p.sort().values == torch.arange(n, device="cuda", dtype=torch.int32)).all()


def test_a_branch_of_a_thread_range_gets_a_barrier_among_its_threads():
    for else_form in (False, True):
        kernel = compiled(producer_branch(else_form))
        a = torch.randn(128, device="cuda")
        b = torch.zeros(64, device="cuda")
        c = torch.zeros(64, device="cuda")
        kernel(a, b, c)
        torch.testing.assert_close(b, 2 * a[64:].flip(0), rtol=0, atol=0)
