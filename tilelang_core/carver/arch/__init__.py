"""``tilelang.carver.arch``: the device a kernel targets, described by its resources.

    from tilelang_core.carver.arch import CUDA, driver
    driver.get_num_sms()          # 132 on an H200
    CUDA("cuda").compute_capability, CUDA("cuda").smem_cap
"""

from __future__ import annotations

from . import driver


class TileDevice:
    """A device's resources as TileLang's carver names them."""

    platform = "unknown"

    def __init__(self, target="auto"):
        from ...target import resolve_target

        self.target = resolve_target(None if target in ("auto", None) else target)
        self.arch = getattr(self.target, "arch", None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target})"


class CUDA(TileDevice):
    """An NVIDIA GPU: the visible device's SM count and shared memory (torch), the target's arch."""

    platform = "CUDA"

    def __init__(self, target="cuda", device_id: int = 0):
        super().__init__("cuda" if target in ("auto", None) else target)
        self.device_id = device_id
        arch = str(self.arch or "")
        digits = "".join(c for c in arch if c.isdigit())
        self.compute_capability = digits or None

    @property
    def sm_count(self) -> int:
        return driver.get_num_sms(self.device_id)

    @property
    def smem_cap(self) -> int:
        return driver.get_max_dynamic_shared_size_bytes(self.device_id)

    warp_size = 32


class CDNA(TileDevice):
    """An AMD Instinct GPU (gfx9xx): wave64."""

    platform = "CDNA"
    warp_size = 64

    def __init__(self, target="hip"):
        super().__init__("hip" if target in ("auto", None) else target)


def is_cuda_arch(arch) -> bool:
    return isinstance(arch, CUDA)


def is_cdna_arch(arch) -> bool:
    return isinstance(arch, CDNA)


def is_hopper_arch(arch) -> bool:
    return isinstance(arch, CUDA) and str(arch.compute_capability or "").startswith("90")


def is_ampere_arch(arch) -> bool:
    return isinstance(arch, CUDA) and str(arch.compute_capability or "")[:2] in ("80", "86", "87")


__all__ = ["CDNA", "CUDA", "TileDevice", "driver", "is_ampere_arch", "is_cdna_arch", "is_cuda_arch",
           "is_hopper_arch"]
