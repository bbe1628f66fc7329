"""The distributions as a user installs them (issue 24): every wheel builds offline from the
sources, carries the license, a long description and nothing stray, registers no pytest plugin;
and a fresh virtual environment that installs tilelang-core and tilelang-cpu from the wheels (not
editable) compiles and runs a kernel outside the source tree."""

import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {"tilelang_core": ".", "tilelang_cpu": "backends/cpu", "tilelang_cuda": "backends/cuda",
                 "tilelang_hip": "backends/hip", "tilelang_metal": "backends/metal",
                 "tilelang_ascend": "backends/ascend", "tilelang_acme": "plugins/vendor-template"}


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheelhouse")
    # built from a copy: setuptools writes build/ and *.egg-info next to the sources it builds
    sources = tmp_path_factory.mktemp("sources")
    skip = shutil.ignore_patterns(".venv", ".git", ".device", "build", "dist", "__pycache__", "*.egg-info",
                                  "tests", "bench", "docs", "examples")
    shutil.copytree(ROOT, sources / "repo", ignore=skip)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "-w", str(out), *[str(sources / "repo" / d) for d in DISTRIBUTIONS.values()]],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr and "deprecated" not in done.stderr.lower(), done.stderr[-3000:]
    return out


def _wheel(wheelhouse, name) -> zipfile.ZipFile:
    (path,) = wheelhouse.glob(f"{name}-*.whl")
    return zipfile.ZipFile(path)


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_each_wheel_has_its_license_and_description_and_nothing_stray(wheelhouse, name):
    wheel = _wheel(wheelhouse, name)
    names = wheel.namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    title = "# TileLang-X" if name == "tilelang_core" else f"# {name.replace('_', '-')}"
    assert "Description-Content-Type: text/markdown" in metadata and title in metadata
    empty = [i.filename for i in wheel.infolist() if i.file_size == 0 and not i.filename.endswith("__init__.py")
             and ".dist-info/" not in i.filename]
    assert not empty, f"stray empty files in {name}: {empty}"
    entry_points = next((n for n in names if n.endswith("entry_points.txt")), None)
    if entry_points:
        assert "pytest11" not in wheel.read(entry_points).decode()  # opt-in: nothing loads into others' pytest


def test_cuda_offers_the_nvrtc_extra(wheelhouse):
    wheel = _wheel(wheelhouse, "tilelang_cuda")
    metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith("METADATA"))).decode()
    assert "Provides-Extra: nvrtc" in metadata and "nvidia-cuda-nvrtc" in metadata


def test_a_fresh_venv_installs_core_and_cpu_from_the_wheels_and_runs_a_kernel(wheelhouse, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    wheels = [str(next(wheelhouse.glob(f"{n}-*.whl"))) for n in ("tilelang_core", "tilelang_cpu")]
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *wheels],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    script = tmp_path / "user_code" / "add.py"
    script.parent.mkdir()
    script.write_text(textwrap.dedent('''
        import numpy as np
        import tilelang_core as tilelang
        import tilelang_core.language as T

        @tilelang.jit(out_idx=[-1], target="cpu")
        def add(n):
            @T.prim_func
            def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
                with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
                    for i in T.Parallel(64):
                        B[bx * 64 + i] = A[bx * 64 + i] * 2.0
            return main

        a = np.arange(100, dtype=np.float32)
        assert (add(100)(a) == 2 * a).all()
        print("from", tilelang.__file__)
    '''))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TILELANG_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([str(python), str(script)], capture_output=True, text=True, env=env, cwd=script.parent,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert str(venv) in run.stdout and str(ROOT) not in run.stdout  # the installed copy, not the tree
