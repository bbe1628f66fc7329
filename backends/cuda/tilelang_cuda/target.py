"""CUDA target facts: archs, capabilities, and the device probe.

Standard library only: imported by the plugin entry point at discovery time.
"""

from __future__ import annotations

import re

from tilelang_core.plugin import DeviceProbe, HostView, visible_indices

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
DEFAULT_ARCH = "sm_80"

_COMMON = {
    "warp_size": 32,
    "max_threads_per_block": 1024,
    "registers_per_thread": 255,
    "dtypes": ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
               "int64", "uint32", "uint64", "bool"),
    # operand types mma.sync takes (float32 operands run as tensorfloat32); lower_gemm/mma.py
    # picks the instruction through this entry, so an arch without a type gets the FMA path
    "mma": ("float16", "bfloat16", "tensorfloat32", "int8", "uint8"),
    "async_copy": True,  # cp.async (LDGSTS)
    "tensor_core": "mma.sync",
}

#: fp8 element types (TVM spells e4m3 "float8_e4m3fn"), from Ada on
_FP8 = ("float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")

#: per-arch facts; shared memory is the opt-in maximum per block in bytes
CAPABILITIES = {
    "*": _COMMON,
    "sm_80": {"max_shared_memory_per_block": 166912, "shared_memory_per_sm": 167936},
    "sm_86": {"max_shared_memory_per_block": 101376, "shared_memory_per_sm": 102400},
    "sm_89": {"max_shared_memory_per_block": 101376, "shared_memory_per_sm": 102400,
              "dtypes": _COMMON["dtypes"] + _FP8,
              "mma": _COMMON["mma"] + ("float8_e4m3", "float8_e5m2")},
    "sm_90": {"max_shared_memory_per_block": 232448, "shared_memory_per_sm": 233472,
              "dtypes": _COMMON["dtypes"] + _FP8,
              "mma": _COMMON["mma"] + ("float8_e4m3", "float8_e5m2"), "clusters": True,
              "vector_red": True},
    "sm_90a": {"max_shared_memory_per_block": 232448, "shared_memory_per_sm": 233472,
               "dtypes": _COMMON["dtypes"] + _FP8,
               "mma": _COMMON["mma"] + ("float8_e4m3", "float8_e5m2"), "clusters": True,
               "tensor_core": "wgmma", "tma": True, "setmaxnreg": True,
               "vector_red": True},  # red.global.add.v4.f32 (vector_atomics.py)
}

# Product names in /proc/driver/nvidia/gpus/*/information -> arch. Hopper parts get sm_90a: the
# arch-specific features (wgmma, setmaxnreg) are what make them fast, and every Hopper has them.
_MODEL_ARCH = [
    (r"\b(H100|H200|H800|H20|GH200)\b", "sm_90a"),
    (r"\b(A100|A800|A30)\b", "sm_80"),
    (r"\b(A10G?|A16|A2|A40|A4000|A4500|A5000|A5500|A6000)\b|RTX 30\d0|RTX A\d+", "sm_86"),
    (r"\b(L4|L40S?|L20)\b|RTX 40\d0|RTX \d+ Ada", "sm_89"),
]


def capability(arch: str, key: str):
    """``key`` of ``arch``'s row of CAPABILITIES, else the common value."""
    return CAPABILITIES.get(arch, {}).get(key, CAPABILITIES["*"].get(key))


def arch_of_model(model: str) -> str | None:
    for pattern, arch in _MODEL_ARCH:
        if re.search(pattern, model):
            return arch
    return None


def probe(host: HostView) -> list[DeviceProbe]:
    """NVIDIA GPUs from /dev/nvidia<N> nodes and the driver's /proc files (no driver call)."""
    nodes = host.device_nodes(r"nvidia\d+")
    if not nodes:
        return []
    evidence = list(nodes)
    models = []
    for bus in host.listdir("/proc/driver/nvidia/gpus"):
        info = host.read_text(f"/proc/driver/nvidia/gpus/{bus}/information") or ""
        match = re.search(r"^Model:\s*(.+)$", info, re.MULTILINE)
        if match:
            models.append(match.group(1).strip())
            evidence.append(f"/proc/driver/nvidia/gpus/{bus}/information: {match.group(1).strip()}")
    count = max(len(nodes), len(models))
    visible = visible_indices(host.getenv("CUDA_VISIBLE_DEVICES"), count)
    if visible is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES={host.getenv('CUDA_VISIBLE_DEVICES')}")
        models = [models[i] for i in visible if i < len(models)]
        count = len(visible)
    archs = [a for a in (arch_of_model(m) for m in models) if a]
    return [DeviceProbe(kind="cuda", count=count, evidence=tuple(evidence),
                        arch=archs[0] if archs else None, names=tuple(models))]


def tvm_target(target) -> dict:
    """TVM's target dict for a CUDA target; the host side is the tvm-ffi `cuda_host` wrapper."""
    return {"kind": "cuda", "arch": target.arch or DEFAULT_ARCH, "host": {"kind": "cuda_host"}}
