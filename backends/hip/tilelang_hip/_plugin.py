"""Entry point of tilelang-hip: registers the `hip` target kind and its KFD device probe.

Standard library and tilelang_core.plugin only; the compiler (tilelang_hip.pipeline) loads on
the first compile for `hip`.
"""

from tilelang_core.plugin import PLUGIN_API, BackendSpec, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="hip", version=__version__, api=PLUGIN_API, distribution="tilelang-hip",
                      description="AMD Instinct (MFMA, wave64) and Radeon RDNA3 (WMMA, wave32) GPUs through HIP C++ and clang")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="hip", description="AMD GPU (HIP/ROCm)", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        arch_pattern=r"gfx[0-9a-f]{3,4}", aliases=("rocm", "amd"), capabilities=target.CAPABILITIES,
        tvm_target="tilelang_hip.target:tvm_target"))


@hookimpl
def tilelang_register_backends(registry):
    registry.add(BackendSpec(kind="hip", factory="tilelang_hip.pipeline:HipBackend"))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
