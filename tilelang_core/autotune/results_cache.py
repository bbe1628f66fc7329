"""Tuning results on disk, so the second run of a program skips the search.

    <config.cache_dir()>/autotune/v1/<kk>/<key>.json

``key`` is the sha256 of: the kernel factory's source (or bytecode when there is no source), the
call's arguments (the problem shape), the config space, the target, the backend's toolchain
version, the core/tvm/plugin versions, and whether results were checked against a reference. Any
change to one of them is a new search. Files are written to a temporary name and renamed, so a
reader never sees half a file; an unreadable file is treated as a miss and rewritten.

    cache = ResultsCache.from_config()
    hit = cache.load(key)              # dict or None
    cache.store(key, {...})
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

from .. import config

FORMAT = "v1"


def source_hash(fn: Callable) -> str:
    """sha256 of a function's source; its bytecode and constants when the source is unavailable."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        text = repr((code.co_code, code.co_consts)) if code is not None else repr(fn)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def tuning_key(parts: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(dict(parts)).encode()).hexdigest()


class ResultsCache:
    def __init__(self, root: Path):
        self.base = Path(root) / "autotune" / FORMAT

    @classmethod
    def from_config(cls) -> "ResultsCache | None":
        if config.cache_disabled():
            return None
        return cls(config.cache_dir())

    def path(self, key: str) -> Path:
        return self.base / key[:2] / f"{key}.json"

    def load(self, key: str) -> dict | None:
        try:
            data = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def store(self, key: str, record: Mapping[str, Any]) -> Path | None:
        path = self.path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(dict(record, key=key), indent=1, default=repr))
            os.replace(tmp, path)
        except OSError:
            # a results cache that cannot be written only costs a re-search next time
            tmp.unlink(missing_ok=True)
            return None
        return path
