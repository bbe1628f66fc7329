"""Entry point of tilelang-cuda: registers the `cuda` target kind and its device probe.

Standard library and tilelang_core.plugin only; the compiler (tilelang_cuda.pipeline) loads on
the first compile for `cuda`.
"""

from tilelang_core.plugin import PLUGIN_API, BackendSpec, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="cuda", version=__version__, api=PLUGIN_API, distribution="tilelang-cuda",
                      description="NVIDIA GPUs (Ampere, Ada, Hopper) through CUDA C++ and nvcc/NVRTC")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="cuda", description="NVIDIA GPU (CUDA)", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        arch_pattern=r"sm_\d{2,3}a?", aliases=("nvidia",), features=("fast_math",),
        capabilities=target.CAPABILITIES, tvm_target="tilelang_cuda.target:tvm_target"))


@hookimpl
def tilelang_register_backends(registry):
    registry.add(BackendSpec(kind="cuda", factory="tilelang_cuda.pipeline:CudaBackend"))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
