"""pluggy hook specifications: the whole contract between the core and a backend plugin.

Lowering, codegen, build and load are NOT hooks: they are methods of the one Backend chosen per
compile (``tilelang_register_backends`` names its class). Hooks are for what every plugin
contributes at discovery: who it is, its target kinds, and the devices it can see.
"""

from __future__ import annotations

import pluggy

PROJECT = "tilelang_core"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def tilelang_plugin_info():
    """Return a PluginInfo: name, version and the plugin API (major, minor) it was written for."""


@hookspec
def tilelang_register_targets(registry):
    """Call ``registry.add(TargetKindSpec(...))`` for each target kind this plugin provides."""


@hookspec
def tilelang_register_backends(registry):
    """Call ``registry.add(BackendSpec(kind, "module:Class"))`` for each kind this plugin implements."""


@hookspec
def tilelang_probe_devices(host):
    """Return a list of DeviceProbe found on ``host`` (a HostView).

    Read cheap evidence only (device nodes, sysfs, the platform) through ``host``, so tests can
    point it at a fake file tree; never initialize a driver or import a framework; never raise.
    """
