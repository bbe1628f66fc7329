"""The on-disk kernel cache: content-addressed, published atomically, verified on every read.

Layout under ``config.cache_dir()`` (``TILELANG_CACHE_DIR``, default ``~/.cache/tilelang_core``)::

    v1/                              cache format version; a new format gets a sibling folder
      kernels/<kk>/<key>/            one published entry, immutable (kk = key[:2], keeps dirs small)
        manifest.json                key parts, kernel name, entry symbol, artifact name, and the
                                     sha256 + size of every other file in the entry
        kernel<suffix>               the artifact (Backend.binary_suffix, e.g. kernel.so)
        asm/<stage>.txt              the text of every stage (tirx, lowered, source, ...)
      staging/<key>.<pid>.<rand>/    an entry being written; renamed into kernels/ when complete
      trash/<key>.<pid>.<rand>/      an evicted entry, renamed away first, then deleted
      locks/<key>.lock               per-key file lock held while building/publishing/evicting

``<key>`` is the sha256 of a JSON object: the sha256 of the script-printed tirx PrimFunc, the
canonical target string, the options' ``stable_hash()``, ``backend.toolchain_version()``, the
backend class and plugin version, and the core, apache-tvm and apache-tvm-ffi versions.

Protocol:
- Readers take no lock: a published entry never changes, and a rename makes it appear whole.
  If verification fails without the lock, the reader takes the lock and looks again before
  deciding the entry is corrupt, so a writer that just republished is never evicted by mistake.
- Writers build while holding ``locks/<key>.lock`` (a ``filelock`` lock, which excludes other
  threads and other processes), write every file into ``staging/``, fsync, write the manifest last,
  and publish with ``os.rename`` of the directory.
- A corrupt entry (missing file, wrong size or sha256, unreadable manifest) is evicted under the
  lock with a ``CacheCorruptionWarning`` and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import CacheError

FORMAT = "v1"
_STALE_SECONDS = 24 * 3600
_LOCK_TIMEOUT = 600.0


class CacheCorruptionWarning(UserWarning):
    """A cache entry failed verification and was evicted; it is rebuilt."""


def make_key(parts: Mapping[str, str]) -> str:
    """Content address of an entry: sha256 of its key parts (a flat str -> str mapping)."""
    payload = json.dumps(dict(parts), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class CacheEntry:
    """A verified, published entry."""

    key: str
    path: Path
    manifest: dict
    asm: dict[str, str]

    @property
    def artifact_path(self) -> Path:
        return self.path / self.manifest["artifact"]


class _Corrupt(Exception):
    pass


class _KeyLock:
    """``filelock.FileLock`` whose timeout becomes a CacheError that says what to do."""

    def __init__(self, path: Path):
        import filelock

        self.path = path
        self._timeout = filelock.Timeout
        try:  # newer filelock may delete the lock file on release, which races under load
            self._lock = filelock.FileLock(str(path), timeout=_LOCK_TIMEOUT, preserve_lock_file=True)
        except TypeError:
            self._lock = filelock.FileLock(str(path), timeout=_LOCK_TIMEOUT)

    def __enter__(self):
        try:
            self._lock.acquire()
        except self._timeout:
            raise CacheError(f"waited {_LOCK_TIMEOUT:.0f} s for kernel cache lock {self.path}, held "
                             f"by another compile of the same kernel; if no such process is alive, "
                             f"delete the lock file") from None
        return self

    def __exit__(self, *exc):
        self._lock.release()
        return False


_readonly_said: set = set()


def _warn_readonly_once(root: Path, exc: OSError) -> None:
    if str(root) in _readonly_said:
        return
    _readonly_said.add(str(root))
    from ..errors import user_stacklevel

    warnings.warn(f"kernel cache folder {root} cannot be written ({exc.strerror or exc}): kernels already "
                  f"there are used, new ones are compiled into a private temporary folder for this "
                  f"process (set TILELANG_CACHE_DIR to a writable folder to keep them)",
                  ReadOnlyCacheWarning, stacklevel=user_stacklevel())


class ReadOnlyCacheWarning(UserWarning):
    """The kernel cache folder can be read but not written (see DiskCache.readonly)."""


class DiskCache:
    """One cache folder. ``DiskCache.from_config()`` honours the TILELANG_* variables.

        cache = DiskCache(Path("/tmp/kc"))
        with cache.lock(key):
            entry = cache.lookup(key, evict_corrupt=True) or cache.publish(key, ...)
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self.base = self.root / FORMAT
        #: a folder this process can read but not write (a shared, pre-warmed cache on a cluster):
        #: kernels found there are used; new ones are built in a private temporary folder
        self.readonly = False
        try:
            self._probe_writable()
        except OSError as exc:
            if not self.root.is_dir() or not os.access(self.root, os.R_OK | os.X_OK):
                raise CacheError(f"kernel cache folder {self.root} is unusable ({exc}); set "
                                 f"TILELANG_CACHE_DIR to a writable folder, or TILELANG_DISABLE_CACHE=1 "
                                 f"to compile without a cache") from exc
            self.readonly = True
            _warn_readonly_once(self.root, exc)

    def _probe_writable(self) -> None:
        for sub in ("kernels", "staging", "trash", "locks"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        probe = self.base / "staging" / f".probe.{os.getpid()}.{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()

    @classmethod
    def from_config(cls) -> "DiskCache | None":
        from .. import config

        if config.cache_disabled():
            return None
        return cls(config.cache_dir())

    # -- paths ----------------------------------------------------------------------------------
    def entry_path(self, key: str) -> Path:
        return self.base / "kernels" / key[:2] / key

    def _unique(self, folder: str, key: str) -> Path:
        return self.base / folder / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"

    def lock(self, key: str):
        """A per-key inter-process (and inter-thread) lock; use as a context manager."""
        return _KeyLock(self.base / "locks" / f"{key}.lock")

    # -- read -----------------------------------------------------------------------------------
    def lookup(self, key: str, *, evict_corrupt: bool = False) -> CacheEntry | None:
        """The verified entry for ``key``, or None. Corrupt entries are evicted only when asked
        (the caller then holds the lock)."""
        path = self.entry_path(key)
        if not path.is_dir():
            return None
        try:
            return self._verify(key, path)
        except _Corrupt as exc:
            if evict_corrupt:
                warnings.warn(f"kernel cache entry {path} is corrupt ({exc}); evicting and "
                              f"rebuilding it", CacheCorruptionWarning, stacklevel=3)
                self.evict(key)
            return None

    def _verify(self, key: str, path: Path) -> CacheEntry:
        try:
            manifest = json.loads((path / "manifest.json").read_text())
            files = manifest["files"]
            if manifest.get("key") != key or manifest["artifact"] not in files:
                raise _Corrupt("manifest does not describe this entry")
            asm = {}
            for name, meta in files.items():
                file = path / name
                if file.stat().st_size != meta["size"]:
                    raise _Corrupt(f"{name} has {file.stat().st_size} bytes, expected {meta['size']}")
                if _sha256(file) != meta["sha256"]:
                    raise _Corrupt(f"{name} does not match its sha256")
                if name.startswith("asm/"):
                    asm[name[4:-4]] = file.read_text()
        except _Corrupt:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _Corrupt(f"{type(exc).__name__}: {exc}") from exc
        stages = manifest.get("stages", list(asm))
        return CacheEntry(key, path, manifest, {s: asm[s] for s in stages if s in asm})

    # -- write ----------------------------------------------------------------------------------
    def publish(self, key: str, *, artifact: bytes, suffix: str, asm: Mapping[str, str],
                meta: Mapping) -> CacheEntry:
        """Write an entry to staging and rename it into place. Call with ``lock(key)`` held."""
        self._sweep()
        staging = self._unique("staging", key)
        try:
            (staging / "asm").mkdir(parents=True)
            files = {}
            artifact_name = f"kernel{suffix}"
            items = [(artifact_name, artifact)]
            items += [(f"asm/{stage}.txt", text.encode()) for stage, text in asm.items()]
            for name, data in items:
                self._write(staging / name, data)
                files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            manifest = dict(meta, key=key, artifact=artifact_name, files=files, stages=list(asm),
                            format=FORMAT, created=time.time())
            self._write(staging / "manifest.json", json.dumps(manifest, indent=1).encode())
            final = self.entry_path(key)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(staging, final)
            except OSError:
                # a complete entry already sits there (published outside our lock, or left from
                # a crash after rename): keep it if it verifies, else replace it
                if self.lookup(key) is None:
                    self.evict(key)
                    os.rename(staging, final)
        except OSError as exc:
            raise CacheError(f"cannot write kernel cache entry under {self.root} ({exc}); free "
                             f"space or set TILELANG_CACHE_DIR / TILELANG_DISABLE_CACHE=1") from exc
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        entry = self.lookup(key)
        if entry is None:
            raise CacheError(f"kernel cache entry {self.entry_path(key)} failed verification right "
                             f"after it was written; the cache folder may be on a faulty filesystem")
        return entry

    @staticmethod
    def _write(path: Path, data: bytes):
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def evict(self, key: str) -> None:
        """Remove an entry: rename it out of sight first so readers never see half of it."""
        path = self.entry_path(key)
        if not path.exists():
            return
        trash = self._unique("trash", key)
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    def _sweep(self):
        # leftovers of writers that crashed mid-entry; a day old is surely dead
        now = time.time()
        for folder in ("staging", "trash"):
            try:
                for child in (self.base / folder).iterdir():
                    if now - child.stat().st_mtime > _STALE_SECONDS:
                        shutil.rmtree(child, ignore_errors=True)
            except OSError:
                pass
