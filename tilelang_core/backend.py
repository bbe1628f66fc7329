"""The Backend base class: the stages a backend implements for one compile.

One Backend object is created per compile, for one target. The generic driver in
``tilelang_core.jit`` runs its stages in order, keeps every stage's output on the compiled kernel
(``kernel.asm[stage]``) and owns caching; a backend only transforms its input to its output.

Stage contract (Triton's stages dict, typed):

    "tirx"     PrimFunc with tile-op calls, as the frontend produced it   (driver)
    "lowered"  thread-level TIRX IRModule                                   Backend.lower
    "source"   text handed to the toolchain (CUDA C++, MSL, LLVM IR, ...)   Backend.codegen
    "binary"   bytes of a loadable artifact (a shared library)              Backend.build

``Backend.load`` turns the artifact path into a callable module (tvm-ffi).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

from .errors import ConfigError
from .pass_configs import TILELANG_PASS_CONFIGS


@dataclass(frozen=True)
class BackendOptions:
    """Frozen, validated compile options. Backends subclass and add fields.

    ``from_pass_configs`` maps the user's ``pass_configs`` dict onto fields (keys may be given with
    or without the ``tl.`` prefix); unknown keys are an error naming the valid ones (and the
    closest, for a typo). ``RETIRED`` maps keys a backend no longer has to what to use instead.
    """

    RETIRED: ClassVar[Mapping[str, str]] = {}
    #: TileLang keys this backend implements under another field name (key without "tl." -> field)
    ALIASES: ClassVar[Mapping[str, str]] = {}
    #: TileLang's ``tl.disable_data_race_check``: accept a T.Parallel loop that reads an element
    #: another of its iterations writes (refused otherwise: transform/parallel_races.py)
    disable_data_race_check: bool = False

    def check_flags(self, kind: str) -> None:
        """ConfigError naming the option for a field declared ``bool`` that holds anything else
        (a pass config of "1" or 1 would otherwise switch a feature on silently). Backends call it
        from ``__post_init__``; ``kind`` is the backend's name for the message."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type in (bool, "bool") and not isinstance(value, bool):
                raise ConfigError(f"{kind} option {field.name}={value!r} must be True or False")

    def stable_hash(self) -> str:
        payload = json.dumps(dataclasses.asdict(self), sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @classmethod
    def from_pass_configs(cls, pass_configs: Mapping[str, Any] | None):
        """Options from a TileLang-style ``pass_configs`` dict. Keys this backend implements set
        fields; TileLang keys it has no use for are accepted without effect (see pass_configs.py);
        anything else is an error naming the valid keys."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in (pass_configs or {}).items():
            key = getattr(key, "value", key)  # TileLang's PassConfigKey enum members
            name = key[3:] if key.startswith("tl.") else key
            name = name.replace(".", "_")
            name = cls.ALIASES.get(name, name)
            if name in names:
                kwargs[name] = value
            elif name in cls.RETIRED:
                raise ConfigError(f"pass config {key!r} is gone from {cls.__name__}: {cls.RETIRED[name]}")
            elif key not in TILELANG_PASS_CONFIGS and not _another_backends_option(name, cls):
                valid = ", ".join(sorted(names)) or "(none)"
                close = difflib.get_close_matches(name, sorted(names), n=1)
                hint = f" (did you mean 'tl.{close[0]}'?)" if close else ""
                raise ConfigError(f"unknown pass config {key!r} for {cls.__name__}{hint}; keys this backend "
                                  f"uses: {valid}; TileLang's other keys and those of the other installed "
                                  f"backends are accepted and ignored")
        return cls(**kwargs)


def _another_backends_option(name: str, own: type) -> bool:
    """Whether an installed backend other than ``own``'s has the option ``name``: a kernel that
    carries one backend's tuning (``tl.enable_tma_reduce`` for sm_90a) still compiles for the
    others, as it does with TileLang's keys. Asked only for a key ``own`` does not know."""
    from .plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    for kind in sorted(manager.backends):
        try:
            other = manager.backend_class(kind).options_class
        except Exception:  # a broken plugin says so where it is used; here it knows no key
            continue
        if other is not own and (name in {f.name for f in dataclasses.fields(other)} or name in other.ALIASES):
            return True
    return False


def check_data_races(func, options: BackendOptions | None = None) -> None:
    """Refuse a T.Parallel loop in any PrimFunc of ``func`` that reads an element another of its
    iterations writes (transform/parallel_races.py), unless ``options.disable_data_race_check``.
    Every backend runs it before lowering (lower_each does)."""
    from tvm import tirx

    from .transform.parallel_races import check_parallel_races

    if options is not None and options.disable_data_race_check:
        return
    for gvar, f in as_ir_module(func).functions.items():
        if isinstance(f, tirx.PrimFunc):
            check_parallel_races(f, gvar.name_hint)


def lower_each(kind: str, func, lower_one, options: BackendOptions | None = None):
    """Every PrimFunc of ``func`` (a PrimFunc or an IRModule) through ``lower_one(prim_func)``,
    as a new IRModule; anything else in the module is refused, naming it. check_data_races runs
    first."""
    import tvm
    from tvm import tirx

    from .errors import LoweringError

    check_data_races(func, options)
    out = {}
    for gvar, f in as_ir_module(func).functions.items():
        if not isinstance(f, tirx.PrimFunc):
            raise LoweringError(f"the {kind} backend lowers PrimFuncs only, got {type(f).__name__} "
                                f"'{gvar.name_hint}'")
        out[gvar] = lower_one(f)
    return tvm.IRModule(out)


def checked_arch(target, kind: str, archs, default: str) -> str:
    """The target's arch (``default`` when it names none), refused clearly when unsupported."""
    from .errors import CompileError

    arch = getattr(target, "arch", None) or default
    if arch not in archs:
        raise CompileError(f"{kind} arch {arch!r} is not supported; use one of {', '.join(archs)}")
    return arch


def as_ir_module(func):
    """A PrimFunc (or an IRModule, returned as is) as a one-function IRModule, named by its
    ``global_symbol`` (``main`` when it has none), which is what TVM's builds take."""
    import tvm

    if isinstance(func, tvm.IRModule):
        return func
    name = func.attrs.get("global_symbol") if func.attrs is not None else None
    if name is None:
        name = "main"
        func = func.with_attr("global_symbol", name)
    return tvm.IRModule({str(name): func})


class Backend:
    """Base class of every backend. Subclasses set ``kind`` and implement the stages."""

    kind: ClassVar[str] = ""
    #: torch device type the compiled kernel runs on ("cpu", "cuda"; HIP kernels also take
    #: "cuda" tensors). The JIT refuses tensors on another device before launch. An instance may
    #: set its own from its target's features (the JIT reads it from the instance).
    device_type: ClassVar[str | None] = None
    #: True when the loaded entry function is TVM's packed-API wrapper (MakePackedAPI), which
    #: checks ndim, dtype, shape, strides, device type and id itself and raises before running
    #: anything; the JIT's launcher then skips those checks per call and runs them only to explain
    #: a refusal (jit/launcher.py). Leave False for an entry function of the backend's own.
    entry_checks_arguments: ClassVar[bool] = False
    #: the entry function also refuses data pointers less aligned than the kernel assumes (the
    #: launcher then skips its per-call alignment test, ~60 ns a tensor; a refused call retries
    #: through the slow path, which stages a misaligned tensor in an aligned copy)
    entry_checks_alignment: ClassVar[bool] = False
    #: builds programs of several ``T.Kernel`` blocks run in order, with ``T.alloc_global``
    #: workspaces shared by them (tilelang_core.transform.program_kernels); else the driver refuses
    #: such programs, naming the construct
    multi_kernel_programs: ClassVar[bool] = False
    #: builds tensors viewing memory at an address computed in the kernel (``T.make_tensor`` of a
    #: pointer-table entry); else the driver refuses them
    address_tensors: ClassVar[bool] = False
    options_class: ClassVar[type[BackendOptions]] = BackendOptions
    #: file suffix of the artifact ``build`` returns
    binary_suffix: ClassVar[str] = ".so"
    #: stages produced only on request (``emit``), because every compile would pay for them:
    #: e.g. ("ptx", "sass") on CUDA, for ``python -m tilelang_core compile --emit sass``
    on_demand_stages: ClassVar[tuple[str, ...]] = ()

    def __init__(self, target):
        self.target = target

    # -- stages ---------------------------------------------------------------------------------
    def make_options(self, pass_configs: Mapping[str, Any] | None = None) -> BackendOptions:
        return self.options_class.from_pass_configs(pass_configs)

    def lower(self, func, options: BackendOptions):
        """tirx PrimFunc (tile ops) -> thread-level IRModule."""
        raise NotImplementedError(f"backend {self.kind!r} does not implement lowering yet")

    def codegen(self, mod, options: BackendOptions) -> str:
        """Lowered IRModule -> source text for the toolchain."""
        raise NotImplementedError(f"backend {self.kind!r} does not implement codegen yet")

    def build(self, mod, source: str, options: BackendOptions, workdir: Path) -> bytes:
        """Source (and the lowered module, for backends that build from IR) -> artifact bytes."""
        raise NotImplementedError(f"backend {self.kind!r} does not implement build yet")

    def load(self, path: Path):
        """Artifact on disk -> a tvm-ffi module whose entry function launches the kernel."""
        raise NotImplementedError(f"backend {self.kind!r} does not implement loading yet")

    def emit(self, stage: str, source: str, options: BackendOptions, workdir: Path) -> str:
        """Text of an on-demand stage (one of ``on_demand_stages``) from the kernel's source."""
        raise NotImplementedError(f"backend {self.kind!r} produces no stage {stage!r} on request")

    # -- identity, for cache keys ---------------------------------------------------------------
    def toolchain_version(self) -> str:
        """A string that changes whenever the toolchain would produce different binaries."""
        return ""
