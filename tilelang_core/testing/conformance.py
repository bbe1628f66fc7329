"""The backend conformance suite: checks every backend plugin must pass.

Any backend package runs it in its own tests by subclassing one class (nothing is registered with
pytest: projects that merely have tilelang-core installed never load it)::

    # backends/acme/tests/test_conformance.py
    from tilelang_core.testing.conformance import BackendConformance

    class TestConformance(BackendConformance):
        plugin_module = "tilelang_acme._plugin"

What it checks: the plugin module imports only the standard library and the plugin API; its
PluginInfo and specs validate; target strings and dicts round-trip for every kind, arch and
feature; aliases resolve; unknown archs are refused; probes never raise and answer quickly, on
this machine, on an empty file tree and on a tree of garbage device files.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import time

import pytest

from ..errors import TargetError
from ..plugin import PLUGIN_API, DeviceProbe, HostView
from ..plugin.manager import LoadedPlugin, PluginManager
from ..target import Target, resolve_target

_IMPORT_PROBE = """
import json, sys
before = set(sys.modules)
import {module}
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def forbidden_imports(module: str, new_modules: list[str]) -> list[str]:
    """Modules imported by ``module`` that are neither stdlib, pluggy, tilelang-core (whose
    ``import`` is light: it loads no tvm, numpy or torch) nor the plugin's own package."""
    own = module.split(".")[0]
    allowed = set(sys.stdlib_module_names) | {"pluggy", "tilelang_core", own}
    return [name for name in new_modules if name.split(".")[0] not in allowed]


def _garbage_tree(root) -> None:
    """Device evidence every probe may meet, in broken forms: it must not raise on any of it."""
    files = {
        "dev/nvidia0": "", "dev/nvidia12": "", "dev/nvidiactl": "", "dev/kfd": "", "dev/davinci0": "",
        "dev/davinci_manager": "",
        "proc/driver/nvidia/gpus/0000:01:00.0/information": "\x00\xffModel:\nGPU UUID: ???",
        "sys/class/kfd/kfd/topology/nodes/0/properties": "simd_count notanumber\ngfx_target_version",
        "sys/class/kfd/kfd/topology/nodes/1/properties": "simd_count 304\ngfx_target_version 999999999",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, errors="surrogateescape")
    (root / "proc/driver/nvidia/gpus/0000:02:00.0/information").mkdir(parents=True)  # a dir, not a file


class BackendConformance:
    """Subclass in a backend's tests and set ``plugin_module``."""

    plugin_module: str = ""
    #: seconds a probe may take on this machine
    probe_time_limit: float = 0.5

    # -- fixtures -------------------------------------------------------------------------------
    @pytest.fixture(scope="class")
    @classmethod
    def plugin(cls):
        assert cls.plugin_module, f"{cls.__name__} must set plugin_module"
        return importlib.import_module(cls.plugin_module)

    @pytest.fixture(scope="class")
    @classmethod
    def manager(cls, plugin) -> PluginManager:
        manager = PluginManager(entry_points=lambda: [])
        loaded = manager.register(plugin, name=plugin.tilelang_plugin_info().name)
        assert isinstance(loaded, LoadedPlugin), loaded.error()
        return manager

    @pytest.fixture(scope="class")
    @classmethod
    def loaded(cls, manager) -> LoadedPlugin:
        (plugin,) = manager.plugins.values()
        return plugin

    def _probe(self, plugin, host: HostView):
        probe = getattr(plugin, "tilelang_probe_devices", None)
        return [] if probe is None else probe(host=host)

    # -- the checks -----------------------------------------------------------------------------
    def test_plugin_module_imports_only_stdlib_and_plugin_api(self):
        out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE.format(module=self.plugin_module)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        bad = forbidden_imports(self.plugin_module, json.loads(out.stdout.strip().splitlines()[-1]))
        assert not bad, f"{self.plugin_module} imports {bad}: plugin modules may import only the " \
                        "standard library and tilelang_core.plugin (name heavy modules as 'module:attr')"

    def test_plugin_info_is_valid(self, loaded):
        assert loaded.info.problems() == []
        assert loaded.info.api[0] == PLUGIN_API[0]
        assert loaded.info.distribution.startswith("tilelang-") or loaded.info.distribution
        assert loaded.kinds, "a backend plugin registers at least one target kind"

    def test_specs_validate(self, manager, loaded):
        for kind in loaded.kinds:
            spec = manager.target_spec(kind)
            assert spec.problems() == []
            for arch in spec.archs:
                assert isinstance(spec.capabilities_for(arch), dict)
        for spec in manager.backends.values():
            assert spec.problems() == []
            module = spec.factory.partition(":")[0]
            assert importlib.util.find_spec(module) is not None, f"backend module {module} is not installed"
            if spec.kind in manager.targets and manager.targets[spec.kind].tvm_target:
                tvm_module = manager.targets[spec.kind].tvm_target.partition(":")[0]
                assert importlib.util.find_spec(tvm_module) is not None

    def test_target_parsing_round_trips(self, manager, loaded):
        for kind in loaded.kinds:
            spec = manager.target_spec(kind)
            for arch in (None, *spec.archs):
                for features in ((), *((f,) for f in spec.features), tuple(spec.features)):
                    target = Target(kind, arch, frozenset(features))
                    assert Target.parse(str(target), validate=False) == target
                    assert Target.parse(target.to_dict(), validate=False) == target
                    assert Target.parse(json.loads(json.dumps(target.to_dict())), validate=False) == target
                    resolved = resolve_target(str(target), manager=manager, host=HostView.fake("/nonexistent"))
                    assert resolved.kind == kind and (arch is None or resolved.arch == arch)
                    assert resolved.features == frozenset(features)

    def test_aliases_resolve(self, manager, loaded):
        for kind in loaded.kinds:
            for alias in manager.target_spec(kind).aliases:
                assert resolve_target(alias, manager=manager, host=HostView.fake("/nonexistent")).kind == kind

    def test_unknown_arch_is_refused_with_the_known_ones(self, manager, loaded):
        for kind in loaded.kinds:
            spec = manager.target_spec(kind)
            with pytest.raises(TargetError) as info:
                resolve_target(f"{kind}:no_such_arch_0", manager=manager)
            for arch in spec.archs:
                assert arch in str(info.value)

    def test_probe_is_fast_and_well_formed_on_this_machine(self, plugin, loaded):
        start = time.perf_counter()
        found = self._probe(plugin, HostView.current())
        elapsed = time.perf_counter() - start
        assert elapsed < self.probe_time_limit, f"probe took {elapsed:.3f} s"
        assert isinstance(found, list)
        for device in found:
            assert isinstance(device, DeviceProbe) and device.kind in loaded.kinds
            assert device.evidence, "a device must come with the evidence that shows it"

    def test_probe_finds_nothing_on_an_empty_host(self, plugin, tmp_path):
        found = self._probe(plugin, HostView.fake(tmp_path, environ={}, system="Linux"))
        assert [d for d in found if d.count > 0] == []

    def test_probe_never_raises_on_garbage_device_files(self, plugin, loaded, tmp_path):
        _garbage_tree(tmp_path)
        found = self._probe(plugin, HostView.fake(tmp_path, environ={"CUDA_VISIBLE_DEVICES": "x,,7"}))
        for device in found:
            assert isinstance(device, DeviceProbe) and device.kind in loaded.kinds
