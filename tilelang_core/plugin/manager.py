"""Discovery and isolation of backend plugins.

Plugins are found through the entry-point group ``tilelang_core.backends`` the first time
something needs them (a compile, ``doctor``), never on ``import tilelang_core``. Each plugin is
imported, registered and asked for its specs inside its own try/except: a plugin that fails
becomes a BrokenPlugin holding its traceback, and the others keep working. Its error is raised
only when the user selects a kind it would have provided.
"""

from __future__ import annotations

import importlib
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Iterable

import pluggy

from .. import config
from ..errors import PluginError, TargetError
from . import hookspecs
from .catalog import ALIASES, FIRST_PARTY, install_hint
from .host import HostView
from .specs import PLUGIN_API, BackendSpec, DeviceProbe, PluginInfo, TargetKindSpec

ENTRY_POINT_GROUP = "tilelang_core.backends"


class PluginAPIWarning(UserWarning):
    """A plugin was written for a newer minor version of the plugin API than this core speaks."""


@dataclass
class LoadedPlugin:
    name: str
    info: PluginInfo
    origin: str
    distribution: str | None = None
    dist_version: str | None = None
    kinds: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class BrokenPlugin:
    name: str
    origin: str
    reason: str
    traceback: str = ""
    distribution: str | None = None

    def error(self) -> PluginError:
        text = f"plugin {self.name!r} ({self.origin}) is broken: {self.reason}"
        if self.traceback:
            text += "\n" + self.traceback.rstrip()
        return PluginError(text)


@dataclass(frozen=True)
class ProbeReport:
    """What the probes saw: devices per kind, probes that failed, devices with no plugin."""

    devices: tuple[DeviceProbe, ...] = ()
    failures: tuple[tuple[str, str], ...] = ()
    unserved: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (kind, distribution, evidence)


class _Collector:
    """The ``registry`` argument of the registration hooks: collects one plugin's specs."""

    def __init__(self, spec_type: type):
        self._type = spec_type
        self.items: list[Any] = []

    def add(self, spec) -> None:
        if not isinstance(spec, self._type):
            raise TypeError(f"registry.add expects a {self._type.__name__}, got {type(spec).__name__}")
        problems = spec.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.items.append(spec)


class _ImportHang(Exception):
    pass


def _load_bounded(ep, timeout: float):
    """``ep.load()`` in a thread, waiting at most ``timeout`` seconds: a plugin whose import hangs
    (a driver call at import time) must not hang every compile, for every target, with it. The
    thread is left behind (an import cannot be interrupted); the plugin is reported broken."""
    box: dict = {}

    def run():
        try:
            box["module"] = ep.load()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name=f"tilelang-import-{ep.name}")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise _ImportHang(f"import of {ep.value} did not finish in {timeout:g} s (TILELANG_PLUGIN_IMPORT_TIMEOUT); "
                          f"a plugin's entry-point module must import quickly (standard library and "
                          f"tilelang_core.plugin only)")
    if "error" in box:
        raise box["error"]
    return box["module"]


def _dist_name(ep) -> str | None:
    dist = getattr(ep, "dist", None)
    return dist.metadata["Name"] if dist is not None else None


class PluginManager:
    """Finds, loads and queries backend plugins. Use :func:`get_plugin_manager` for the global one.

    ``entry_points`` replaces discovery (a callable returning EntryPoint-like objects), for tests.
    """

    def __init__(self, *, group: str = ENTRY_POINT_GROUP,
                 entry_points: Callable[[], Iterable[Any]] | None = None, discover: bool = True):
        self.group = group
        self._entry_points = entry_points
        self._auto_discover = discover
        self._discovered = False
        self._lock = threading.RLock()
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, LoadedPlugin] = {}
        self.broken: dict[str, BrokenPlugin] = {}
        self.disabled: list[str] = []
        self.targets: dict[str, TargetKindSpec] = {}
        self.backends: dict[str, BackendSpec] = {}
        self.providers: dict[str, list[str]] = {}  # kind -> plugin names claiming it
        self._probe_cache: dict[Any, ProbeReport] = {}

    # -- discovery ------------------------------------------------------------------------------
    def discover(self) -> "PluginManager":
        with self._lock:
            if self._discovered or not self._auto_discover:
                return self
            self._discovered = True
            skip = config.disabled_plugins()
            found = self._entry_points() if self._entry_points else metadata.entry_points(group=self.group)
            by_name: dict[str, list] = {}
            for ep in sorted(found, key=lambda e: e.name):
                by_name.setdefault(ep.name, []).append(ep)
            for name, eps in by_name.items():
                if name in skip:
                    self.disabled.append(name)
                elif len(eps) > 1:
                    self._refuse_rivals(name, eps)
                else:
                    self._load_entry_point(eps[0])
            return self

    def _refuse_rivals(self, name: str, eps: list) -> None:
        """Two distributions both provide entry point ``name``: neither is loaded (whichever came
        first on sys.path would otherwise serve every compile for that backend, unannounced); both
        are broken plugins naming each other, so selecting the backend says what to uninstall."""
        who = [f"{_dist_name(ep) or '?'} ({ep.value})" for ep in eps]
        for i, ep in enumerate(eps):
            dist = _dist_name(ep)
            origin = f"entry point {ep.value}" + (f" from {dist}" if dist else "")
            self.broken[name if i == 0 else f"{name}@{dist}"] = BrokenPlugin(
                name, origin, f"{len(eps)} distributions provide the backend entry point {name!r}: "
                f"{', '.join(who)}; neither is loaded. Uninstall the one you did not mean to have "
                f"(pip uninstall <distribution>)", distribution=dist)

    def _load_entry_point(self, ep) -> None:
        dist_name = _dist_name(ep)
        dist_version = ep.dist.version if dist_name is not None else None
        origin = f"entry point {ep.value}" + (f" from {dist_name} {dist_version}" if dist_name else "")
        if ep.name in self.plugins or ep.name in self.broken:
            self.broken[f"{ep.name}@{dist_name}"] = BrokenPlugin(
                ep.name, origin, f"another plugin named {ep.name!r} is already loaded "
                f"({self._origin_of(ep.name)}); uninstall one of them", distribution=dist_name)
            return
        try:
            module = _load_bounded(ep, config.plugin_import_timeout())
        except _ImportHang as hang:
            self.broken[ep.name] = BrokenPlugin(ep.name, origin, str(hang), "", dist_name)
            return
        except (Exception, SystemExit) as exc:  # a plugin must never take the core down
            self.broken[ep.name] = BrokenPlugin(ep.name, origin, f"import failed: {exc!r}",
                                                traceback.format_exc(), dist_name)
            return
        self._register(module, ep.name, origin, dist_name, dist_version)

    def _origin_of(self, name: str) -> str:
        if name in self.plugins:
            return self.plugins[name].origin
        return self.broken[name].origin if name in self.broken else "?"

    def register(self, plugin: Any, name: str | None = None) -> LoadedPlugin | BrokenPlugin:
        """Register a plugin object (module, class or instance with hookimpls) in-process.

        For tests and notebooks; installed plugins come through entry points.
        """
        self.discover()
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        with self._lock:
            if name in self.plugins or name in self.broken:
                raise PluginError(f"a plugin named {name!r} is already registered ({self._origin_of(name)})")
            result = self._register(plugin, name, "registered in-process", None, None)
            self._probe_cache.clear()
            return result

    def unregister(self, name: str) -> None:
        with self._lock:
            self.broken.pop(name, None)
            loaded = self.plugins.pop(name, None)
            if loaded is None:
                return
            self._pm.unregister(name=name)
            for kind in list(self.providers):
                claimants = [p for p in self.providers[kind] if p != name]
                if claimants:
                    self.providers[kind] = claimants
                else:
                    del self.providers[kind]
            self._rebuild_tables()
            self._probe_cache.clear()

    def _register(self, plugin, name, origin, dist_name, dist_version) -> LoadedPlugin | BrokenPlugin:
        try:
            self._pm.register(plugin, name=name)
        except Exception as exc:
            broken = BrokenPlugin(name, origin, f"invalid hook implementations: {exc}",
                                  traceback.format_exc(), dist_name)
            self.broken[name] = broken
            return broken
        try:
            loaded = self._interrogate(plugin, name, origin, dist_name, dist_version)
        except _Refused as refusal:
            self._pm.unregister(name=name)
            self.broken[name] = BrokenPlugin(name, origin, str(refusal), "", dist_name)
            return self.broken[name]
        except (Exception, SystemExit) as exc:
            self._pm.unregister(name=name)
            self.broken[name] = BrokenPlugin(name, origin, f"{type(exc).__name__}: {exc}",
                                             traceback.format_exc(), dist_name)
            return self.broken[name]
        self.plugins[name] = loaded
        for kind in loaded.kinds:
            self.providers.setdefault(kind, []).append(name)
        self._rebuild_tables()
        return loaded

    def _interrogate(self, plugin, name, origin, dist_name, dist_version) -> LoadedPlugin:
        info = self._call_one("tilelang_plugin_info", name, {})
        info = info[0] if info else None
        if not isinstance(info, PluginInfo):
            raise _Refused("tilelang_plugin_info must return a PluginInfo, got "
                           f"{type(info).__name__}")
        problems = info.problems()
        if problems:
            raise _Refused("invalid PluginInfo: " + "; ".join(problems))
        dist = info.distribution or dist_name or name
        notes = []
        major, minor = info.api
        if major != PLUGIN_API[0]:
            core = f"tilelang-core speaks plugin API {PLUGIN_API[0]}.{PLUGIN_API[1]}"
            if major > PLUGIN_API[0]:
                fix = "pip install --upgrade tilelang-core"
            else:
                fix = f"pip install --upgrade {dist}"
            raise _Refused(f"{dist} {info.version} was written for plugin API {major}.{minor} but "
                           f"{core}; fix with: {fix}")
        if minor > PLUGIN_API[1]:
            note = (f"{dist} {info.version} was written for plugin API {major}.{minor}, newer than this "
                    f"core's {PLUGIN_API[0]}.{PLUGIN_API[1]}; some features may be missing "
                    "(pip install --upgrade tilelang-core)")
            notes.append(note)
            warnings.warn(note, PluginAPIWarning, stacklevel=3)
        targets, backends = _Collector(TargetKindSpec), _Collector(BackendSpec)
        self._call_one("tilelang_register_targets", name, {"registry": targets})
        self._call_one("tilelang_register_backends", name, {"registry": backends})
        kinds = [t.kind for t in targets.items]
        for spec in backends.items:
            if spec.kind not in kinds:
                raise _Refused(f"registers a backend for kind {spec.kind!r} but no such target kind")
        loaded = LoadedPlugin(name, info, origin, dist, dist_version or info.version, kinds, notes)
        loaded._targets = targets.items  # type: ignore[attr-defined]
        loaded._backends = backends.items  # type: ignore[attr-defined]
        return loaded

    def _call_one(self, hook_name: str, plugin_name: str, kwargs: dict) -> list:
        """Call one plugin's implementation of a hook (isolation: never a broadcast)."""
        caller = getattr(self._pm.hook, hook_name)
        results = []
        for impl in caller.get_hookimpls():
            if impl.plugin_name != plugin_name:
                continue
            result = impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            if result is not None:
                results.append(result)
        return results

    def _rebuild_tables(self) -> None:
        self.targets.clear()
        self.backends.clear()
        for kind, claimants in self.providers.items():
            if len(claimants) != 1:
                continue  # ambiguous: selecting it raises (see target_spec)
            plugin = self.plugins[claimants[0]]
            for spec in plugin._targets:  # type: ignore[attr-defined]
                if spec.kind == kind:
                    self.targets[kind] = spec
            for spec in plugin._backends:  # type: ignore[attr-defined]
                if spec.kind == kind:
                    self.backends[kind] = spec

    # -- queries --------------------------------------------------------------------------------
    def conflicts(self) -> dict[str, list[str]]:
        self.discover()
        return {k: v for k, v in self.providers.items() if len(v) > 1}

    def canonical_kind(self, kind: str) -> str:
        """Resolve aliases (``asc`` -> ``ascend``) against installed specs, then known spellings."""
        self.discover()
        if kind in self.providers:
            return kind
        for spec in self.targets.values():
            if kind in spec.aliases:
                return spec.kind
        return ALIASES.get(kind, kind)

    def target_spec(self, kind: str) -> TargetKindSpec:
        """The spec of an installed kind, or a TargetError/PluginError that says what to do."""
        self.discover()
        kind = self.canonical_kind(kind)
        if kind in self.targets:
            return self.targets[kind]
        claimants = self.providers.get(kind, [])
        if len(claimants) > 1:
            where = "; ".join(f"{p} ({self.plugins[p].origin})" for p in claimants)
            raise PluginError(f"target kind {kind!r} is provided by {len(claimants)} plugins: {where}. "
                              f"Uninstall all but one (pip uninstall <package>) or disable one with "
                              f"TILELANG_DISABLE_PLUGINS=<plugin name>.")
        if kind in self.broken:
            raise self.broken[kind].error()
        known = ", ".join(f"{k} ({self.plugins[self.providers[k][0]].distribution})"
                          for k in sorted(self.targets)) or "none"
        text = f"unknown target kind {kind!r}. Installed kinds: {known}."
        hint = install_hint(kind)
        if hint:
            text += f" {kind!r} is provided by {FIRST_PARTY[ALIASES.get(kind, kind)].distribution}: {hint}"
        if kind in self.disabled:
            text += f" (plugin {kind!r} is disabled by TILELANG_DISABLE_PLUGINS)"
        raise TargetError(text)

    def backend_class(self, kind: str) -> type:
        spec = self.target_spec(kind)
        backend = self.backends.get(spec.kind)
        if backend is None:
            raise PluginError(f"target kind {spec.kind!r} has no backend registered "
                              f"(plugin {self.providers[spec.kind][0]!r}); it cannot compile yet")
        try:
            obj = resolve_factory(backend.factory)
        except Exception as exc:
            plugin = self.plugins[self.providers[spec.kind][0]]
            if backend_missing(backend.factory):
                fix = (f"the plugin names a backend that does not exist in {plugin.distribution}: the "
                       f"plugin is incomplete (a vendor template not filled in?); report it to its vendor")
            else:
                fix = f"Reinstall it: pip install --force-reinstall {plugin.distribution}"
            raise PluginError(f"backend {backend.factory!r} of {plugin.distribution} could not be loaded: "
                              f"{exc!r}. {fix}") from exc
        return obj

    def get_backend(self, target):
        """A fresh Backend instance for ``target`` (one per compile)."""
        return self.backend_class(target.kind)(target)

    # -- probing --------------------------------------------------------------------------------
    def probe(self, host: HostView | None = None, timeout: float | None = None) -> ProbeReport:
        """Run every plugin's device probe, each bounded by ``timeout`` seconds, once per host view."""
        self.discover()
        host = host or HostView.current()
        key = (host, tuple(sorted(self.plugins)))
        with self._lock:
            cached = self._probe_cache.get(key)
        if cached is not None:
            return cached
        timeout = config.probe_timeout() if timeout is None else timeout
        report = self._run_probes(host, timeout)
        with self._lock:
            self._probe_cache[key] = report
        return report

    def _run_probes(self, host: HostView, timeout: float) -> ProbeReport:
        results: dict[str, Any] = {}

        def run(name: str) -> None:
            try:
                results[name] = ("ok", self._call_one("tilelang_probe_devices", name, {"host": host}))
            except BaseException as exc:  # noqa: BLE001 - reported, never raised
                results[name] = ("error", f"{type(exc).__name__}: {exc}")

        threads = {name: threading.Thread(target=run, args=(name,), daemon=True,
                                          name=f"tilelang-probe-{name}") for name in self.plugins}
        for thread in threads.values():
            thread.start()
        deadline = time.monotonic() + timeout
        for thread in threads.values():
            thread.join(max(0.0, deadline - time.monotonic()))
        devices, failures = [], []
        for name in sorted(threads):
            status, value = results.get(name, ("timeout", None))
            if status == "timeout":
                failures.append((name, f"probe did not answer within {timeout:g} s "
                                       "(TILELANG_PROBE_TIMEOUT); its devices are ignored"))
            elif status == "error":
                failures.append((name, f"probe raised {value}; its devices are ignored"))
            else:
                for found in (value or []):
                    for item in (found if isinstance(found, list) else [found]):
                        problem = self._check_probe(name, item)
                        if problem:
                            failures.append((name, problem))
                        elif item.count > 0:
                            devices.append(item)
        served = {d.kind for d in devices} | set(self.providers)
        unserved = []
        for kind, known in FIRST_PARTY.items():
            if kind in served:
                continue
            evidence = known.evidence(host)
            if evidence:
                unserved.append((kind, known.distribution, tuple(evidence)))
        return ProbeReport(tuple(devices), tuple(failures), tuple(unserved))

    def _check_probe(self, plugin: str, item) -> str | None:
        if not isinstance(item, DeviceProbe):
            return f"probe returned {type(item).__name__}, not DeviceProbe; ignored"
        if item.kind not in self.plugins[plugin].kinds:
            return f"probe reported a device of kind {item.kind!r} it does not provide; ignored"
        return None


class _Refused(Exception):
    """A plugin that loaded but cannot be used (API version, bad info): no traceback needed."""


# -- the process-wide manager --------------------------------------------------------------------
_global: PluginManager | None = None
_global_lock = threading.Lock()


def get_plugin_manager() -> PluginManager:
    global _global
    with _global_lock:
        if _global is None:
            _global = PluginManager()
    return _global.discover()


def set_plugin_manager(manager: PluginManager | None) -> PluginManager | None:
    """Replace the process-wide manager (None: rediscover on next use). Returns the previous one."""
    global _global
    with _global_lock:
        previous, _global = _global, manager
    return previous


def get_backend(target):
    """The Backend instance that compiles for ``target`` (a Target or anything Target.parse takes)."""
    from ..target import Target

    return get_plugin_manager().get_backend(Target.parse(target))


def resolve_factory(factory: str):
    """The object a ``"module:attr"`` string names, importing the module."""
    module_name, _, attr = factory.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def backend_missing(factory: str) -> str | None:
    """Why the ``"module:attr"`` backend of a plugin cannot exist, found without importing the
    module itself (its parent packages are imported: they are light); None when it is there."""
    import importlib.util

    module_name, _, _ = factory.partition(":")
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as exc:
        return f"{module_name}: {exc}"
    return None if found is not None else f"no module named {module_name!r}"

