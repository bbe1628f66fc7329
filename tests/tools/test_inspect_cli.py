"""python -m tilelang_core compile FILE:KERNEL --emit STAGE, on the cpu backend."""

import subprocess
import sys
from pathlib import Path

import pytest

from tilelang_core.__main__ import main
from tilelang_core.inspect_cli import parse_args

ROOT = Path(__file__).resolve().parents[2]
GEMM = f"{ROOT / 'examples' / 'gemm' / 'gemm.py'}:gemm"
KERNELS = Path(__file__).parent / "tools_kernels.py"


def _compile(capsys, *argv):
    rc = main(["compile", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("stage, marker", [
    ("tirx", "T.tile.tl_gemm"),        # tile ops still there
    ("lowered", "T.parallel"),         # tile ops lowered to a parallel block loop
    ("source", "define"),              # LLVM IR
])
def test_each_stage_of_the_gemm_example(capsys, stage, marker):
    rc, out, err = _compile(capsys, GEMM, "--args", "128", "128", "128", "block_M=64",
                            "--target", "cpu", "--emit", stage)
    assert rc == 0, err
    assert marker in out
    if stage != "source":
        assert "128, 128" in out  # the compile-time arguments reached the factory


@pytest.mark.parametrize("stage", ["ptx", "sass"])
def test_a_stage_the_backend_does_not_produce_lists_the_available_ones(capsys, stage):
    rc, out, err = _compile(capsys, GEMM, "--args", "[128, 128, 128]", "--target", "cpu", "--emit", stage)
    assert rc == 1 and out == ""
    assert f"does not produce stage '{stage}'" in err and "tirx, lowered, source" in err
    assert "--target cuda" in err


@pytest.mark.parametrize("target, marker", [("metal", "kernel void"), ("hip:gfx942", "__global__"),
                                            ("ascend", "kernel_operator.h")])
def test_a_target_without_its_device_still_shows_its_source(capsys, target, marker):
    """Cross-compiling (issue 24): no Mac, no ROCm, no CANN here; the source is produced all the same."""
    rc, out, err = _compile(capsys, GEMM, "--args", "128", "128", "128", "--target", target, "--emit", "source")
    assert rc == 0, err
    assert marker in out


def test_a_prim_func_object_and_an_output_file(capsys, tmp_path):
    out_file = tmp_path / "add_one.ll"
    rc, out, err = _compile(capsys, f"{KERNELS}:add_one", "--target", "cpu", "--emit", "source",
                            "-o", str(out_file))
    assert rc == 0, err
    assert "define" in out_file.read_text() and out == ""


def test_an_eager_kernel_compiles_from_sizes(capsys):
    rc, out, err = _compile(capsys, f"{ROOT / 'examples' / 'quickstart.py'}:matmul_relu",
                            "--args", "M=128", "N=64", "K=32", "--target", "cpu", "--emit", "tirx")
    assert rc == 0, err
    assert "(128, 32)" in out and "(32, 64)" in out


def test_unknown_names_and_bad_references_are_explained(capsys):
    rc, _, err = _compile(capsys, f"{KERNELS}:no_such_kernel", "--target", "cpu")
    assert rc == 1 and "has no 'no_such_kernel'" in err and "flaky_gemm" in err
    rc, _, err = _compile(capsys, "just_a_name", "--target", "cpu")
    assert rc == 1 and "file.py:name" in err
    rc, _, err = _compile(capsys, f"{KERNELS}:add_one", "--args", "3", "--target", "cpu")
    assert rc == 1 and "takes no compile-time arguments" in err


def test_args_parsing():
    assert parse_args(["128", "dtype=float16", "block_M=64", "trans_A=true"]) == (
        [128], {"dtype": "float16", "block_M": 64, "trans_A": True})
    assert parse_args(["[1, 2, 3]"]) == ([1, 2, 3], {})
    assert parse_args(['{"M": 4}', "5"]) == ([5], {"M": 4})


def test_the_module_entry_point_runs_it(tmp_path):
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "tilelang_core", "compile", f"{KERNELS}:add_one",
                          "--target", "cpu", "--emit", "lowered"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "@I.ir_module" in out.stdout and "B[i] = A[i] + T.float32(1.0)" in out.stdout


def test_an_autotune_function_compiles_untuned_with_the_given_arguments(capsys):
    rc, out, err = _compile(capsys, f"{KERNELS}:tuned_scale", "--args", "256", "block=64",
                            "--target", "cpu", "--emit", "lowered")
    assert rc == 0, err
    assert "T.parallel(4)" in out  # 256 / block 64 = 4 blocks: the given block, no search
