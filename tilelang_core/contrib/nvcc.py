"""``tilelang.contrib.nvcc``: the CUDA toolkit and device versions a script may ask for.

    from tilelang_core.contrib import nvcc
    nvcc.get_target_compute_version()   # "9.0" on an H200 (target's arch, else the device)
    nvcc.get_cuda_version()             # 13.0 (the nvcc on PATH / CUDA_HOME)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess


def find_cuda_path() -> str:
    """The CUDA toolkit root: CUDA_HOME / CUDA_PATH, else the folder above the nvcc on PATH."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.isdir("/usr/local/cuda"):
        return "/usr/local/cuda"
    raise RuntimeError("no CUDA toolkit found: set CUDA_HOME or put nvcc on PATH")


def get_cuda_version(cuda_path: str | None = None) -> float:
    """The toolkit's version as a float (13.0), from ``nvcc --version``."""
    root = cuda_path or find_cuda_path()
    nvcc = os.path.join(root, "bin", "nvcc")
    if not os.path.exists(nvcc):
        nvcc = shutil.which("nvcc") or nvcc
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"release (\d+)\.(\d+)", out)
    if not found:
        raise RuntimeError(f"cannot read the CUDA version from `{nvcc} --version`:\n{out}")
    return float(f"{found.group(1)}.{found.group(2)}")


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """ "9.0" -> (9, 0)."""
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise RuntimeError(f"compute version {compute_version!r} is not of the form 'major.minor'") from None


def get_target_compute_version(target=None) -> str:
    """The compute capability ("8.0", "9.0", "10.0") of ``target``'s arch, of the active
    ``with tilelang.Target(...)`` target, else of CUDA device 0."""
    arch = _arch_of(target)
    if arch is None:
        from ..target import Target

        arch = _arch_of(Target.current())
    if arch is not None:
        digits = re.sub(r"[^0-9]", "", arch)
        return f"{digits[:-1]}.{digits[-1]}"
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA target given and no CUDA device visible to torch")
    major, minor = torch.cuda.get_device_capability(0)
    return f"{major}.{minor}"


def _arch_of(target) -> str | None:
    if target is None:
        return None
    arch = getattr(target, "arch", None)
    if arch is None and isinstance(target, str) and ":" in target:
        arch = target.split(":", 1)[1]
    if arch and str(arch).startswith("sm_"):
        return str(arch)
    return None


def have_fp16(compute_version: str) -> bool:
    major, minor = parse_compute_version(compute_version)
    return major > 5 or (major == 5 and minor >= 3)


def have_bf16(compute_version: str) -> bool:
    return parse_compute_version(compute_version)[0] >= 8


def have_tensorcore(compute_version: str | None = None, target=None) -> bool:
    return parse_compute_version(compute_version or get_target_compute_version(target))[0] >= 7


def have_fp8(compute_version: str) -> bool:
    major, minor = parse_compute_version(compute_version)
    return (major, minor) >= (8, 9)


__all__ = ["find_cuda_path", "get_cuda_version", "get_target_compute_version", "have_bf16", "have_fp16",
           "have_fp8", "have_tensorcore", "parse_compute_version"]
