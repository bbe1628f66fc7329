"""The metal probe reads the platform only (macOS on arm64), on fake hosts."""

from tilelang_core.plugin import HostView
from tilelang_metal.target import METAL_FRAMEWORK, default_device_name, probe


def test_apple_silicon_has_one_gpu_with_the_framework_as_evidence(tmp_path):
    (tmp_path / METAL_FRAMEWORK.lstrip("/")).mkdir(parents=True)
    (device,) = probe(HostView.fake(tmp_path, system="Darwin", machine="arm64"))
    assert device.kind == "metal" and device.count == 1 and METAL_FRAMEWORK in device.evidence


def test_no_device_on_linux_or_intel_macs(tmp_path):
    assert probe(HostView.fake(tmp_path, system="Linux", machine="aarch64")) == []
    assert probe(HostView.fake(tmp_path, system="Darwin", machine="x86_64")) == []


def test_default_device_name_is_none_off_macos():
    import sys

    if sys.platform != "darwin":
        assert default_device_name() is None
