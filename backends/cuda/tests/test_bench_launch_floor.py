"""bench/cuda_launch_floor.py's C++ program (the launch floor under the Python overhead table)
still builds with nvcc, so the H200 session does not find it broken (run there, not here)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "cuda_launch_floor.py"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_launch_floor_program_builds():
    done = subprocess.run([sys.executable, str(SCRIPT), "--build-only"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "built launch_floor" in done.stdout
