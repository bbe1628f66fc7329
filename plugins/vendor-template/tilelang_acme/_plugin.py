"""Entry point of tilelang-acme (named in pyproject.toml). Keep it light: the standard library and
tilelang_core.plugin only. Heavy code (your lowering, codegen, toolchain) is named as a
"module:Class" string in a BackendSpec and imported on the first compile for your kind.
"""

from tilelang_core.plugin import PLUGIN_API, BackendSpec, PluginInfo, TargetKindSpec, hookimpl

from . import __version__, target


@hookimpl
def tilelang_plugin_info():
    # api: the plugin API this package was written against (same major as tilelang-core's).
    return PluginInfo(name="acme", version=__version__, api=PLUGIN_API, distribution="tilelang-acme",
                      description="ACME accelerators (vendor template)")


@hookimpl
def tilelang_register_targets(registry):
    registry.add(TargetKindSpec(
        kind="acme", description="ACME accelerator", archs=target.ARCHS, default_arch=target.DEFAULT_ARCH,
        aliases=("acme_npu",), capabilities=target.CAPABILITIES))


@hookimpl
def tilelang_register_backends(registry):
    # named as a string: pipeline.py (and tvm with it) is imported on the first compile for acme
    registry.add(BackendSpec(kind="acme", factory="tilelang_acme.pipeline:AcmeBackend"))


@hookimpl
def tilelang_probe_devices(host):
    return target.probe(host)
