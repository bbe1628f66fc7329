"""The template's probe, on fake device trees: what a vendor writes for their own probe."""

from tilelang_core.plugin import HostView
from tilelang_core.plugin.manager import PluginManager
from tilelang_core.target import Target, resolve_target


def fake_host(tmp_path, n, environ=None, model=None):
    (tmp_path / "dev").mkdir(exist_ok=True)
    for i in range(n):
        (tmp_path / "dev" / f"acme{i}").write_text("")
    if model:
        (tmp_path / "sys/class/acme/acme0").mkdir(parents=True, exist_ok=True)
        (tmp_path / "sys/class/acme/acme0/model").write_text(model + "\n")
    return HostView.fake(tmp_path, environ or {})


def test_boards_are_counted_and_the_model_gives_the_arch(tmp_path):
    from tilelang_acme.target import probe

    (device,) = probe(fake_host(tmp_path, 3, model="acme2"))
    assert device.count == 3 and device.arch == "acme2" and "/dev/acme2" in device.evidence


def test_visible_devices_variable_narrows_the_count(tmp_path):
    from tilelang_acme.target import probe

    (device,) = probe(fake_host(tmp_path, 4, {"ACME_VISIBLE_DEVICES": "1,3"}))
    assert device.count == 2


def test_installed_template_is_picked_by_auto_when_a_board_is_present(tmp_path):
    manager = PluginManager().discover()
    assert manager.plugins["acme"].distribution == "tilelang-acme"
    target = resolve_target("auto", host=fake_host(tmp_path, 1, model="acme2"), manager=manager, environ={})
    assert target == Target("acme", "acme2")
