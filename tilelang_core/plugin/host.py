"""HostView: the machine as a device probe may see it.

Probes read device nodes, sysfs and the platform through a HostView instead of touching ``/``
and ``os.environ`` directly. That keeps them honest (only cheap evidence, no driver calls) and
lets tests hand them a fake file tree: ``HostView(root=tmp_path, environ={...})``.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping


def _snapshot(environ: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    env = os.environ if environ is None else environ
    return tuple(sorted(env.items()))


@dataclass(frozen=True)
class HostView:
    root: str = "/"
    env_items: tuple[tuple[str, str], ...] = field(default_factory=lambda: _snapshot(None))
    system: str = field(default_factory=platform.system)
    machine: str = field(default_factory=platform.machine)

    @classmethod
    def current(cls) -> "HostView":
        return cls()

    @classmethod
    def fake(cls, root: str | os.PathLike, environ: Mapping[str, str] | None = None,
             system: str = "Linux", machine: str = "x86_64") -> "HostView":
        """A view of a fake file tree, for tests and for what-if checks in ``doctor``."""
        return cls(root=str(root), env_items=_snapshot(environ or {}), system=system, machine=machine)

    # -- environment ----------------------------------------------------------------------------
    @property
    def environ(self) -> dict[str, str]:
        return dict(self.env_items)

    def getenv(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.env_items:
            if key == name:
                return value
        return default

    # -- files ----------------------------------------------------------------------------------
    def path(self, path: str) -> Path:
        """The real location of an absolute path as seen on this host."""
        return Path(self.root) / path.lstrip("/")

    def exists(self, path: str) -> bool:
        return self.path(path).exists()

    def read_text(self, path: str, default: str | None = None) -> str | None:
        try:
            return self.path(path).read_text(errors="replace")
        except OSError:
            return default

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return []

    def device_nodes(self, pattern: str, directory: str = "/dev") -> list[str]:
        """Entries of ``directory`` whose whole name matches the regex ``pattern``, as absolute
        paths in numeric order (``nvidia2`` before ``nvidia10``)."""
        regex = re.compile(pattern)
        names = [n for n in self.listdir(directory) if regex.fullmatch(n)]

        def order(name: str):
            digits = re.findall(r"\d+", name)
            return (int(digits[-1]) if digits else -1, name)

        return [f"{directory.rstrip('/')}/{n}" for n in sorted(names, key=order)]


def visible_indices(value: str | None, count: int) -> list[int] | None:
    """Apply a ``*_VISIBLE_DEVICES``-style variable to ``count`` devices.

    Returns the visible indices, or None when the variable is unset. An empty value or "-1" hides
    every device (as the CUDA/HIP runtimes do); UUID-style entries count as one device each.
    """
    if value is None:
        return None
    value = value.strip()
    if value in ("", "-1"):
        return []
    visible: list[int] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        if part.isdigit():
            index = int(part)
            if index >= count:
                break  # the runtimes stop at the first invalid ordinal
            visible.append(index)
        else:
            visible.append(len(visible))  # a UUID or MIG name: one device we cannot map cheaply
    return visible
