"""What the core knows about first-party backends without importing them.

Two uses only: naming the package that provides an unknown target kind, and noticing a device
whose plugin is not installed (so ``auto`` can say which package to install). The full probes
live in the backend packages; these checks are deliberately coarse (the device node exists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .host import HostView


@dataclass(frozen=True)
class KnownBackend:
    kind: str
    distribution: str
    device: str
    evidence: Callable[[HostView], list[str]]


def _nvidia(host: HostView) -> list[str]:
    return host.device_nodes(r"nvidia\d+")


def _amd(host: HostView) -> list[str]:
    return ["/dev/kfd"] if host.exists("/dev/kfd") else []


def _ascend(host: HostView) -> list[str]:
    return host.device_nodes(r"davinci\d+")


def _apple(host: HostView) -> list[str]:
    if host.system == "Darwin" and host.machine == "arm64":
        return ["platform: macOS on arm64 (Apple silicon)"]
    return []


FIRST_PARTY: dict[str, KnownBackend] = {
    known.kind: known
    for known in (
        KnownBackend("cuda", "tilelang-cuda", "NVIDIA GPU", _nvidia),
        KnownBackend("hip", "tilelang-hip", "AMD GPU", _amd),
        KnownBackend("ascend", "tilelang-ascend", "Huawei Ascend NPU", _ascend),
        KnownBackend("metal", "tilelang-metal", "Apple GPU", _apple),
        KnownBackend("cpu", "tilelang-cpu", "host CPU", lambda host: []),
    )
}

#: other spellings users type, mapped to the first-party kind
ALIASES = {"nvidia": "cuda", "rocm": "hip", "amd": "hip", "asc": "ascend", "npu": "ascend",
           "mps": "metal", "apple": "metal", "llvm": "cpu", "c": "cpu"}


def install_hint(kind: str) -> str | None:
    known = FIRST_PARTY.get(ALIASES.get(kind, kind))
    return f"pip install {known.distribution}" if known else None
