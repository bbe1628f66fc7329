"""tools/tilekernels_suite.py picks a few parameter sets of every TileKernels test function."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from tilekernels_suite import pick_tests  # noqa: E402


def test_picks_spread_over_each_function_and_skip_benchmarks():
    ids = [f"tests/a.py::test_x[p{i}]" for i in range(10)] + ["tests/a.py::test_y"] + \
          [f"tests/a.py::test_x_benchmark[p{i}]" for i in range(3)] + ["3 tests collected"]
    assert pick_tests(ids, 4) == ["tests/a.py::test_x[p0]", "tests/a.py::test_x[p2]", "tests/a.py::test_x[p4]",
                                  "tests/a.py::test_x[p6]", "tests/a.py::test_y"]


def test_a_run_logs_each_test_as_it_ends_and_survives_a_hang(tmp_path):
    """A test that SIGALRM cannot stop (a kernel that never returns; here the signal is blocked)
    is logged as hung and its process ends; the tests before it are in the log with their errors,
    and ``summary`` counts what never finished."""
    from tilekernels_suite import run, summary

    tree = tmp_path / "ours"
    (tree / "tests").mkdir(parents=True)
    (tree / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    (tree / "tests" / "test_k.py").write_text(
        "import signal, time\n"
        "def test_a(): pass\n"
        "def test_b(): assert 1 + 1 == 3, 'the sum is off'\n"
        "def test_c():\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\n"
        "    time.sleep(60)\n"
        "def test_d(): pass\n")
    (tmp_path / "pick.txt").write_text("\n".join(f"tests/test_k.py::test_{n}" for n in "abcd") + "\n")
    log = tmp_path / "run.jsonl"
    import os
    os.environ["TLSUITE_HANG_GRACE"] = "1"
    try:  # (also under pytest-xdist: the run is no worker of this session's)
        rc = run(tmp_path, "ours", 1, 1, None, log)
    finally:
        del os.environ["TLSUITE_HANG_GRACE"]
    assert rc == 70
    text = summary(log, tmp_path / "pick.txt")
    assert text.splitlines()[0] == "1 passed, 1 failed, 1 hung, 1 not finished"
    assert "the sum is off" in text and "tests/test_k.py::test_c" in text


def test_also_compile_builds_every_kernel_for_a_second_target(tmp_path):
    """TLSUITE_ALSO_COMPILE: a test that compiles a kernel on cpu also compiles it for the named
    target, whose error fails the test (an arch the cuda backend does not know, here)."""
    import os
    import subprocess

    (tmp_path / "test_k.py").write_text(
        "import tilelang_core as tl\n"
        "import tilelang_core.language as T\n"
        "@tl.jit(out_idx=[-1], target='cpu')\n"
        "def add(n):\n"
        "    @T.prim_func\n"
        "    def main(A: T.Tensor((n,), 'float32'), B: T.Tensor((n,), 'float32')):\n"
        "        with T.Kernel(1, threads=32):\n"
        "            for i in T.Parallel(n):\n"
        "                B[i] = A[i] + 1.0\n"
        "    return main\n"
        "def test_add():\n"
        "    import torch\n"
        "    assert float(add(8)(torch.zeros(8))[0]) == 1.0\n")
    tools = Path(__file__).resolve().parents[2] / "tools"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tools), os.environ.get("PYTHONPATH", "")]),
               TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TLSUITE_ALSO_COMPILE", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "tilelang_suite_plugin", "-p", "no:cacheprovider",
           str(tmp_path / "test_k.py")]
    plain = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    env["TLSUITE_ALSO_COMPILE"] = "cuda:sm_1"
    twice = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert twice.returncode == 1 and "sm_1" in twice.stdout, twice.stdout + twice.stderr
