"""target='auto' with faked device evidence: the real probes read a fake file tree (HostView),
the decision code runs unmodified."""

import json
import warnings

import pytest

from tilelang_core.errors import TargetError
from tilelang_core.plugin import HostView
from tilelang_core.plugin.manager import PluginManager
from tilelang_core.target import (MissingPluginWarning, NoAcceleratorNotice, SeveralDevicesWarning, Target,
                                  resolve_target)

H200 = "Model: \t\t NVIDIA H200\nIRQ:   \t\t 51\nGPU UUID: \t GPU-1234\n"


def tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def cuda_host(root, n=1, environ=None):
    files = {f"dev/nvidia{i}": "" for i in range(n)}
    files["dev/nvidiactl"] = ""
    files.update({f"proc/driver/nvidia/gpus/0000:{i:02x}:00.0/information": H200 for i in range(n)})
    return HostView.fake(tree(root, files), environ or {})


def ascend_files(n=2):
    return {f"dev/davinci{i}": "" for i in range(n)} | {"dev/davinci_manager": ""}


def amd_files():
    return {"dev/kfd": "", "sys/class/kfd/kfd/topology/nodes/0/properties": "cpu_cores_count 64\nsimd_count 0\n",
            "sys/class/kfd/kfd/topology/nodes/1/properties": "simd_count 1216\ngfx_target_version 90402\n"}


@pytest.fixture
def manager():
    return PluginManager().discover()


def test_no_device_falls_back_to_cpu_with_a_one_time_notice(tmp_path, manager):
    host = HostView.fake(tmp_path, {})
    with pytest.warns(NoAcceleratorNotice, match="cpu reference backend") as record:
        assert resolve_target("auto", host=host, manager=manager, environ={}).kind == "cpu"
    assert record[0].filename == __file__  # the notice points at the caller, not at library code
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_target(None, host=host, manager=manager, environ={}).kind == "cpu"  # said once only


def test_strict_mode_makes_the_cpu_fallback_an_error(tmp_path, manager):
    with pytest.raises(TargetError, match="TILELANG_AUTO_STRICT=1"):
        resolve_target("auto", host=HostView.fake(tmp_path, {}), manager=manager,
                       environ={"TILELANG_AUTO_STRICT": "1"})


def test_one_cuda_device_gives_cuda_with_the_devices_arch(tmp_path, manager):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        target = resolve_target("auto", host=cuda_host(tmp_path), manager=manager, environ={})
    assert target == Target("cuda", "sm_90a")


def test_cuda_probe_reads_every_node_number_and_the_model(tmp_path, manager):
    host = cuda_host(tmp_path, n=12)
    (device,) = manager.probe(host).devices
    assert device.count == 12 and device.arch == "sm_90a" and "NVIDIA H200" in device.names
    assert "/dev/nvidia10" in device.evidence


def test_cuda_visible_devices_empty_hides_the_gpu(tmp_path, manager):
    host = cuda_host(tmp_path, environ={"CUDA_VISIBLE_DEVICES": ""})
    assert manager.probe(host).devices == ()
    with pytest.warns(NoAcceleratorNotice):
        assert resolve_target("auto", host=host, manager=manager, environ={}).kind == "cpu"


def test_cuda_and_ascend_take_cuda_and_warn_naming_the_other(tmp_path, manager):
    host = HostView.fake(tree(cuda_host(tmp_path).path("/"), ascend_files()), {})
    with pytest.warns(SeveralDevicesWarning, match="ascend") as caught:
        assert resolve_target("auto", host=host, manager=manager, environ={}).kind == "cuda"
    assert "TILELANG_TARGET" in str(caught[0].message)


def test_probe_order_variable_changes_the_preference(tmp_path, manager):
    host = HostView.fake(tree(cuda_host(tmp_path).path("/"), ascend_files()), {})
    with pytest.warns(SeveralDevicesWarning):
        target = resolve_target("auto", host=host, manager=manager, environ={"TILELANG_PROBE_ORDER": "ascend,cuda"})
    assert target == Target("ascend", "dav-3510")


def test_amd_device_found_through_kfd_topology(tmp_path, manager):
    host = HostView.fake(tree(tmp_path, amd_files()), {})
    assert resolve_target("auto", host=host, manager=manager, environ={}) == Target("hip", "gfx942")
    host = HostView.fake(tmp_path, {"HIP_VISIBLE_DEVICES": "-1"})
    assert manager.probe(host).devices == ()


def test_device_without_its_plugin_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_PLUGINS", "ascend")
    manager = PluginManager().discover()
    host = HostView.fake(tree(tmp_path, ascend_files()), {})
    with pytest.warns(MissingPluginWarning, match="pip install tilelang-ascend"):
        with pytest.warns(NoAcceleratorNotice, match="pip install tilelang-ascend"):
            assert resolve_target("auto", host=host, manager=manager, environ={}).kind == "cpu"


def test_no_device_and_no_cpu_backend_is_an_error_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_PLUGINS", "cpu")
    manager = PluginManager().discover()
    with pytest.raises(TargetError, match="pip install tilelang-cpu"):
        resolve_target("auto", host=HostView.fake(tmp_path, {}), manager=manager, environ={})


def test_environment_variable_overrides_probing(tmp_path, manager):
    host = cuda_host(tmp_path)
    assert resolve_target("auto", host=host, manager=manager, environ={"TILELANG_TARGET": "cpu"}).kind == "cpu"
    as_json = json.dumps({"kind": "hip", "arch": "gfx90a"})
    assert resolve_target("auto", host=host, manager=manager,
                          environ={"TILELANG_TARGET": as_json}) == Target("hip", "gfx90a")
    assert resolve_target("auto", host=host, manager=manager, environ={"TILELANG_TARGET": "cuda"}).arch == "sm_90a"


def test_environment_variable_naming_an_uninstalled_kind_is_a_hard_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_PLUGINS", "hip")
    manager = PluginManager().discover()
    with pytest.raises(TargetError, match="pip install tilelang-hip"):
        resolve_target("auto", host=HostView.fake(tmp_path, {}), manager=manager, environ={"TILELANG_TARGET": "hip"})


def test_explicit_target_and_with_block_win_over_the_environment(tmp_path, manager):
    host = cuda_host(tmp_path)
    env = {"TILELANG_TARGET": "hip"}
    assert resolve_target("cpu", host=host, manager=manager, environ=env).kind == "cpu"
    with Target("ascend:dav-c220"):
        assert resolve_target("auto", host=host, manager=manager, environ=env) == Target("ascend", "dav-c220")
        with Target("cpu"):
            assert resolve_target(None, host=host, manager=manager, environ=env).kind == "cpu"
        assert resolve_target("auto", host=host, manager=manager, environ=env).kind == "ascend"
    assert resolve_target("auto", host=host, manager=manager, environ=env).kind == "hip"


def test_explicit_arch_less_target_takes_the_present_devices_arch(tmp_path, manager):
    assert resolve_target("cuda", host=cuda_host(tmp_path), manager=manager, environ={}).arch == "sm_90a"
    assert resolve_target("cuda", host=HostView.fake(tmp_path / "none", {}), manager=manager,
                          environ={}).arch == "sm_80"


def test_malformed_environment_variable_is_a_config_error(tmp_path, manager):
    from tilelang_core.errors import ConfigError

    with pytest.raises(ConfigError, match="not valid JSON"):
        resolve_target("auto", host=HostView.fake(tmp_path, {}), manager=manager, environ={"TILELANG_TARGET": "{kind"})
    with pytest.raises(ConfigError, match="not a boolean"):
        resolve_target("auto", host=HostView.fake(tmp_path, {}), manager=manager,
                       environ={"TILELANG_AUTO_STRICT": "maybe"})


def test_without_cpu_and_a_device_auto_names_the_simulator_that_runs_here(tmp_path, monkeypatch):
    """Issue 24: with only tilelang-ascend installed and no NPU, 'auto' said only 'install tilelang-cpu'."""
    monkeypatch.setenv("TILELANG_DISABLE_PLUGINS", "cpu")
    host = HostView.fake(tmp_path, {})
    with pytest.raises(TargetError, match=r"pip install tilelang-cpu, or pick a simulator that runs here: "
                                          r"target='ascend\+sim'"):
        resolve_target("auto", host=host, manager=PluginManager().discover(), environ={})
