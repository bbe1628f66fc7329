"""ACME target facts and device probe. Standard library + tilelang_core.plugin only.

Replace the arch names, the capability table and the device evidence with your hardware's.
Rules for a probe (the conformance suite checks them): read cheap evidence through ``host``
(device nodes, sysfs, the platform), never initialize your driver or import a framework, never
raise, answer in well under a second.
"""

from __future__ import annotations

from tilelang_core.plugin import DeviceProbe, HostView, visible_indices

ARCHS = ("acme1", "acme2")
DEFAULT_ARCH = "acme1"

#: facts your passes will ask for; "*" applies to every arch
CAPABILITIES = {
    "*": {"dtypes": ("float16", "float32", "int8", "int32"), "scratchpad_bytes": 262144, "lanes": 64},
    "acme2": {"dtypes": ("float16", "bfloat16", "float32", "int8", "int32"), "matrix_unit": "acme-mx"},
}


def probe(host: HostView) -> list[DeviceProbe]:
    """ACME boards show up as /dev/acme<N>; ACME_VISIBLE_DEVICES narrows them like CUDA's variable."""
    nodes = host.device_nodes(r"acme\d+")
    if not nodes:
        return []
    evidence = list(nodes)
    count = len(nodes)
    visible = visible_indices(host.getenv("ACME_VISIBLE_DEVICES"), count)
    if visible is not None:
        evidence.append(f"ACME_VISIBLE_DEVICES={host.getenv('ACME_VISIBLE_DEVICES')}")
        count = len(visible)
    # Where the driver exposes the model cheaply (a sysfs file), read it here to fill `arch`.
    model = (host.read_text("/sys/class/acme/acme0/model") or "").strip()
    arch = model if model in ARCHS else None
    return [DeviceProbe(kind="acme", count=count, evidence=tuple(evidence), arch=arch, names=("ACME board",))]
