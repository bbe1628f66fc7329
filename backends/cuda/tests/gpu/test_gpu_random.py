"""On the H200: TileLang's random numbers (language/random.py) through cuRAND, every generator.
The draws are a function of (seed, sequence, offset): the same seed gives the same numbers, another
seed other ones; uniform floats lie in (0, 1] with mean 1/2, normals have mean 0 and variance 1,
and the uint32 draws cover their range. The source-level checks are tests/language/test_random.py."""

import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core as tl  # noqa: E402
from tilelang_core.language.random import GENERATORS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "language"))
from test_random import draws  # noqa: E402  (the kernel the source-level tests check)


def _run(M, generator, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(draws(M=M, generator=generator, seed=seed), target="cuda")
    out = (torch.zeros(M, dtype=torch.uint32, device="cuda"), torch.zeros(M, device="cuda"),
           torch.zeros(M, dtype=torch.float64, device="cuda"), torch.zeros(M, device="cuda"))
    kernel(*out)
    torch.cuda.synchronize()
    return [t.cpu() for t in out]


@pytest.mark.parametrize("generator", GENERATORS)
def test_draws_are_reproducible_and_distributed(generator):
    M = 1 << 16
    a, b, c, d = _run(M, generator, seed=42)
    a2, b2, _, _ = _run(M, generator, seed=42)
    a3, _, _, _ = _run(M, generator, seed=43)
    assert torch.equal(a, a2) and torch.equal(b, b2)  # a function of the seed
    a, a3 = a.long(), a3.long()  # (torch's CPU sort has no uint32)
    assert (a != a3).float().mean() > 0.99  # another seed, other numbers
    assert a.unique().numel() > 0.99 * M  # 32 random bits per draw: few repeats
    assert (a.double() / 2**32).mean().sub(0.5).abs() < 0.01
    for u in (b.double(), c):
        assert u.min() > 0 and u.max() <= 1 and abs(u.mean().item() - 0.5) < 0.01
    assert abs(d.double().mean().item()) < 0.02 and abs(d.double().var().item() - 1) < 0.03
