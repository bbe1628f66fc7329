"""The public plugin API of tilelang-core: everything a backend package may import.

A backend's entry-point module (``tilelang_<name>._plugin``) imports only the standard library
and this package. Minimal plugin::

    from tilelang_core.plugin import PLUGIN_API, PluginInfo, TargetKindSpec, BackendSpec, hookimpl

    @hookimpl
    def tilelang_plugin_info():
        return PluginInfo(name="acme", version="0.1.0", api=PLUGIN_API, distribution="tilelang-acme")

    @hookimpl
    def tilelang_register_targets(registry):
        registry.add(TargetKindSpec(kind="acme", description="ACME accelerators"))

See docs/writing-a-backend.md and plugins/vendor-template/.
"""

from __future__ import annotations

from .hookspecs import hookimpl
from .host import HostView, visible_indices
from .specs import PLUGIN_API, BackendSpec, DeviceProbe, PluginInfo, TargetKindSpec

__all__ = [
    "PLUGIN_API", "BackendSpec", "DeviceProbe", "HostView", "PluginInfo", "TargetKindSpec",
    "hookimpl", "visible_indices",
    # from .manager, imported on first use
    "PluginManager", "BrokenPlugin", "LoadedPlugin", "ProbeReport", "get_plugin_manager",
    "set_plugin_manager", "get_backend",
]

_MANAGER_NAMES = {"PluginManager", "BrokenPlugin", "LoadedPlugin", "ProbeReport", "get_plugin_manager",
                  "set_plugin_manager", "get_backend", "PluginAPIWarning", "ENTRY_POINT_GROUP"}


def __getattr__(name: str):
    if name in _MANAGER_NAMES:
        from . import manager

        return getattr(manager, name)
    raise AttributeError(f"module 'tilelang_core.plugin' has no attribute {name!r}")
