"""Entry point of tilelang-metal: registers the `metal` target kind, its backend and its probe.

Standard library and tilelang_core.plugin only; the backend (tvm, the SIMT kit) is named as a
string and imported on the first compile.
"""

from tilelang_core.plugin import PLUGIN_API, BackendSpec, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="metal", version=__version__, api=PLUGIN_API, distribution="tilelang-metal",
                      description="Apple GPUs through Metal Shading Language")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="metal", description="Apple GPU (Metal)", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        aliases=("mps", "apple"), capabilities=target.CAPABILITIES,
        tvm_target="tilelang_metal.target:tvm_target"))


@hookimpl
def tilelang_register_backends(registry):
    registry.add(BackendSpec(kind="metal", factory="tilelang_metal.pipeline:MetalBackend"))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
