"""Ascend target facts (Da Vinci archs, on-chip buffer sizes) and the device-node probe.

Standard library only. The probe reads /dev/davinci<N> and ASCEND_RT_VISIBLE_DEVICES; it never
runs npu-smi or initializes the driver.
"""

from __future__ import annotations

from tilelang_core.plugin import DeviceProbe, HostView, visible_indices

ARCHS = ("dav-3510", "dav-c220")  # Ascend 950; Atlas A2/A3 (910B/910C)
DEFAULT_ARCH = "dav-3510"

_DTYPES = ("float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8")
CAPABILITIES = {
    "*": {"dtypes": _DTYPES, "cube_dtypes": ("float16", "bfloat16", "int8"),
          "alignment_bytes": 32, "fractal": (16, 16)},
    "dav-c220": {"cube_cores_per_ai_core": 1, "vector_cores_per_ai_core": 2,
                 "l1_bytes": 524288, "l0a_bytes": 65536, "l0b_bytes": 65536, "l0c_bytes": 131072,
                 "ub_bytes": 196608},
    "dav-3510": {"cube_cores_per_ai_core": 1, "vector_cores_per_ai_core": 2,
                 "l1_bytes": 524288, "l0a_bytes": 65536, "l0b_bytes": 65536, "l0c_bytes": 262144,
                 "ub_bytes": 262144, "cube_dtypes": ("float16", "bfloat16", "int8", "float8_e4m3",
                                                     "float8_e5m2")},
}


def probe(host: HostView) -> list[DeviceProbe]:
    nodes = host.device_nodes(r"davinci\d+")
    if not nodes:
        return []
    evidence = list(nodes)
    count = len(nodes)
    visible = visible_indices(host.getenv("ASCEND_RT_VISIBLE_DEVICES"), count)
    if visible is not None:
        evidence.append(f"ASCEND_RT_VISIBLE_DEVICES={host.getenv('ASCEND_RT_VISIBLE_DEVICES')}")
        count = len(visible)
    return [DeviceProbe(kind="ascend", count=count, evidence=tuple(evidence), names=("Ascend NPU",))]
