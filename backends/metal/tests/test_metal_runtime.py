"""The launch contract of a metal kernel (compiler.py, runtime.py), checked off macOS: what the
artifact records, how the grid and the scalar struct are computed for a call, and that loading
without a Metal device says so. Running on a device: tests/mac."""

import json
import struct
import sys

import pytest

import tilelang_core as tl
import tilelang_core.language as T
from metal_cases import Target, lower
from tilelang_core.errors import LaunchError
from tilelang_metal.pipeline import MetalBackend
from tilelang_metal.runtime import evaluate, load_kernel, pack_args


def dynamic_scale(bm=64):
    m = T.dynamic("m")

    @T.prim_func
    def dyn_scale(X: T.Tensor((m, 128), "float32"), Y: T.Tensor((m, 128), "float32"), alpha: T.float32):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            for i, j in T.Parallel(bm, 128):
                if bx * bm + i < m:
                    Y[bx * bm + i, j] = X[bx * bm + i, j] * alpha

    return dyn_scale


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    backend = MetalBackend(Target())
    mod, _ = lower(dynamic_scale())
    data = backend.build(mod, backend.codegen(mod), None, tmp_path_factory.mktemp("metal"))
    return json.loads(data)


def test_artifact_records_the_launch(artifact):
    assert artifact["entry"] == "dyn_scale" and artifact["kernel"] == "dyn_scale_kernel"
    assert artifact["params"] == ["X", "Y", "alpha"] and artifact["buffers"] == ["X", "Y"]
    assert artifact["threads"] == 128 and artifact["shape_vars"] == {"m": ["X", 0]}
    fields = dict(artifact["args"]["fields"])
    assert artifact["args"]["buffer"] == 2 and fields == {"m": "int", "alpha": "float"}
    assert "kernel void dyn_scale_kernel(" in artifact["source"]


@pytest.mark.parametrize("m,groups", [(1, 1), (64, 1), (65, 2), (1000, 16)])
def test_grid_follows_the_dynamic_extent(artifact, m, groups):
    assert [evaluate(g, {"m": m}) for g in artifact["grid"]] == [groups, 1, 1]


def test_scalars_pack_into_eight_byte_slots(artifact):
    packed = pack_args(artifact["args"]["fields"], {"m": 70, "alpha": 0.5})
    assert len(packed) == 16
    values = dict(zip([f for f, _ in artifact["args"]["fields"]],
                      [packed[0:8], packed[8:16]]))
    assert struct.unpack("<i", values["m"][:4]) == (70,)
    assert struct.unpack("<f", values["alpha"][:4]) == (0.5,)


@pytest.mark.skipif(sys.platform == "darwin", reason="this checks the message where Metal is absent")
def test_compiling_for_metal_off_macos_gives_the_kernel_and_its_first_call_says_why_it_cannot_run():
    from tilelang_core.errors import NoDeviceError

    kernel = tl.compile(dynamic_scale(), target="metal")  # cross-compiling: the MSL is all here
    assert "kernel void dyn_scale" in kernel.get_kernel_source()
    assert isinstance(NoDeviceError("x"), LaunchError)
    with pytest.raises(NoDeviceError, match=r"kernel 'dyn_scale' compiled for metal.*needs macOS with a Metal device"):
        kernel(*[None] * len(kernel.params))


def test_a_corrupt_artifact_is_a_compile_error(tmp_path):
    from tilelang_core.errors import CompileError

    path = tmp_path / "kernel.json"
    path.write_text('{"format": "something else"}')
    with pytest.raises(CompileError, match="not a tilelang-metal/1 artifact"):
        load_kernel(path)
