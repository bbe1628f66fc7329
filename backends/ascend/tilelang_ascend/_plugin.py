"""Entry point of tilelang-ascend: registers the `ascend` target kind and its device-node probe.

Standard library and tilelang_core.plugin only. No Backend is registered until the Ascend backend
issue lands lowering and codegen; selecting `ascend` says so plainly.
"""

from tilelang_core.plugin import PLUGIN_API, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="ascend", version=__version__, api=PLUGIN_API, distribution="tilelang-ascend",
                      description="Huawei Ascend NPUs through Ascend C and Bisheng")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="ascend", description="Huawei Ascend NPU", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        aliases=("asc", "npu"), capabilities=target.CAPABILITIES))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
