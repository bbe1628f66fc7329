"""Ascend compile options (frozen, validated, hashed into the cache key)."""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.backend import BackendOptions
from tilelang_core.errors import ConfigError

from .target import ARCHS


@dataclass(frozen=True)
class AscendOptions(BackendOptions):
    """``arch``: override the target's Da Vinci arch; ``check``: run the static sync/storage
    checker on every lowered program (cheap; on by default); ``opt_level``: passed to bisheng."""

    arch: str | None = None
    check: bool = True
    opt_level: int = 2

    def __post_init__(self):
        if self.arch is not None and self.arch not in ARCHS:
            raise ConfigError(f"unknown Ascend arch {self.arch!r}; use one of {', '.join(ARCHS)}")
        if self.opt_level not in (0, 1, 2, 3):
            raise ConfigError(f"opt_level must be 0..3, got {self.opt_level!r}")
        self.check_flags("ascend")
