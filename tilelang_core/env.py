"""``tilelang.env``: TileLang's view of the settings, read through ``tilelang_core.config``.

TileLang scripts read a few attributes (``tilelang.env.TILELANG_CACHE_DIR``) and call
``tilelang.disable_cache()``; both work here. Every value comes from ``config`` (the one place
that reads TILELANG_* variables), so the documented variables keep their meaning.

    import tilelang_core as tilelang
    tilelang.env.TILELANG_CACHE_DIR      # '/home/me/.cache/tilelang_core'
    tilelang.disable_cache()             # this process compiles afresh, and writes nothing
"""

from __future__ import annotations

from . import config


class Environment:
    """Attribute access to the settings under TileLang's names."""

    @property
    def TILELANG_CACHE_DIR(self) -> str:  # noqa: N802 - TileLang's name
        return str(config.cache_dir())

    @property
    def TILELANG_TMP_DIR(self) -> str:  # noqa: N802
        return str(config.cache_dir() / "tmp")

    @property
    def TILELANG_DISABLE_CACHE(self) -> str:  # noqa: N802
        return "1" if config.cache_disabled() else "0"

    @property
    def TILELANG_DEFAULT_TARGET(self) -> str:  # noqa: N802
        return config.target_override_text() or "auto"

    def is_cache_enabled(self) -> bool:
        return not config.cache_disabled()

    def enable_cache(self) -> None:
        config.set_cache_enabled(True)

    def disable_cache(self) -> None:
        config.set_cache_enabled(False)

    def __repr__(self) -> str:
        return (f"tilelang.env(TILELANG_CACHE_DIR={self.TILELANG_CACHE_DIR!r}, "
                f"cache {'on' if self.is_cache_enabled() else 'off'})")


env = Environment()


def enable_cache() -> None:
    """Read and write the kernel disk cache again (the default)."""
    env.enable_cache()


def disable_cache() -> None:
    """Compile every kernel afresh in this process, reading and writing no disk cache."""
    env.disable_cache()


def is_cache_enabled() -> bool:
    return env.is_cache_enabled()


__all__ = ["Environment", "disable_cache", "enable_cache", "env", "is_cache_enabled"]


def __getattr__(name: str):
    # ``tilelang.env`` is this module once anything imported it: answer the settings here too.
    if name.startswith("TILELANG_"):
        return getattr(env, name)
    raise AttributeError(f"module 'tilelang_core.env' has no attribute {name!r}")
