"""Metal target facts (Apple GPU families) and the platform probe.

Standard library only. The probe reads the platform: macOS on arm64 always has an Apple GPU.
It never starts a subprocess or loads the Metal framework at discovery time.
"""

from __future__ import annotations

from tilelang_core.plugin import DeviceProbe, HostView

ARCHS = ("apple7", "apple8", "apple9")  # M1, M2, M3/M4 GPU families
DEFAULT_ARCH = "apple7"

CAPABILITIES = {
    "*": {"simdgroup_size": 32, "threadgroup_memory_bytes": 32768, "max_threads_per_threadgroup": 1024,
          "dtypes": ("float16", "float32", "int8", "int16", "int32", "uint32", "bool"),
          "simdgroup_matrix": ("float16", "float32")},
    "apple9": {"dtypes": ("float16", "bfloat16", "float32", "int8", "int16", "int32", "uint32", "bool"),
               "simdgroup_matrix": ("float16", "bfloat16", "float32")},
}


def probe(host: HostView) -> list[DeviceProbe]:
    if host.system != "Darwin" or host.machine != "arm64":
        return []
    return [DeviceProbe(kind="metal", count=1, evidence=("platform: macOS on arm64 (Apple silicon)",),
                        arch=None, names=("Apple GPU",))]


def tvm_target(target) -> dict:
    return {"kind": "metal"}
