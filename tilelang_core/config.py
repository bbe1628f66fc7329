"""The only module that reads TILELANG_* environment variables.

Values are read on every call rather than at import, so a test (or a user in a notebook) can change
the environment and see the effect. Every variable is documented here, once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from .errors import ConfigError

#: name -> one-line description; `python -m tilelang_core doctor` prints the ones that are set.
VARIABLES: dict[str, str] = {
    "TILELANG_TARGET": "target used by target='auto': a kind ('cuda'), 'kind:arch', or a JSON dict",
    "TILELANG_PROBE_ORDER": "comma-separated preference of device kinds for 'auto' (default cuda,hip,ascend,metal)",
    "TILELANG_AUTO_STRICT": "1: 'auto' with no accelerator is an error instead of the cpu fallback",
    "TILELANG_PROBE_TIMEOUT": "seconds one backend's device probe may take (default 2.0)",
    "TILELANG_PLUGIN_IMPORT_TIMEOUT": "seconds a backend plugin's entry-point module may take to import (default 10); past it the plugin is reported broken and discovery goes on",
    "TILELANG_DISABLE_PLUGINS": "comma-separated plugin names to skip at discovery",
    "TILELANG_CACHE_DIR": "kernel disk cache folder (default ~/.cache/tilelang_core)",
    "TILELANG_DISABLE_CACHE": "1: never read or write the disk cache",
    "TILELANG_DUMP_IR": "folder: write the IR after every pass there, with pass timing",
    "TILELANG_AUTOTUNE_WORKERS": "processes that compile autotune candidates in parallel (default: CPU count, at most 8; 0: in this process)",
}

DEFAULT_PROBE_ORDER = ("cuda", "hip", "ascend", "metal")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _get(name: str, environ: Mapping[str, str] | None) -> str | None:
    env = os.environ if environ is None else environ
    value = env.get(name)
    return None if value is None else value.strip()


def _flag(name: str, environ: Mapping[str, str] | None) -> bool:
    value = _get(name, environ)
    if value is None:
        return False
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ConfigError(f"{name}={value!r} is not a boolean: use 1 or 0")


def target_override_text(environ: Mapping[str, str] | None = None) -> str | None:
    """TILELANG_TARGET exactly as set (unparsed, cheap): part of @jit's memo key for 'auto'."""
    return _get("TILELANG_TARGET", environ)


def target_override(environ: Mapping[str, str] | None = None) -> str | dict | None:
    """TILELANG_TARGET as a string ('cuda', 'cuda:sm_90a') or a dict (JSON), or None if unset."""
    value = _get("TILELANG_TARGET", environ)
    if not value:
        return None
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"TILELANG_TARGET is not valid JSON ({exc}): {value!r}") from None
        if not isinstance(parsed, dict):
            raise ConfigError(f"TILELANG_TARGET must be a kind or a JSON object, got {value!r}")
        return parsed
    return value


def probe_order(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    value = _get("TILELANG_PROBE_ORDER", environ)
    if not value:
        return DEFAULT_PROBE_ORDER
    order = tuple(part.strip() for part in value.split(",") if part.strip())
    if not order:
        raise ConfigError(f"TILELANG_PROBE_ORDER={value!r} names no kind; e.g. 'hip,cuda'")
    return order


def auto_strict(environ: Mapping[str, str] | None = None) -> bool:
    return _flag("TILELANG_AUTO_STRICT", environ)


def probe_timeout(environ: Mapping[str, str] | None = None) -> float:
    return _seconds("TILELANG_PROBE_TIMEOUT", 2.0, environ)


def plugin_import_timeout(environ: Mapping[str, str] | None = None) -> float:
    return _seconds("TILELANG_PLUGIN_IMPORT_TIMEOUT", 10.0, environ)


def _seconds(name: str, default: float, environ: Mapping[str, str] | None) -> float:
    value = _get(name, environ)
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not a number of seconds") from None
    if seconds <= 0:
        raise ConfigError(f"{name}={value!r} must be positive")
    return seconds


def disabled_plugins(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    value = _get("TILELANG_DISABLE_PLUGINS", environ) or ""
    return frozenset(part.strip() for part in value.split(",") if part.strip())


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    value = _get("TILELANG_CACHE_DIR", environ)
    if value:
        return Path(value).expanduser()
    return Path.home() / ".cache" / "tilelang_core"


# TileLang's tilelang.disable_cache() / enable_cache(): a process-wide switch over the variable.
_cache_switch: bool | None = None


def cache_disabled(environ: Mapping[str, str] | None = None) -> bool:
    if environ is None and _cache_switch is not None:
        return not _cache_switch
    return _flag("TILELANG_DISABLE_CACHE", environ)


def set_cache_enabled(enabled: bool | None) -> None:
    """Turn the disk cache on or off for this process (None: back to TILELANG_DISABLE_CACHE)."""
    global _cache_switch
    _cache_switch = None if enabled is None else bool(enabled)


def dump_ir_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    value = _get("TILELANG_DUMP_IR", environ)
    return Path(value).expanduser() if value else None


def autotune_workers(environ: Mapping[str, str] | None = None) -> int:
    value = _get("TILELANG_AUTOTUNE_WORKERS", environ)
    if not value:
        return max(1, min(8, os.cpu_count() or 1))
    try:
        workers = int(value)
    except ValueError:
        raise ConfigError(f"TILELANG_AUTOTUNE_WORKERS={value!r} is not a whole number") from None
    if workers < 0:
        raise ConfigError(f"TILELANG_AUTOTUNE_WORKERS={value!r} must be 0 (compile in this process) or more")
    return workers


def snapshot(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The TILELANG_* settings of this process, to hand to a worker process (``apply_snapshot``):
    a pool outlives the test or notebook cell that set the variables it was started with."""
    return set_variables(environ)


def apply_snapshot(values: Mapping[str, str]) -> None:
    """Make this process's TILELANG_* variables exactly ``values`` (worker side of ``snapshot``)."""
    for name in [n for n in os.environ if n.startswith("TILELANG_")]:
        if name not in values:
            del os.environ[name]
    os.environ.update(values)


def set_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The TILELANG_* variables that are set, for diagnostics."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in sorted(env) if name.startswith("TILELANG_")}
