"""HIP target facts: archs (gfx targets), wave sizes, LDS and matrix units, and the KFD probe.

Standard library only: imported by the plugin entry point at discovery time.
"""

from __future__ import annotations

import re

from tilelang_core.plugin import DeviceProbe, HostView, visible_indices

ARCHS = ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx1100", "gfx1101", "gfx1102")
DEFAULT_ARCH = "gfx942"

_CDNA = {"wave_size": 64, "lds_bytes": 65536, "matrix_unit": "mfma",
         "mfma": ("float16", "bfloat16", "float32", "int8")}
_RDNA3 = {"wave_size": 32, "lds_bytes": 65536, "matrix_unit": "wmma",
          "wmma": ("float16", "bfloat16", "int8")}

CAPABILITIES = {
    "*": {"max_threads_per_block": 1024,
          "dtypes": ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                     "uint32", "int64", "uint64", "bool")},
    "gfx90a": _CDNA,
    "gfx940": {**_CDNA, "mfma": _CDNA["mfma"] + ("float8_e4m3fnuz", "float8_e5m2fnuz")},
    "gfx941": {**_CDNA, "mfma": _CDNA["mfma"] + ("float8_e4m3fnuz", "float8_e5m2fnuz")},
    "gfx942": {**_CDNA, "mfma": _CDNA["mfma"] + ("float8_e4m3fnuz", "float8_e5m2fnuz")},
    "gfx1100": _RDNA3, "gfx1101": _RDNA3, "gfx1102": _RDNA3,
}

_TOPOLOGY = "/sys/class/kfd/kfd/topology/nodes"


def gfx_name(version: int) -> str:
    """KFD's gfx_target_version (major*10000 + minor*100 + stepping) -> 'gfx942', 'gfx90a'."""
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def probe(host: HostView) -> list[DeviceProbe]:
    """AMD GPUs from /dev/kfd and the KFD topology in sysfs (never hipInit)."""
    if not host.exists("/dev/kfd"):
        return []
    evidence, archs = ["/dev/kfd"], []
    for node in host.listdir(_TOPOLOGY):
        props = host.read_text(f"{_TOPOLOGY}/{node}/properties") or ""
        simds = re.search(r"^simd_count\s+(\d+)", props, re.MULTILINE)
        if not simds or int(simds.group(1)) == 0:
            continue  # a CPU node
        version = re.search(r"^gfx_target_version\s+(\d+)", props, re.MULTILINE)
        arch = gfx_name(int(version.group(1))) if version else None
        archs.append(arch)
        evidence.append(f"{_TOPOLOGY}/{node}/properties: simd_count {simds.group(1)}"
                        + (f", {arch}" if arch else ""))
    if not archs:
        return []
    # ROCr filters first; HIP's variable (CUDA's as its alias) then indexes what ROCr left
    for names in (("ROCR_VISIBLE_DEVICES",), ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")):
        for name in names:
            visible = visible_indices(host.getenv(name), len(archs))
            if visible is not None:
                evidence.append(f"{name}={host.getenv(name)}")
                archs = [archs[i] for i in visible if i < len(archs)]
                break
    if not archs:
        return []  # every GPU hidden by a *_VISIBLE_DEVICES variable
    known = [a for a in archs if a]
    return [DeviceProbe(kind="hip", count=len(archs), evidence=tuple(evidence),
                        arch=known[0] if known else None, names=tuple(f"AMD {a}" for a in known))]


def tvm_target(target) -> dict:
    return {"kind": "rocm", "mcpu": target.arch or DEFAULT_ARCH}
