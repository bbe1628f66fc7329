"""On the H200: T.print through the device's printf (language/debug_print.py). The lines the GPU
prints are the ones the cpu backend and the SIMT interpreter print (tests/language/
test_debug_print.py checks those against the data): same set of lines, same values."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core as tl  # noqa: E402
from tilelang_core.testing.oracle import run  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "language"))
from test_debug_print import _lines, printing  # noqa: E402


def test_the_gpu_prints_the_lines_the_interpreter_prints(capfd):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    c = rng.integers(0, 256, 3).astype(np.uint8)
    run("cuda:sm_80", printing(), A=a, B=np.zeros((4, 4), np.float32), C=c)
    expected = sorted(map(str, _lines(capfd.readouterr().out)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(printing(), target="cuda")
    b = torch.zeros(4, 4, device="cuda")
    kernel(torch.from_numpy(a).cuda(), b, torch.from_numpy(c).cuda())
    torch.cuda.synchronize()
    got = sorted(map(str, _lines(capfd.readouterr().out)))
    assert got == expected
    assert torch.equal(b.cpu(), torch.from_numpy(a))
