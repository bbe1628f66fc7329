"""Target values: parsing, printing, validation against the installed plugins, TVM conversion."""

import pytest

from tilelang_core.errors import TargetError
from tilelang_core.target import Target


@pytest.mark.parametrize("text, kind, arch, features", [
    ("cuda", "cuda", None, set()),
    ("cuda:sm_90a", "cuda", "sm_90a", set()),
    ("hip:gfx942", "hip", "gfx942", set()),
    ("ascend", "ascend", None, set()),
    ("metal", "metal", None, set()),
    ("cpu", "cpu", None, set()),
    ("cuda:sm_90a+fast_math", "cuda", "sm_90a", {"fast_math"}),
    ("  CUDA:sm_80 ", "cuda", "sm_80", set()),
])
def test_strings_parse_and_print_back(text, kind, arch, features):
    target = Target.parse(text)
    assert (target.kind, target.arch, set(target.features)) == (kind, arch, features)
    assert Target.parse(str(target)) == target


def test_dict_form_round_trips_with_attrs():
    target = Target.parse({"kind": "hip", "arch": "gfx90a", "attrs": {"wave": 64}})
    assert target.attr == {"wave": 64} and Target.parse(target.to_dict()) == target
    assert hash(target) == hash(Target.parse(target.to_dict()))


def test_aliases_resolve_to_the_canonical_kind():
    assert Target.parse("asc").kind == "ascend"
    assert Target.parse("rocm:gfx942") == Target("hip", "gfx942")


def test_unknown_kind_lists_the_known_ones_and_the_providing_package(monkeypatch):
    with pytest.raises(TargetError) as info:
        Target.parse("tpu")
    assert "cuda (tilelang-cuda)" in str(info.value) and "cpu (tilelang-cpu)" in str(info.value)
    monkeypatch.setenv("TILELANG_DISABLE_PLUGINS", "metal")
    from tilelang_core.plugin.manager import set_plugin_manager

    set_plugin_manager(None)
    with pytest.raises(TargetError, match="provided by tilelang-metal: pip install tilelang-metal"):
        Target.parse("metal")


def test_bad_inputs_say_what_form_is_expected():
    with pytest.raises(TargetError, match="kind:arch"):
        Target.parse("cuda:sm_90a+")
    with pytest.raises(TargetError, match="keys kind"):
        Target.parse({"arch": "sm_90a"})
    with pytest.raises(TargetError, match="resolve_target"):
        Target.parse("auto")
    with pytest.raises(TargetError, match="known archs: sm_80"):
        Target.parse("cuda:sm_7x")
    with pytest.raises(TargetError, match="unknown feature"):
        Target.parse("cuda:sm_90a+turbo")
    with pytest.raises(TargetError, match="cannot make a target"):
        Target.parse(42)


def test_targets_are_frozen_and_hashable():
    target = Target("cuda:sm_90a")
    with pytest.raises(AttributeError):
        target.kind = "hip"
    assert {target: 1}[Target("cuda", "sm_90a")] == 1


def test_capabilities_come_from_the_plugin_table():
    assert Target("cuda:sm_90a").capabilities["tensor_core"] == "wgmma"
    assert Target("cuda:sm_80").capabilities["tensor_core"] == "mma.sync"
    assert Target("hip:gfx942").capabilities["wave_size"] == 64
    assert Target("hip:gfx1100").capabilities["wave_size"] == 32


def test_conversion_to_tvm_targets():
    cuda = Target("cuda:sm_90a").to_tvm()
    assert cuda.kind.name == "cuda" and str(cuda.attrs["arch"]) == "sm_90a"
    assert cuda.host.kind.name == "cuda_host"
    assert Target("cpu").to_tvm().kind.name == "llvm"
    assert Target("hip:gfx942").to_tvm().kind.name == "rocm"
    with pytest.raises(TargetError, match="no TVM equivalent"):
        Target("ascend").to_tvm()


@pytest.mark.parametrize("spec, kind, arch", [({"kind": "cuda", "arch": "sm_90a"}, "cuda", "sm_90a"),
                                              ({"kind": "rocm", "mcpu": "gfx942"}, "hip", "gfx942"),
                                              ("llvm", "cpu", None)])
def test_a_tvm_target_object_maps_onto_ours(spec, kind, arch):
    import tvm

    target = Target.parse(tvm.target.Target(spec), validate=False)
    assert (target.kind, target.arch) == (kind, arch)


def test_a_tvm_target_of_a_kind_we_lack_is_refused_naming_it():
    import tvm

    with pytest.raises(TargetError, match="no backend for TVM's 'vulkan' kind"):
        Target.parse(tvm.target.Target("vulkan"), validate=False)
