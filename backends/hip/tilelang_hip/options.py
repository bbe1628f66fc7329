"""Compile options of the hip backend: frozen, validated, with a stable hash (BackendOptions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

from tilelang_core.backend import BackendOptions
from tilelang_core.errors import ConfigError

MFMA_SHAPES = ("16x16x16", "32x32x8")


@dataclass(frozen=True)
class HipOptions(BackendOptions):
    """Options of one hip compile.

    mfma: the MFMA instruction T.gemm uses on CDNA (gfx90a, gfx94x): "16x16x16" (default; any
        wave tile that is a multiple of 16) or "32x32x8" (wave tiles multiple of 32). RDNA3
        always uses WMMA 16x16x16.
    fast_math: -ffast-math for the device compile.
    disable_thread_storage_sync: insert no barriers between shared-memory accesses (TileLang's
        key): the kernel's own T.sync_threads / T.sync_warp order them, as in TileLang.
    opt_level: clang -O level for device code (0..3).
    disable_pipelining: T.Pipelined loops with one LDS buffer (two barriers per iteration)
        instead of one LDS stage per num_stages (for debugging).
    extra_clang_flags: appended to the device compile, verbatim (TileLang's ``compile_flags`` and
        ``tl.device_compile_flags``).

    Example::

        HipOptions.from_pass_configs({"mfma": "32x32x8", "tl.fast_math": True})
    """

    ALIASES: ClassVar[Mapping[str, str]] = {"device_compile_flags": "extra_clang_flags"}

    mfma: str = "16x16x16"
    fast_math: bool = False
    opt_level: int = 3
    disable_pipelining: bool = False
    disable_thread_storage_sync: bool = False
    extra_clang_flags: tuple = ()

    def __post_init__(self):
        if self.mfma not in MFMA_SHAPES:
            raise ConfigError(f"hip option mfma={self.mfma!r} must be one of {MFMA_SHAPES}")
        self.check_flags("hip")
        if isinstance(self.opt_level, bool) or self.opt_level not in (0, 1, 2, 3):
            raise ConfigError(f"hip option opt_level={self.opt_level!r} must be 0, 1, 2 or 3")
        flags = self.extra_clang_flags
        if isinstance(flags, str):
            flags = tuple(flags.split())
        if not all(isinstance(f, str) for f in flags):
            raise ConfigError(f"hip option extra_clang_flags={self.extra_clang_flags!r} must be strings")
        object.__setattr__(self, "extra_clang_flags", tuple(flags))
