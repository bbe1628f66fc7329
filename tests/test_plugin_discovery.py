"""Plugin discovery through real installed distributions: the first-party backends (installed
editable) and throwaway distributions written to a temp dir on sys.path."""

import time

import pytest

from tilelang_core.errors import PluginError, TargetError
from tilelang_core.plugin import PLUGIN_API, HostView
from tilelang_core.plugin.manager import BrokenPlugin, LoadedPlugin, PluginAPIWarning, PluginManager
from tilelang_core.testing.distributions import PLUGIN_SOURCE, make_plugin_distribution

FIRST_PARTY = {"cuda", "hip", "metal", "ascend", "cpu"}


def install(tmp_path, monkeypatch, kind, source=None, *, api=PLUGIN_API, dist=None, module=None):
    make_plugin_distribution(tmp_path, distribution=dist or f"tilelang-{kind}", entry_name=kind,
                             module=module or f"tilelang_test_{kind}_plugin",
                             source=source or PLUGIN_SOURCE.format(kind=kind, api=tuple(api)))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_first_party_backends_are_discovered_from_their_distributions():
    manager = PluginManager().discover()
    assert FIRST_PARTY <= set(manager.plugins)
    for kind in FIRST_PARTY:
        plugin = manager.plugins[kind]
        assert plugin.distribution == f"tilelang-{kind}"
        assert "entry point" in plugin.origin and f"tilelang-{kind}" in plugin.origin
        assert manager.target_spec(kind).kind == kind
    assert not manager.broken


def test_discovery_is_lazy_until_first_need():
    manager = PluginManager()
    assert manager.plugins == {}
    manager.target_spec("cpu")
    assert "cpu" in manager.plugins


def test_a_throwaway_distribution_is_discovered(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "zeta")
    manager = PluginManager().discover()
    assert isinstance(manager.plugins["zeta"], LoadedPlugin)
    assert manager.plugins["zeta"].distribution == "tilelang-zeta"
    assert manager.target_spec("zeta").archs == ("v1", "v2")


def test_plugin_that_raises_on_import_becomes_broken_and_others_keep_working(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "boom", "raise RuntimeError('driver library missing')\n")
    manager = PluginManager().discover()
    broken = manager.broken["boom"]
    assert isinstance(broken, BrokenPlugin)
    assert "driver library missing" in broken.reason and "Traceback" in broken.traceback
    assert FIRST_PARTY <= set(manager.plugins)  # the rest still load
    with pytest.raises(PluginError, match="driver library missing"):
        manager.target_spec("boom")  # raised only when the user selects it


def test_incompatible_api_major_is_refused_with_both_versions_and_the_fix(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "future", api=(PLUGIN_API[0] + 1, 0))
    install(tmp_path, monkeypatch, "ancient", api=(0, 3))
    manager = PluginManager().discover()
    future = manager.broken["future"].reason
    assert f"{PLUGIN_API[0] + 1}.0" in future and f"{PLUGIN_API[0]}.{PLUGIN_API[1]}" in future
    assert "pip install --upgrade tilelang-core" in future
    assert "pip install --upgrade tilelang-ancient" in manager.broken["ancient"].reason
    assert "future" not in manager.targets


def test_newer_api_minor_loads_with_a_warning(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "newer", api=(PLUGIN_API[0], PLUGIN_API[1] + 1))
    with pytest.warns(PluginAPIWarning, match="newer than this core"):
        manager = PluginManager().discover()
    assert "newer" in manager.plugins and manager.plugins["newer"].notes


def test_two_plugins_claiming_one_kind_make_it_ambiguous(tmp_path, monkeypatch):
    source = PLUGIN_SOURCE.format(kind="dup", api=PLUGIN_API)
    install(tmp_path / "a", monkeypatch, "dup", source, dist="tilelang-dup", module="dup_a")
    install(tmp_path / "b", monkeypatch, "dup2", source.replace('name="dup"', 'name="dup2"'),
            dist="vendor-dup", module="dup_b")
    manager = PluginManager().discover()
    assert manager.conflicts() == {"dup": ["dup", "dup2"]}
    with pytest.raises(PluginError, match="provided by 2 plugins") as info:
        manager.target_spec("dup")
    assert "tilelang-dup" in str(info.value) and "vendor-dup" in str(info.value)
    assert "TILELANG_DISABLE_PLUGINS" in str(info.value)
    assert manager.target_spec("cpu").kind == "cpu"  # other kinds unaffected


def test_disabled_plugin_is_skipped_and_named(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "zeta")
    monkeypatch.setenv("TILELANG_DISABLE_PLUGINS", "zeta")
    manager = PluginManager().discover()
    assert "zeta" not in manager.plugins and manager.disabled == ["zeta"]
    with pytest.raises(TargetError, match="disabled by TILELANG_DISABLE_PLUGINS"):
        manager.target_spec("zeta")


def test_invalid_spec_breaks_only_that_plugin(tmp_path, monkeypatch):
    bad = PLUGIN_SOURCE.format(kind="badspec", api=PLUGIN_API).replace('default_arch="v1"', 'default_arch="v9"')
    install(tmp_path, monkeypatch, "badspec", bad)
    manager = PluginManager().discover()
    assert "default_arch 'v9'" in manager.broken["badspec"].reason
    assert "badspec" not in manager.targets


def test_probe_that_raises_is_reported_not_raised(tmp_path, monkeypatch):
    source = PLUGIN_SOURCE.format(kind="flaky", api=PLUGIN_API) + (
        "\n@hookimpl\ndef tilelang_probe_devices(host):\n    raise OSError('sysfs exploded')\n")
    install(tmp_path, monkeypatch, "flaky", source.replace(
        "@hookimpl\ndef tilelang_probe_devices(host):\n    nodes", "def _unused(host):\n    nodes", 1))
    manager = PluginManager().discover()
    report = manager.probe(HostView.fake(tmp_path))
    assert ("flaky", "probe raised OSError: sysfs exploded; its devices are ignored") in report.failures


def test_probe_that_hangs_is_bounded(tmp_path, monkeypatch):
    source = PLUGIN_SOURCE.format(kind="hang", api=PLUGIN_API).replace(
        "    nodes = host.device_nodes", "    import time; time.sleep(30)\n    nodes = host.device_nodes")
    install(tmp_path, monkeypatch, "hang", source)
    manager = PluginManager().discover()
    start = time.monotonic()
    report = manager.probe(HostView.fake(tmp_path), timeout=0.3)
    assert time.monotonic() - start < 2.0
    assert any(p == "hang" and "did not answer within 0.3 s" in m for p, m in report.failures)


def test_probe_results_are_cached_per_process(tmp_path, monkeypatch):
    source = PLUGIN_SOURCE.format(kind="counted", api=PLUGIN_API).replace(
        "    nodes = host.device_nodes", "    CALLS.append(1)\n    nodes = host.device_nodes")
    install(tmp_path, monkeypatch, "counted", "CALLS = []\n" + source)
    manager = PluginManager().discover()
    host = HostView.fake(tmp_path)
    assert manager.probe(host) is manager.probe(host)
    import tilelang_test_counted_plugin as module

    assert len(module.CALLS) == 1


def test_in_process_registration_for_tests():
    import types

    from tilelang_core.plugin import PluginInfo, TargetKindSpec, hookimpl

    plugin = types.SimpleNamespace(
        tilelang_plugin_info=hookimpl(lambda: PluginInfo("inproc", "0.0.1", PLUGIN_API)),
        tilelang_register_targets=hookimpl(lambda registry: registry.add(TargetKindSpec("inproc", "in-process"))))
    manager = PluginManager()
    loaded = manager.register(plugin, name="inproc")
    assert isinstance(loaded, LoadedPlugin) and manager.target_spec("inproc").description == "in-process"
    manager.unregister("inproc")
    with pytest.raises(TargetError):
        manager.target_spec("inproc")


def test_hookimpl_with_wrong_arguments_is_broken_not_crashing(tmp_path, monkeypatch):
    source = PLUGIN_SOURCE.format(kind="wrongargs", api=PLUGIN_API).replace(
        "def tilelang_probe_devices(host):", "def tilelang_probe_devices(host, bogus):")
    install(tmp_path, monkeypatch, "wrongargs", source)
    manager = PluginManager().discover()
    assert "invalid hook implementations" in manager.broken["wrongargs"].reason


def test_a_second_distribution_claiming_a_backend_entry_point_takes_over_nothing(tmp_path, monkeypatch):
    """Issue 25 item 3: a distribution with an entry point named 'cpu' earlier on sys.path served
    every cpu compile, unannounced. Now neither provider loads and selecting the backend names both."""
    install(tmp_path, monkeypatch, "cpu", PLUGIN_SOURCE.format(kind="cpu", api=PLUGIN_API),
            dist="sneaky-cpu", module="sneaky_cpu_plugin")
    manager = PluginManager().discover()
    assert "cpu" not in manager.plugins
    with pytest.raises(PluginError) as info:
        manager.target_spec("cpu")
    text = str(info.value)
    assert "2 distributions provide the backend entry point 'cpu'" in text
    assert "sneaky-cpu" in text and "tilelang-cpu" in text and "pip uninstall" in text
    assert manager.target_spec("cuda").kind == "cuda"  # other backends unaffected


def test_a_plugin_whose_import_hangs_is_bounded_and_blocks_no_other_target(tmp_path, monkeypatch):
    """Issue 25 item 2: compiling for cpu did not return in 60 s while another plugin's import hung."""
    install(tmp_path, monkeypatch, "stuck", "import time\ntime.sleep(30)\n")
    monkeypatch.setenv("TILELANG_PLUGIN_IMPORT_TIMEOUT", "0.5")
    start = time.monotonic()
    manager = PluginManager().discover()
    assert time.monotonic() - start < 10
    assert "did not finish in 0.5 s" in manager.broken["stuck"].reason
    assert manager.target_spec("cpu").kind == "cpu"
    with pytest.raises(PluginError, match="TILELANG_PLUGIN_IMPORT_TIMEOUT"):
        manager.target_spec("stuck")


def test_a_backend_module_that_does_not_exist_is_named_not_reinstalled(tmp_path, monkeypatch):
    """Issue 24: doctor showed [compiles] for it, and the error said 'reinstall'."""
    from tilelang_core.doctor import collect, render

    source = PLUGIN_SOURCE.format(kind="hollow", api=PLUGIN_API) + (
        "\nfrom tilelang_core.plugin import BackendSpec\n"
        "@hookimpl\ndef tilelang_register_backends(registry):\n"
        "    registry.add(BackendSpec(kind='hollow', factory='tilelang_hollow_missing.pipeline:HollowBackend'))\n")
    install(tmp_path, monkeypatch, "hollow", source)
    from tilelang_core.plugin.manager import set_plugin_manager

    manager = PluginManager().discover()
    set_plugin_manager(manager)
    assert "hollow" in manager.plugins, manager.broken
    with pytest.raises(PluginError, match="the plugin is incomplete") as info:
        manager.backend_class("hollow")
    assert "Reinstall" not in str(info.value)
    text = render(collect(toolchains=False))
    assert "hollow" in text and "BACKEND BROKEN: tilelang_hollow_missing.pipeline: No module named" in text


def test_a_backend_module_that_fails_to_import_is_not_shown_as_compiling(tmp_path, monkeypatch):
    from tilelang_core.doctor import collect, render
    from tilelang_core.plugin.manager import set_plugin_manager

    (tmp_path / "tilelang_crashy_pipeline.py").write_text("import no_such_vendor_runtime\n")
    source = PLUGIN_SOURCE.format(kind="crashy", api=PLUGIN_API) + (
        "\nfrom tilelang_core.plugin import BackendSpec\n"
        "@hookimpl\ndef tilelang_register_backends(registry):\n"
        "    registry.add(BackendSpec(kind='crashy', factory='tilelang_crashy_pipeline:CrashyBackend'))\n")
    install(tmp_path, monkeypatch, "crashy", source)
    set_plugin_manager(PluginManager().discover())
    text = render(collect(toolchains=False))
    assert "BACKEND BROKEN: importing tilelang_crashy_pipeline:CrashyBackend fails: ModuleNotFoundError" in text
    assert "crashy" in text and "crashy   test device crashy  [compiles]" not in text

