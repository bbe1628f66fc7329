"""Make real (throwaway) plugin distributions on disk, for discovery tests.

A folder with ``<name>-<version>.dist-info/{METADATA,entry_points.txt}`` and a module file is an
installed distribution as far as ``importlib.metadata`` is concerned once the folder is on
``sys.path``: discovery goes through the same entry-point machinery as ``pip install``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from ..plugin.manager import ENTRY_POINT_GROUP


def make_plugin_distribution(root: str | Path, *, distribution: str, entry_name: str, module: str,
                             source: str, version: str = "1.0.0") -> Path:
    """Write distribution ``distribution`` whose entry point ``entry_name`` -> ``module`` into
    ``root`` (put ``root`` on sys.path to install it). Returns ``root``."""
    root = Path(root)
    info = root / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_name} = {module}\n")
    (info / "RECORD").write_text("")
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


#: a complete, valid plugin module; format with kind= and api= (a tuple literal)
PLUGIN_SOURCE = '''
from tilelang_core.plugin import DeviceProbe, PluginInfo, TargetKindSpec, hookimpl

@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="{kind}", version="1.0.0", api={api}, distribution="tilelang-{kind}")

@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(kind="{kind}", description="test device {kind}", archs=("v1", "v2"),
                                default_arch="v1"))

@hookimpl
def tilelang_probe_devices(host):
    nodes = host.device_nodes(r"{kind}\\d+")
    return [DeviceProbe(kind="{kind}", count=len(nodes), evidence=tuple(nodes), arch="v2")] if nodes else []
'''
