"""TileLang's pytest helpers (``tilelang.testing``): device requirements, ``main``, seeding.

    import tilelang_core.testing

    @tilelang_core.testing.requires_cuda
    def test_gemm(): ...

    @tilelang_core.testing.requires_cuda_compute_version_ge(9, 0)
    def test_wgmma(): ...

    if __name__ == "__main__":
        tilelang_core.testing.main()            # pytest on this file

A requirement is decided once, when the decorator runs, and a test that does not meet it is skipped
with the reason (``Requires CUDA compute ge 9.0, but have 8.0``). Devices are found cheaply: through
``torch.cuda`` when torch is already imported (then torch is the program's view of the GPU), else
through the backends' device probes (``tilelang_core doctor``'s view: device nodes and driver
files, no driver call). Nothing heavy is imported with this module: pytest, torch and the plugin
manager load inside the functions.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import sys
from typing import Callable

MODES = ("ge", "gt", "le", "lt", "eq")


# -- what this machine has --------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _probed(kind: str) -> tuple:
    """The probe's devices of ``kind`` (``cuda``, ``hip``, ``metal``); () when none or no probe."""
    try:
        from ..plugin.manager import get_plugin_manager

        report = get_plugin_manager().probe()
    except Exception:  # noqa: BLE001 - a broken plugin setup means: no device of that kind
        return ()
    return tuple(d for d in report.devices if d.kind == kind and d.count > 0)


def _loaded_torch():
    return sys.modules.get("torch")


def has_cuda() -> bool:
    """True when a CUDA device is there (see the module docstring for how it is found)."""
    torch = _loaded_torch()
    if torch is not None:
        try:
            return bool(torch.cuda.is_available()) and getattr(torch.version, "hip", None) is None
        except Exception:  # noqa: BLE001 - a torch without CUDA support
            return False
    return bool(_probed("cuda"))


def _parse_arch(arch: str | None) -> tuple[int, int] | None:
    match = re.fullmatch(r"sm_(\d+)(\d)a?", arch or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def cuda_compute_version() -> tuple[int, int]:
    """(major, minor) compute capability of the first CUDA device; (0, 0) without one."""
    if not has_cuda():
        return (0, 0)
    torch = _loaded_torch()
    if torch is None:
        found = next((v for v in (_parse_arch(d.arch) for d in _probed("cuda")) if v), None)
        if found is not None:
            return found
        import torch  # a device the probe could not name: ask the driver through torch
    try:
        major, minor = torch.cuda.get_device_capability()
    except Exception:  # noqa: BLE001
        return (0, 0)
    return (int(major), int(minor))


def has_rocm() -> bool:
    torch = _loaded_torch()
    if torch is not None:
        try:
            return bool(torch.cuda.is_available()) and getattr(torch.version, "hip", None) is not None
        except Exception:  # noqa: BLE001
            return False
    return bool(_probed("hip"))


def rocm_arch() -> str | None:
    """The gfx name of the first ROCm device (``gfx942``), None without one or when unknown."""
    if not has_rocm():
        return None
    torch = _loaded_torch()
    if torch is not None:
        try:
            return str(torch.cuda.get_device_properties(0).gcnArchName).split(":")[0]
        except Exception:  # noqa: BLE001
            return None
    return next((d.arch for d in _probed("hip") if d.arch), None)


def has_metal() -> bool:
    torch = _loaded_torch()
    if torch is not None:
        try:
            return bool(torch.backends.mps.is_available())
        except Exception:  # noqa: BLE001
            return False
    return bool(_probed("metal"))


# -- marks --------------------------------------------------------------------------------------------
# (the checks are looked up when a decorator runs, not bound here, so a test can stand in for them)
def _apply(func, marks: list):
    for mark in marks:
        func = mark(func)
    return func


class Requirement:
    """A skip condition usable as ``@req``, ``@req()`` or ``pytest.mark``-style via ``marks()``."""

    def __init__(self, name: str, present: Callable[[], bool], reason: str):
        self.name = name
        self._present = present
        self.reason = reason

    def present(self) -> bool:
        return bool(self._present())

    def marks(self) -> list:
        import pytest

        return [pytest.mark.skipif(not self.present(), reason=self.reason)]

    def __call__(self, func=None):
        if func is None:
            return self
        return _apply(func, self.marks())

    def __repr__(self) -> str:
        return f"<requirement {self.name}>"


requires_cuda = Requirement("cuda", lambda: has_cuda(), "Requires a CUDA device (none found; the cpu backend "
                                               "and the SIMT interpreter cover what runs without one)")
requires_rocm = Requirement("rocm", lambda: has_rocm(), "Requires a ROCm device")
requires_metal = Requirement("metal", lambda: has_metal(), "Requires a Metal device")
requires_llvm = Requirement("llvm", lambda: importlib.util.find_spec("tilelang_cpu") is not None,
                            "Requires the cpu backend (pip install tilelang-cpu: LLVM through TVM)")
requires_cdna = Requirement("cdna", lambda: (rocm_arch() or "").startswith("gfx9"),
                            "Requires CDNA ROCm target")
requires_cuda_or_cdna = Requirement("cuda_or_cdna", lambda: has_cuda() or requires_cdna.present(),
                                    "Requires CUDA or CDNA ROCm target")
requires_gfx950 = Requirement("gfx950", lambda: rocm_arch() == "gfx950",
                              "Requires gfx950 (CDNA4/MI350)")


def requires_package(*packages: str):
    """Skip unless every package in ``packages`` can be imported.

        @requires_package("flash_attn")
        def test_against_flash_attention(): ...
    """
    def importable(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package that is missing or broken
            return False

    missing = [p for p in packages if not importable(p)]

    def decorator(func):
        import pytest

        return pytest.mark.skipif(bool(missing), reason=f"Requires package(s) {', '.join(missing)}")(func)

    return decorator


def _compare(have: tuple[int, int], want: tuple[int, int], mode: str) -> bool:
    return {"ge": have >= want, "gt": have > want, "le": have <= want, "lt": have < want,
            "eq": have == want}[mode]


def requires_cuda_compute_version(major_version: int, minor_version: int = 0, mode: str = "ge"):
    """Skip unless a CUDA device is there and its compute capability compares to
    ``(major_version, minor_version)`` by ``mode``: ge (default), gt, le, lt or eq.

        @requires_cuda_compute_version(9, 0)          # Hopper and later
        @requires_cuda_compute_version(8, 9, mode="lt")
    """
    if mode not in MODES:
        raise ValueError(f"Invalid mode: {mode!r}; use one of {', '.join(MODES)}")
    want = (int(major_version), int(minor_version))

    def decorator(func):
        import pytest

        have = cuda_compute_version()
        reason = (f"Requires CUDA compute {mode} {want[0]}.{want[1]}, but have "
                  f"{have[0]}.{have[1]}")
        func = pytest.mark.skipif(not _compare(have, want, mode), reason=reason)(func)
        return requires_cuda(func)

    return decorator


def requires_cuda_compute_version_ge(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, mode="ge")


def requires_cuda_compute_version_gt(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, mode="gt")


def requires_cuda_compute_version_eq(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, mode="eq")


def requires_cuda_compute_version_lt(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, mode="lt")


def requires_cuda_compute_version_le(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, mode="le")


# -- running --------------------------------------------------------------------------------------------
def main() -> None:
    """Run pytest on the calling file (with this process's command-line arguments) and exit with
    its status: ``if __name__ == "__main__": tilelang_core.testing.main()``."""
    import pytest

    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file, *sys.argv[1:]]))


def set_random_seed(seed: int = 42) -> None:
    """Seed Python's, numpy's and torch's generators (every CUDA device's too)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


__all__ = [
    "Requirement", "cuda_compute_version", "has_cuda", "has_metal", "has_rocm", "main", "requires_cdna",
    "requires_cuda", "requires_cuda_compute_version", "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge", "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_le", "requires_cuda_compute_version_lt", "requires_cuda_or_cdna",
    "requires_gfx950", "requires_llvm", "requires_metal", "requires_package", "requires_rocm",
    "rocm_arch", "set_random_seed",
]
