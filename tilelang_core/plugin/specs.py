"""Plain data a plugin hands to the core: who it is, which target kinds it adds, which backend
implements them, and which devices it found. Standard library only, so plugin modules stay light.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

#: (major, minor) of the plugin API this core speaks. A plugin built for another major is refused;
#: one built for a newer minor loads with a warning.
PLUGIN_API = (1, 0)

_KIND_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_FACTORY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class PluginInfo:
    """Returned by ``tilelang_plugin_info``.

    ``api`` is the plugin API the plugin was written against: it works with any core of the same
    major whose minor is at least this minor.
    """

    name: str
    version: str
    api: tuple[int, int]
    distribution: str = ""
    description: str = ""

    def problems(self) -> list[str]:
        out = []
        if not _KIND_RE.match(self.name or ""):
            out.append(f"plugin name {self.name!r} must be lowercase letters, digits and '_'")
        if not (isinstance(self.api, tuple) and len(self.api) == 2
                and all(isinstance(x, int) and x >= 0 for x in self.api)):
            out.append(f"api must be a (major, minor) tuple of ints, got {self.api!r}")
        if not self.version:
            out.append("version is empty")
        return out


@dataclass(frozen=True)
class TargetKindSpec:
    """A target kind a plugin provides (``cuda``, ``hip``, ...).

    ``archs`` lists the architectures the backend knows; ``arch_pattern`` (a regex) admits others
    of the same family. ``capabilities`` maps an arch (or ``"*"`` for all) to facts the passes may
    ask for (dtypes, shared memory, warp size, matrix units): passes ask the table, never the kind.
    ``tvm_target`` names a ``"module:function"`` taking a Target and returning TVM's target dict.
    """

    kind: str
    description: str
    archs: tuple[str, ...] = ()
    default_arch: str | None = None
    arch_pattern: str | None = None
    aliases: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    capabilities: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    tvm_target: str | None = None
    accelerator: bool = True

    def accepts_arch(self, arch: str) -> bool:
        if arch in self.archs:
            return True
        return bool(self.arch_pattern and re.fullmatch(self.arch_pattern, arch))

    def capabilities_for(self, arch: str | None) -> dict[str, Any]:
        caps = dict(self.capabilities.get("*", {}))
        if arch is not None:
            caps.update(self.capabilities.get(arch, {}))
        return caps

    def problems(self) -> list[str]:
        out = []
        if not _KIND_RE.match(self.kind or ""):
            out.append(f"target kind {self.kind!r} must be lowercase letters, digits and '_'")
        for alias in self.aliases:
            if not _KIND_RE.match(alias):
                out.append(f"alias {alias!r} of {self.kind!r} must be lowercase letters, digits and '_'")
        if self.default_arch is not None and not self.accepts_arch(self.default_arch):
            out.append(f"default_arch {self.default_arch!r} of {self.kind!r} is not one of its archs")
        if self.arch_pattern:
            try:
                re.compile(self.arch_pattern)
            except re.error as exc:
                out.append(f"arch_pattern of {self.kind!r} is not a regex: {exc}")
        for key in self.capabilities:
            if key != "*" and not self.accepts_arch(key):
                out.append(f"capabilities of {self.kind!r} name unknown arch {key!r}")
        if self.tvm_target is not None and not _FACTORY_RE.match(self.tvm_target):
            out.append(f"tvm_target of {self.kind!r} must be 'module:function', got {self.tvm_target!r}")
        return out


@dataclass(frozen=True)
class BackendSpec:
    """The Backend implementing a kind, named as ``"module:Class"`` and imported on first use."""

    kind: str
    factory: str

    def problems(self) -> list[str]:
        if not _FACTORY_RE.match(self.factory or ""):
            return [f"backend factory for {self.kind!r} must be 'module:Class', got {self.factory!r}"]
        return []


@dataclass(frozen=True)
class DeviceProbe:
    """Devices of one kind a probe found, with the evidence that shows they are there."""

    kind: str
    count: int
    evidence: tuple[str, ...]
    arch: str | None = None
    names: tuple[str, ...] = ()

    def describe(self) -> str:
        what = ", ".join(sorted(set(self.names))) or self.kind
        arch = f" ({self.arch})" if self.arch else ""
        return f"{self.count} x {what}{arch}"
