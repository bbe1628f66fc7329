"""Ascend target facts (Da Vinci archs, on-chip buffer sizes) and the device-node probe.

Standard library only. The probe reads /dev/davinci<N> and ASCEND_RT_VISIBLE_DEVICES; it never
runs npu-smi or initializes the driver.
"""

from __future__ import annotations

from tilelang_core.plugin import DeviceProbe, HostView, visible_indices

ARCHS = ("dav-3510", "dav-c220")  # Ascend 950; Atlas A2/A3 (910B/910C)
DEFAULT_ARCH = "dav-3510"
#: target feature: build for the functional simulator instead of bisheng (``ascend+sim``)
SIM_FEATURE = "sim"
FEATURES = (SIM_FEATURE,)

_DTYPES = ("float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8")
CAPABILITIES = {
    "*": {"dtypes": _DTYPES, "cube_dtypes": ("float16", "bfloat16", "int8"),
          "alignment_bytes": 32, "fractal": (16, 16), "simt_vector": False},
    "dav-c220": {"cube_cores_per_ai_core": 1, "vector_cores_per_ai_core": 2,
                 "l1_bytes": 524288, "l0a_bytes": 65536, "l0b_bytes": 65536, "l0c_bytes": 131072,
                 "ub_bytes": 196608},
    # Ascend 950's Vector cores also run SIMT vector functions (T.SimtVF)
    "dav-3510": {"cube_cores_per_ai_core": 1, "vector_cores_per_ai_core": 2, "simt_vector": True,
                 "l1_bytes": 524288, "l0a_bytes": 65536, "l0b_bytes": 65536, "l0c_bytes": 262144,
                 "ub_bytes": 262144, "cube_dtypes": ("float16", "bfloat16", "int8", "float8_e4m3",
                                                     "float8_e5m2")},
}


#: Alignment of buffer start addresses, in bytes, per memory, as the planner and the simulator
#: enforce them: UB and L1 transfers move 32-byte blocks; L0A/L0B hold 512-byte fractals
#: (16x16 half); L0C holds 1024-byte fractals (16x16 float). GM tiles need no alignment (MTE
#: bursts handle any start), but every row of a UB tile must start on a 32-byte block.
ALIGNMENT = {"GM": 1, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 1024, "UB": 32}
#: bytes one Vector instruction repeat processes (8 blocks of 32 bytes)
VECTOR_REPEAT_BYTES = 256
#: event ids per pipe pair for SetFlag/WaitFlag (EVENT_ID0..7)
EVENT_IDS = 8
#: cross-core flag ids the A2/A3 docs allow (0-10), and how many sets may be pending on one flag
#: (the docs say at most 16; we stop at 15 to stay clear of the edge)
CROSS_CORE_FLAGS = 11
CROSS_CORE_FLAG_LIMIT = 15


def memory_sizes(arch: str) -> dict[str, int]:
    """Capacity in bytes of each on-chip memory of ``arch`` (keys as in ALIGNMENT, no GM)."""
    caps = {**CAPABILITIES["*"], **CAPABILITIES.get(arch, CAPABILITIES[DEFAULT_ARCH])}
    return {"L1": caps["l1_bytes"], "L0A": caps["l0a_bytes"], "L0B": caps["l0b_bytes"],
            "L0C": caps["l0c_bytes"], "UB": caps["ub_bytes"]}


def capability(arch: str, key: str):
    """One capability of ``arch`` (arch-specific value first, then the shared one)."""
    specific = CAPABILITIES.get(arch, {})
    return specific[key] if key in specific else CAPABILITIES["*"][key]


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
