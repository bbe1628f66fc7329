"""Entry point of tilelang-ascend: registers the `ascend` target kind, its backend and its
device-node probe.

Standard library and tilelang_core.plugin only; the backend (tvm, the simulator) is named as a
string and imported on the first compile.
"""

from tilelang_core.plugin import PLUGIN_API, BackendSpec, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="ascend", version=__version__, api=PLUGIN_API, distribution="tilelang-ascend",
                      description="Huawei Ascend NPUs through Ascend C and Bisheng")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="ascend", description="Huawei Ascend NPU", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        aliases=("asc", "npu"), features=target.FEATURES, capabilities=target.CAPABILITIES))


@hookimpl
def tilelang_register_backends(registry):
    registry.add(BackendSpec(kind="ascend", factory="tilelang_ascend.pipeline:AscendBackend"))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
