"""``tilelang.rocm.target.check_hip_availability``: whether this machine has a ROCm (HIP) GPU.

TileLang's warp-query tests pick the default warp size with it (64 on AMD, 32 otherwise). The
answer is the testing helpers' (torch when it is already imported, else the hip backend's cheap
device probe), so importing this module stays light.

Example::

    from tilelang_core.rocm.target import check_hip_availability
    warp_size = 64 if check_hip_availability() else 32
"""

from __future__ import annotations


def check_hip_availability() -> bool:
    """True when a ROCm/HIP device is present."""
    from ..testing.pytest_helpers import has_rocm

    return has_rocm()


__all__ = ["check_hip_availability"]
