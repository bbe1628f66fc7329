"""Targets: what to compile for.

``Target`` is a frozen value: kind (``cuda``), arch (``sm_90a``), features and attrs. It parses
from strings (``"cuda"``, ``"cuda:sm_90a"``, ``"cuda:sm_90a+fast_math"``) and dicts
(``{"kind": "hip", "arch": "gfx942"}``), prints back to the same string, and can be made the
default for a block of code::

    with Target("cuda:sm_90a"):
        kernel = T.compile(func)          # target="auto" picks sm_90a here

``resolve_target("auto")`` follows DESIGN.md: explicit target or active ``with`` block, then
``TILELANG_TARGET``, then the device probes in preference order, then the cpu reference backend
(with a one-time notice; ``TILELANG_AUTO_STRICT=1`` makes that an error).
"""

from __future__ import annotations

import contextvars
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import config
from .errors import TargetError, user_stacklevel


class NoAcceleratorNotice(UserWarning):
    """target='auto' found no accelerator and runs on the cpu reference backend."""


class SeveralDevicesWarning(UserWarning):
    """target='auto' found devices of several kinds and took the first in preference order."""


class MissingPluginWarning(UserWarning):
    """A device is present but the package that drives it is not installed."""


_current: contextvars.ContextVar[tuple["Target", ...]] = contextvars.ContextVar("tilelang_target",
                                                                                default=())


def _freeze_attrs(attrs) -> tuple[tuple[str, Any], ...]:
    if not attrs:
        return ()
    items = attrs.items() if isinstance(attrs, Mapping) else attrs
    return tuple(sorted((str(k), v) for k, v in items))


@dataclass(frozen=True)
class Target:
    """A compilation target. ``Target("cuda:sm_90a")`` and ``Target("cuda", "sm_90a")`` are equal."""

    kind: str
    arch: str | None = None
    features: frozenset[str] = field(default_factory=frozenset)
    attrs: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        kind, arch, features = self.kind, self.arch, set(self.features)
        if not isinstance(kind, str) or not kind:
            raise TargetError(f"target kind must be a non-empty string, got {kind!r}")
        if ":" in kind or "+" in kind:
            parsed = _split(kind)
            if arch is not None and parsed[1] is not None and parsed[1] != arch:
                raise TargetError(f"target {kind!r} gives arch {parsed[1]!r} but arch={arch!r} was passed too")
            kind, arch, features = parsed[0], arch or parsed[1], features | parsed[2]
        object.__setattr__(self, "kind", kind.strip().lower())
        object.__setattr__(self, "arch", arch.strip() if isinstance(arch, str) and arch.strip() else None)
        object.__setattr__(self, "features", frozenset(features))
        object.__setattr__(self, "attrs", _freeze_attrs(self.attrs))

    # -- text and dict forms --------------------------------------------------------------------
    def __str__(self) -> str:
        text = self.kind + (f":{self.arch}" if self.arch else "")
        return text + "".join(f"+{f}" for f in sorted(self.features))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.arch:
            out["arch"] = self.arch
        if self.features:
            out["features"] = sorted(self.features)
        if self.attrs:
            out["attrs"] = dict(self.attrs)
        return out

    @property
    def attr(self) -> dict[str, Any]:
        return dict(self.attrs)

    @classmethod
    def parse(cls, value: "Target | str | Mapping[str, Any]", *, validate: bool = True) -> "Target":
        """Parse a string or dict; with ``validate`` check kind, arch and features against the
        installed plugins (resolving aliases like ``asc`` -> ``ascend``)."""
        if isinstance(value, Target):
            target = value
        elif isinstance(value, str):
            if value.strip().lower() == "auto":
                raise TargetError("'auto' is not a concrete target: call resolve_target('auto')")
            target = cls(value.strip())
        elif isinstance(value, Mapping):
            unknown = set(value) - {"kind", "arch", "features", "attrs"}
            if unknown or "kind" not in value:
                raise TargetError(f"a target dict has keys kind (required), arch, features, attrs; "
                                  f"got {sorted(value)}")
            features = value.get("features") or ()
            if isinstance(features, str):
                features = [features]
            target = cls(str(value["kind"]), value.get("arch"), frozenset(features), value.get("attrs") or ())
        elif type(value).__module__.startswith("tvm.target"):
            target = cls(*_from_tvm_target(value))
        else:
            raise TargetError(f"cannot make a target from {type(value).__name__} {value!r}; "
                              "use a string like 'cuda:sm_90a' or a dict")
        return target.validated() if validate else target

    def validated(self) -> "Target":
        from .plugin.manager import get_plugin_manager

        spec = get_plugin_manager().target_spec(self.kind)
        return _validate_with(Target(spec.kind, self.arch, self.features, self.attrs), spec)

    def with_arch(self, arch: str | None) -> "Target":
        return Target(self.kind, arch, self.features, self.attrs)

    # -- capabilities and TVM -------------------------------------------------------------------
    @property
    def capabilities(self) -> dict[str, Any]:
        from .plugin.manager import get_plugin_manager

        return get_plugin_manager().target_spec(self.kind).capabilities_for(self.arch)

    def to_tvm(self):
        """The equivalent ``tvm.target.Target`` (imports tvm)."""
        import importlib

        from .plugin.manager import get_plugin_manager

        spec = get_plugin_manager().target_spec(self.kind)
        if not spec.tvm_target:
            raise TargetError(f"target kind {self.kind!r} has no TVM equivalent")
        module_name, _, attr = spec.tvm_target.partition(":")
        as_dict = getattr(importlib.import_module(module_name), attr)(self)
        import tvm

        return tvm.target.Target(as_dict)

    # -- `with Target(...)` -----------------------------------------------------------------------
    def __enter__(self) -> "Target":
        _current.set(_current.get() + (self,))
        return self

    def __exit__(self, *exc) -> None:
        stack = _current.get()
        _current.set(stack[:-1])

    @staticmethod
    def current() -> "Target | None":
        stack = _current.get()
        return stack[-1] if stack else None


def _split(text: str) -> tuple[str, str | None, set[str]]:
    head, *features = text.split("+")
    kind, _, arch = head.partition(":")
    if not kind.strip() or any(not f.strip() for f in features):
        raise TargetError(f"cannot parse target {text!r}: expected 'kind', 'kind:arch' or 'kind:arch+feature'")
    return kind.strip(), (arch.strip() or None), {f.strip() for f in features}


# -- target="auto" ---------------------------------------------------------------------------------
_said_once: set[str] = set()
_said_lock = threading.Lock()


def _warn_once(key: str, message: str, category: type[Warning]) -> None:
    with _said_lock:
        if key in _said_once:
            return
        _said_once.add(key)
    warnings.warn(message, category, stacklevel=user_stacklevel())  # at the user's call


def reset_notices() -> None:
    """Forget which one-time notices were shown (for tests)."""
    with _said_lock:
        _said_once.clear()


def resolve_target(target: "Target | str | Mapping[str, Any] | None" = "auto", *, host=None,
                   manager=None, environ: Mapping[str, str] | None = None) -> Target:
    """Turn ``target`` (``"auto"``/None included) into a concrete, validated Target.

    ``host`` (a HostView) and ``environ`` replace the real machine and environment, for tests
    and what-if checks.
    """
    from .plugin.manager import get_plugin_manager

    manager = manager or get_plugin_manager()
    explicit = target is not None and not (isinstance(target, str) and target.strip().lower() == "auto")
    if explicit:
        return _fill_arch(_parse(target, manager, "the target argument"), manager, host)
    active = Target.current()
    if active is not None:
        return _fill_arch(_parse(active, manager, "the active `with Target(...)`"), manager, host)
    override = config.target_override(environ)
    if override is not None:
        return _fill_arch(_parse(override, manager, "TILELANG_TARGET"), manager, host)
    return _auto(manager, host, environ)


def _parse(value, manager, source: str) -> Target:
    target = Target.parse(value, validate=False)
    spec = manager.target_spec(target.kind)  # raises with the install hint when unknown
    target = Target(spec.kind, target.arch, target.features, target.attrs)
    try:
        return _validate_with(target, spec)
    except TargetError as exc:
        raise TargetError(f"{exc} (from {source})") from None


def _validate_with(target: Target, spec) -> Target:
    if target.arch is not None and not spec.accepts_arch(target.arch):
        raise TargetError(f"target {target}: {spec.kind!r} does not know arch {target.arch!r}; "
                          f"known archs: {', '.join(spec.archs) or 'none'}")
    unknown = sorted(target.features - set(spec.features))
    if unknown:
        raise TargetError(f"target {target}: unknown feature(s) {unknown}; known: {', '.join(spec.features) or 'none'}")
    return target


def _fill_arch(target: Target, manager, host) -> Target:
    """An arch-less accelerator target takes the arch of the device present, else the default."""
    if target.arch is not None:
        return target
    spec = manager.target_spec(target.kind)
    if spec.accelerator:
        for device in manager.probe(host).devices:
            if device.kind == target.kind and device.arch:
                return target.with_arch(device.arch)
    return target.with_arch(spec.default_arch) if spec.default_arch else target


def _auto(manager, host, environ) -> Target:
    report = manager.probe(host)
    order = config.probe_order(environ)
    rank = {kind: i for i, kind in enumerate(order)}
    usable = [d for d in report.devices if d.kind in manager.targets and manager.targets[d.kind].accelerator]
    usable.sort(key=lambda d: (rank.get(d.kind, len(rank)), d.kind))
    for kind, dist, evidence in report.unserved:
        _warn_once(f"missing:{kind}", f"found a {kind} device ({', '.join(evidence[:3])}) but {dist} is not "
                   f"installed, so it is not used: pip install {dist}", MissingPluginWarning)
    if usable:
        chosen = usable[0]
        others = [d for d in usable[1:] if d.kind != chosen.kind]
        if others:
            _warn_once("several", f"target='auto' found several kinds of device: {chosen.kind} "
                       f"({chosen.describe()}) and " + ", ".join(f"{d.kind} ({d.describe()})" for d in others)
                       + f"; using {chosen.kind}. Set TILELANG_TARGET=<kind> or TILELANG_PROBE_ORDER "
                       "to choose.", SeveralDevicesWarning)
        spec = manager.targets[chosen.kind]
        return Target(chosen.kind, chosen.arch or spec.default_arch)
    why = "no accelerator found"
    if report.unserved:
        why += " with an installed backend (" + "; ".join(
            f"{kind}: pip install {dist}" for kind, dist, _ in report.unserved) + ")"
    if report.failures:
        why += "; probes that failed: " + "; ".join(f"{p}: {m}" for p, m in report.failures)
    if config.auto_strict(environ):
        raise TargetError(f"target='auto': {why}, and TILELANG_AUTO_STRICT=1 forbids the cpu fallback. "
                          "Install the backend for your device or set TILELANG_TARGET.")
    if "cpu" not in manager.targets:
        # a backend with a functional simulator runs kernels here too: name it (ascend+sim)
        simulated = [f"{s.kind}+{f}" for s in sorted(manager.targets.values(), key=lambda s: s.kind)
                     for f in s.features if f == "sim"]
        sims = f", or pick a simulator that runs here: target={simulated[0]!r}" + \
            (f" ({', '.join(simulated[1:])})" if simulated[1:] else "") if simulated else ""
        raise TargetError(f"target='auto': {why}, and the cpu reference backend is not installed: "
                          f"pip install tilelang-cpu{sims}")
    _warn_once("cpu", f"target='auto': {why}; running on the cpu reference backend "
               "(TILELANG_AUTO_STRICT=1 makes this an error).", NoAcceleratorNotice)
    spec = manager.targets["cpu"]
    return Target("cpu", spec.default_arch)


# TileLang's code passes tvm.target.Target objects (tvm.target.Target({"kind": "cuda", "arch": "sm_90a"}));
# their kind names are TVM's (rocm, llvm, c), which the catalog's aliases map onto ours.
def _from_tvm_target(value) -> tuple[str, str | None]:
    from .plugin.catalog import ALIASES, FIRST_PARTY

    kind = str(value.kind.name)
    ours = ALIASES.get(kind, kind)
    if ours not in FIRST_PARTY:
        raise TargetError(f"cannot make a target from the TVM target {str(value)!r}: TileLang-X has no "
                          f"backend for TVM's '{kind}' kind (known: {', '.join(sorted(FIRST_PARTY))} "
                          "and TVM's rocm, llvm, c)")
    # an llvm target's mcpu names the host CPU, not a cpu-backend arch
    arch = None if ours == "cpu" else (value.attrs.get("arch") or value.attrs.get("mcpu"))
    return ours, (str(arch) if arch else None)
