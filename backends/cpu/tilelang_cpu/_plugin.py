"""Entry point of tilelang-cpu: the `cpu` reference backend (the correctness oracle and the
fallback of target='auto' when no accelerator is present). Standard library and
tilelang_core.plugin only; the compiler (tilelang_cpu.pipeline) loads on first compile.
"""

from tilelang_core.plugin import PLUGIN_API, BackendSpec, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    return PluginInfo(name="cpu", version=__version__, api=PLUGIN_API, distribution="tilelang-cpu",
                      description="reference backend: any kernel as loops on the host CPU (TVM LLVM)")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="cpu", description="host CPU (reference backend, TVM LLVM)", archs=target.ARCHS,
        arch_pattern=r"x86-64(-v[234])?|aarch64", aliases=("llvm",), capabilities=target.CAPABILITIES,
        tvm_target="tilelang_cpu.target:tvm_target", accelerator=False))


@hookimpl
def tilelang_register_backends(registry):
    registry.add(BackendSpec(kind="cpu", factory="tilelang_cpu.pipeline:CpuBackend"))


@hookimpl
def tilelang_probe_devices(host):
    return []
