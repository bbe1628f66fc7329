"""``compile``: the generic driver that runs a Backend's stages and owns caching.

    tirx PrimFunc --Backend.lower--> lowered IRModule --Backend.codegen--> source
      --Backend.build--> artifact bytes --(disk cache)--> Backend.load --> JITKernel

Every stage's text lands in ``kernel.asm[stage]`` and, with ``TILELANG_DUMP_IR=dir``, in
``dir/<kernel>-<sha256(tirx)[:12]>/<n>-<stage>.txt``; a fresh build there also leaves
``passes/NNN_<pass>.py`` (the IR after every TVM pass) and ``pass-timing.txt``. Compiles are memoized in memory by content key (two
``compile`` calls of the same PrimFunc share one loaded module) and on disk (``cache.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from .. import config
from ..errors import CompileError, ConfigError, ConfigValueError, NoDeviceError, NoToolchainError, TileLangError
from ..runtime import entry_function
from .cache import DiskCache, make_key
from .params import read_assumes, read_params
from .unused_params import drop_unused_tensor_params

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import JITKernel

STAGES = ("tirx", "lowered", "source")

# content key -> (artifact path, loaded function, asm, keepalive); a kernel object per out_idx
# is cheap to make from it
_memory: dict[str, tuple] = {}
_memory_lock = threading.Lock()


def kernel_settings(func, name: str, out_idx, pass_configs, compile_flags):
    """``(out_idx, pass_configs)`` with the settings ``func`` carries as attributes
    (language/annotations.py) and ``compile_flags`` folded in (``compile``'s docstring)."""
    from ..language.annotations import COMPILE_FLAGS_ATTR, OUT_IDX_ATTR, PASS_CONFIGS_ATTR
    from ..pass_configs import DEVICE_COMPILE_FLAGS, compile_flag_list

    attrs = getattr(func, "attrs", None) or {}
    if OUT_IDX_ATTR in attrs:
        declared = [int(i) for i in attrs[OUT_IDX_ATTR]]
        if out_idx is not None:
            raise ConfigValueError(f"Out index conflict: kernel '{name}' returns its outputs (T.empty, out "
                                   f"indices {declared}) and out_idx={out_idx!r} was given too; drop out_idx")
        out_idx = declared
    merged = {}
    if PASS_CONFIGS_ATTR in attrs:
        merged.update({str(k): _python(v) for k, v in attrs[PASS_CONFIGS_ATTR].items()})
    merged.update(pass_configs or {})
    flags = [str(f) for f in attrs.get(COMPILE_FLAGS_ATTR, [])] if COMPILE_FLAGS_ATTR in attrs else []
    if compile_flags is not None:
        given = compile_flag_list(compile_flags)
        if given is None:
            raise ConfigError(f"compile_flags of kernel '{name}' must be strings, got {compile_flags!r}")
        flags += given
    if flags:
        key = next((k for k in merged if str(getattr(k, "value", k)) == DEVICE_COMPILE_FLAGS), None)
        earlier = list(merged.pop(key)) if key is not None else []
        merged[DEVICE_COMPILE_FLAGS] = tuple(earlier + flags)
    return out_idx, (merged or None)


def _python(value):
    """A TVM container value as the Python one (an Array of flags -> tuple)."""
    return tuple(_python(v) for v in value) if type(value).__name__ == "Array" else value


def clear_memory_cache() -> None:
    """Forget in-process compiled modules (the disk cache is untouched). For tests and tuners."""
    with _memory_lock:
        _memory.clear()


def compile(func, out_idx: Sequence[int] | int | None = None, target: Any = "auto",
            pass_configs: Mapping[str, Any] | None = None, *, execution_backend: str | None = None,
            target_host: Any = None, verbose: bool | None = None, compile_flags=None,
            _backend: Any = None) -> JITKernel:
    """Compile a tirx PrimFunc for ``target`` and return a callable ``JITKernel``.

    ``out_idx`` lists the parameters the kernel allocates and returns (negative counts from the
    end). ``pass_configs`` become the backend's validated options. ``execution_backend`` is
    TileLang's choice of runtime adapter ("auto", "tvm_ffi", "cython", "nvrtc", "torch",
    "cutedsl"): every backend here launches through its own tvm-ffi library, which takes both
    calling conventions of those adapters (tensors, and data pointers for ``T.ptr`` parameters),
    so the name is checked and has no other effect; an unknown one is refused. ``target_host``
    other than None is refused; ``verbose`` is accepted (``TILELANG_DUMP_IR`` shows every stage).
    ``compile_flags`` (a list of strings, or one string) go to the device compiler (the
    ``tl.device_compile_flags`` pass config: nvcc's command line on cuda, clang's on hip).
    Settings the kernel carries (``T.annotate_pass_configs``, ``T.annotate_compile_flags``, and
    the outputs of an eager-style ``T.prim_func``, TileLang's function attributes) apply too;
    ``pass_configs`` given here win over the kernel's, and ``out_idx`` given for a kernel that
    declares its outputs is an error (ConfigValueError, "Out index conflict").
    ``_backend`` (internal: tests, tuners) is a Backend instance, or a factory
    ``f(target) -> Backend``, used instead of the plugin lookup.

    Example::

        import tilelang_core as tl
        kernel = tl.compile(add, out_idx=[-1], target="cpu")
        c = kernel(a, b)
    """
    if not hasattr(func, "params") or not hasattr(func, "script"):
        hint = (" (call the @jit function with its compile-time arguments first)"
                if hasattr(func, "fn") else "")
        raise ConfigError(f"compile() expects a T.prim_func, got {type(func).__name__}{hint}")
    from .decorator import check_tilelang_options

    check_tilelang_options("compile", execution_backend, target_host)
    del verbose
    name = _kernel_name(func)
    out_idx, pass_configs = kernel_settings(func, name, out_idx, pass_configs, compile_flags)
    target_obj, backend = _resolve(target, _backend)
    check_program_support(func, backend, name)
    options = backend.make_options(pass_configs)
    tirx_text = func.script(show_meta=True)
    parts = _key_parts(tirx_text, target_obj, backend, options)
    key = make_key(parts)
    params = read_params(func, out_idx, name)
    assumes, checked = read_assumes(func)  # checked at each call, so the backends may rely on them
    func, unused = drop_unused_tensor_params(func, frozenset(p.index for p in params if p.is_output),
                                             {n for a in assumes for n in a.vars})
    params = tuple(dataclasses.replace(p, unused=True) if p.index in unused else p for p in params)
    from ..language.assumes import CHECKED_ASSUMES, HOST_ASSUMES  # (tvm is loaded: func is a PrimFunc)

    if func.attrs is not None and HOST_ASSUMES in func.attrs:
        func = func.without_attr(HOST_ASSUMES)
        if checked:
            func = func.with_attr(CHECKED_ASSUMES, checked)
    device_type = getattr(backend, "device_type", None)
    entry_checks = bool(getattr(backend, "entry_checks_arguments", False))
    entry_aligns = entry_checks and bool(getattr(backend, "entry_checks_alignment", False))

    with _memory_lock:
        hit = _memory.get(key)
    if hit is None:
        try:
            hit = _compile_and_load(func, name, tirx_text, backend, options, key, parts)
        except _SourceOnly as only:  # no binary, nothing cached; the first call says why
            hit = (None, only.error, only.asm, None, False, only.timings)
        with _memory_lock:
            hit = _memory.setdefault(key, hit)
    path, function, asm, keepalive, from_cache, timings = hit
    from .kernel import JITKernel  # numpy/torch load with the first kernel, not with `import`

    kernel = JITKernel(name=name, params=params, function=function, artifact_path=path, asm=asm,
                       target=target_obj, key=key, entry=name, device_type=device_type,
                       entry_checks=entry_checks, entry_aligns=entry_aligns,
                       from_cache=from_cache, keepalive=keepalive, timings=timings,
                       on_demand_stages=backend.on_demand_stages,
                       produce_stage=functools.partial(_produce_stage, backend, options, name, asm),
                       assumes=assumes)
    _dump_ir(name, tirx_text, asm)
    return kernel


class _SourceOnly(Exception):
    """The build stage lacked its toolchain (NoToolchainError): the stages before it stand."""

    def __init__(self, asm, error, timings):
        super().__init__(str(error))
        self.asm, self.error, self.timings = asm, error, timings


def _produce_stage(backend, options, name: str, asm: Mapping[str, str], stage: str) -> str:
    """An on-demand stage of a compiled kernel (``kernel.asm["sass"]``), from its source."""
    with tempfile.TemporaryDirectory(prefix=f"tilelang-{stage}-{name}-") as workdir:
        return _stage(stage, backend, name, backend.emit, stage, asm["source"], options, Path(workdir))


def check_program_support(func, backend, name: str) -> None:
    """Refuse, naming the construct, what ``backend`` declares it cannot build: programs of
    several ``T.Kernel`` blocks or with ``T.alloc_global`` workspaces
    (``Backend.multi_kernel_programs``), and tensors made from addresses inside a kernel
    (``T.make_tensor(ptrs[i], ...)``, ``Backend.address_tensors``)."""
    import tvm_ffi
    from tvm import tirx

    from ..transform.program_kernels import count_kernels

    kind = getattr(backend, "kind", type(backend).__name__)
    if not getattr(backend, "multi_kernel_programs", False):
        kernels, workspaces = count_kernels(func)
        if kernels > 1 or workspaces:
            what = (f"{kernels} T.Kernel blocks" if kernels > 1 else "") + \
                (" and " if kernels > 1 and workspaces else "") + \
                (f"{workspaces} T.alloc_global workspace{'s' if workspaces > 1 else ''}" if workspaces else "")
            raise CompileError(f"kernel '{name}' has {what}; the {kind} backend builds programs of one "
                               f"T.Kernel without T.alloc_global only. Compile for cuda or cpu, or split "
                               f"it into one kernel per T.Kernel and pass the workspace as a tensor "
                               f"parameter")
    if not getattr(backend, "address_tensors", False):
        found = []

        def on_decl(decl):  # the frontend declares global buffers only for T.make_tensor
            if str(decl.buffer.ty.storage_scope) == "global":
                found.append(decl.buffer)

        tvm_ffi.structural_walk(func.body, [(tirx.DeclBuffer, on_decl)])
        if found:
            raise CompileError(f"kernel '{name}': the {kind} backend cannot view memory at an address "
                               f"(T.make_tensor of a pointer-table entry: tensor '{found[0].name}'); "
                               f"compile for cuda or cpu, or pass the tensors as parameters")


def _kernel_name(func) -> str:
    attrs = getattr(func, "attrs", None)
    if attrs is not None and "global_symbol" in attrs:
        return str(attrs["global_symbol"])
    return "main"


def _resolve(target, backend):
    if backend is not None:
        if hasattr(backend, "lower"):  # an instance
            return backend.target, backend
        if isinstance(target, str):
            from ..target import resolve_target

            target = resolve_target(target)
        return target, backend(target)
    from ..plugin import get_backend
    from ..target import resolve_target

    target = resolve_target(target)
    return target, get_backend(target)


def _versions(backend) -> dict[str, str]:
    import sys

    import tvm
    import tvm_ffi

    core = sys.modules["tilelang_core"]
    cls = type(backend)
    top = sys.modules.get(cls.__module__.split(".")[0])
    plugin_version = str(getattr(backend, "version", None) or getattr(top, "__version__", ""))
    return {"core": str(getattr(core, "__version__", "")), "tvm": str(tvm.__version__),
            "tvm_ffi": str(tvm_ffi.__version__), "backend": f"{cls.__module__}.{cls.__qualname__}",
            "plugin": plugin_version, "code": _code_fingerprint(core.__file__) + _code_fingerprint(
                getattr(top, "__file__", None)), "installed_plugins": _installed_plugins()}


def _installed_plugins() -> str:
    """Every plugin imported in this process, with its distribution and version: any of them ran
    code at import (one could patch code generation), so a kernel built beside a different set
    must not be served from a shared cache folder to this one."""
    from ..plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    loaded = [f"{p.name}:{p.distribution}=={p.dist_version}" for p in manager.plugins.values()]
    broken = [f"{b.name}:{b.distribution}(broken)" for b in manager.broken.values()]
    return ",".join(sorted(loaded + broken))


@functools.lru_cache(maxsize=None)
def _code_fingerprint(package_init: str | None) -> str:
    """Size and mtime of every .py file of a package: a cached kernel built by other compiler
    code must not be served. Versions cover releases; this covers editable installs, where the
    code changes under the same version (seen: a layout fix kept serving the old kernel).
    Computed once per process (~1 ms)."""
    if not package_init:
        return ""
    digest = hashlib.sha256()
    root = Path(package_init).parent
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def _key_parts(tirx_text: str, target, backend, options) -> dict[str, str]:
    return {"tirx": hashlib.sha256(tirx_text.encode()).hexdigest(), "target": str(target),
            "options": options.stable_hash(), "toolchain": str(backend.toolchain_version()),
            **_versions(backend)}


def _compile_and_load(func, name, tirx_text, backend, options, key, parts):
    cache = DiskCache.from_config()
    if cache is None:
        return _build_to_tempdir(func, name, tirx_text, backend, options)
    if cache.readonly:  # a shared, pre-warmed folder: use what is there, build the rest privately
        entry = cache.lookup(key)
        if entry is not None:
            try:
                return entry.artifact_path, _load(backend, entry.artifact_path, name), entry.asm, None, True, {}
            except CompileError:
                pass  # unusable here, and not ours to evict
        return _build_to_tempdir(func, name, tirx_text, backend, options)
    for attempt in range(2):
        entry = cache.lookup(key)
        from_cache = entry is not None
        timings = {}
        if entry is None:
            with cache.lock(key):
                entry = cache.lookup(key, evict_corrupt=True)
                from_cache = entry is not None
                if entry is None:
                    asm, binary, timings = _run_stages(func, name, tirx_text, backend, options)
                    meta = {"kernel": name, "key_parts": parts}
                    entry = cache.publish(key, artifact=binary, suffix=backend.binary_suffix,
                                          asm=asm, meta=meta)
        try:
            function = _load(backend, entry.artifact_path, name)
        except CompileError:
            # verified bytes that still do not load: built by a broken toolchain or for another
            # machine sharing the folder; rebuild once, then report
            if attempt:
                raise
            with cache.lock(key):
                cache.evict(key)
            continue
        return entry.artifact_path, function, entry.asm, None, from_cache, timings
    raise AssertionError("unreachable")


def _build_to_tempdir(func, name, tirx_text, backend, options):
    asm, binary, timings = _run_stages(func, name, tirx_text, backend, options)
    folder = tempfile.TemporaryDirectory(prefix=f"tilelang-{name}-")
    path = Path(folder.name) / f"kernel{backend.binary_suffix}"
    path.write_bytes(binary)
    return path, _load(backend, path, name), asm, folder, False, timings


def _load(backend, path: Path, name: str):
    """The kernel's entry function, or the NoDeviceError saying why this machine cannot run it
    (the kernel is still returned: its stages can be read and exported; calling it raises)."""
    try:
        module = backend.load(path)
    except NoDeviceError as exc:
        return exc
    except TileLangError:
        raise
    except Exception as exc:
        raise CompileError(f"backend '{backend.kind}' could not load kernel '{name}' from {path}: "
                           f"{exc}", log=traceback.format_exc()) from exc
    return entry_function(module, name, kernel=name)


def _stage(stage: str, backend, name: str, fn: Callable, *args):
    try:
        return fn(*args)
    except TileLangError:
        raise
    except Exception as exc:  # a toolchain or TVM failure: keep the whole trace as the log
        raise CompileError(f"backend '{backend.kind}' failed in stage '{stage}' of kernel "
                           f"'{name}': {type(exc).__name__}: {exc}",
                           log=traceback.format_exc()) from exc


def _run_stages(func, name, tirx_text, backend, options):
    folder = config.dump_ir_dir()
    if folder is None:
        return _run_stages_plain(func, name, tirx_text, backend, options)
    # TILELANG_DUMP_IR: run the stages under pass instruments that dump the IR after every TVM
    # pass and time them. Backends that open their own PassContext must pass on
    # PassContext.current().instruments for this to reach their passes; passes a backend calls as
    # plain functions reach them through tilelang_core.transform.instrumented.run_pass.
    import tvm
    from tvm.ir.instrument import DumpIR, PassTimingInstrument

    out = folder / f"{name}-{hashlib.sha256(tirx_text.encode()).hexdigest()[:12]}"
    timing = PassTimingInstrument()
    current = tvm.transform.PassContext.current()
    ctx = tvm.transform.PassContext(opt_level=current.opt_level, config=dict(current.config),
                                    instruments=[DumpIR(out / "passes"), timing])
    with ctx:
        result = _run_stages_plain(func, name, tirx_text, backend, options)
        report = timing.render()
    out.mkdir(parents=True, exist_ok=True)
    (out / "pass-timing.txt").write_text(report)
    return result


def _run_stages_plain(func, name, tirx_text, backend, options):
    asm, timings = {"tirx": tirx_text}, {}
    t0 = time.perf_counter()
    lowered = _stage("lowered", backend, name, backend.lower, func, options)
    asm["lowered"] = lowered.script() if hasattr(lowered, "script") else str(lowered)
    t1 = time.perf_counter()
    source = _stage("source", backend, name, backend.codegen, lowered, options)
    asm["source"] = source if isinstance(source, str) else str(source)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"tilelang-build-{name}-") as workdir:
        try:
            binary = _stage("binary", backend, name, backend.build, lowered, source, options,
                            Path(workdir))
        except NoToolchainError as exc:  # cross-compiling: every stage up to the source stands
            timings.update(lowered=t1 - t0, source=t2 - t1)
            raise _SourceOnly(asm, exc, timings) from None
    t3 = time.perf_counter()
    if not isinstance(binary, (bytes, bytearray)) or not binary:
        raise CompileError(f"backend '{backend.kind}' build() of kernel '{name}' returned "
                           f"{type(binary).__name__}, not the artifact's bytes")
    timings.update(lowered=t1 - t0, source=t2 - t1, binary=t3 - t2)
    return asm, bytes(binary), timings


def _dump_ir(name: str, tirx_text: str, asm: Mapping[str, str]) -> None:
    folder = config.dump_ir_dir()
    if folder is None:
        return
    out = folder / f"{name}-{hashlib.sha256(tirx_text.encode()).hexdigest()[:12]}"
    out.mkdir(parents=True, exist_ok=True)
    for i, (stage, text) in enumerate(asm.items()):
        (out / f"{i}-{stage}.txt").write_text(text)


class LoweredArtifact:
    """What :func:`lower` returns: the generated source and every stage (TileLang's
    ``CompiledArtifact``: ``artifact.kernel_source``)."""

    def __init__(self, kernel: JITKernel):
        self.kernel = kernel
        self.kernel_source = kernel.get_kernel_source()
        self.asm = kernel.asm
        self.params = kernel.params

    def __repr__(self) -> str:
        return f"LoweredArtifact({self.kernel.name}, target={self.kernel.target})"


def lower(func, target: Any = "auto", target_host: Any = None, runtime_only: bool = False,
          enable_host_codegen: bool = False, enable_device_compile: bool = False,
          pass_configs: Mapping[str, Any] | None = None) -> LoweredArtifact:
    """TileLang's ``tilelang.lower(func, target=...)``: compile ``func`` and return its source.

    ``target_host``, ``runtime_only`` and the ``enable_*`` flags are TileLang's staging knobs;
    here every stage always runs (the binary too), so they change nothing.

    Example::

        src = tilelang.lower(add, target="cuda:sm_90a").kernel_source
    """
    return LoweredArtifact(compile(func, target=target, pass_configs=pass_configs))


def par_compile(funcs, out_idx: Sequence[int] | int | None = None, execution_backend: str | None = None,
                target: Any = "auto", target_host: Any = None, verbose: bool | None = None,
                pass_configs: Mapping[str, Any] | None = None, compile_flags=None, num_workers: int | None = None,
                ignore_error: bool = False) -> list:
    """TileLang's ``tilelang.par_compile``: :func:`compile` of each PrimFunc with the same options,
    in order. They compile one after another here (lowering holds the GIL; the autotuner's process
    pool is the parallel path); ``num_workers`` is accepted for the signature. ``ignore_error=True``
    puts None (and a warning) where one fails instead of raising."""
    del num_workers
    return compile_each(list(funcs), lambda f: compile(
        f, out_idx=out_idx, target=target, pass_configs=pass_configs, execution_backend=execution_backend,
        target_host=target_host, verbose=verbose, compile_flags=compile_flags), "the PrimFunc", ignore_error)


def compile_each(items, compile_one, what: str, ignore_error: bool) -> list:
    """``[compile_one(item)]``; with ``ignore_error`` a failure is a warning naming ``what`` and
    the item, and None in its place."""
    import warnings

    kernels = []
    for item in items:
        try:
            kernels.append(compile_one(item))
        except Exception as exc:  # noqa: BLE001 - reported, or raised when not ignoring errors
            if not ignore_error:
                raise
            name = getattr(item, "__name__", None) or repr(item)[:80]
            warnings.warn(f"par_compile of {what} {name} failed: {exc}", RuntimeWarning, stacklevel=3)
            kernels.append(None)
    return kernels
