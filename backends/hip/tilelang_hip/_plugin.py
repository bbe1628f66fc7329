"""Entry point of tilelang-hip: registers the `hip` target kind and its KFD device probe.

Standard library and tilelang_core.plugin only. No Backend is registered until the HIP backend
issue lands lowering and codegen; selecting `hip` says so plainly.
"""

from tilelang_core.plugin import PLUGIN_API, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="hip", version=__version__, api=PLUGIN_API, distribution="tilelang-hip",
                      description="AMD Instinct and Radeon GPUs through HIP")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="hip", description="AMD GPU (HIP/ROCm)", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        arch_pattern=r"gfx[0-9a-f]{3,4}", aliases=("rocm", "amd"), capabilities=target.CAPABILITIES,
        tvm_target="tilelang_hip.target:tvm_target"))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
