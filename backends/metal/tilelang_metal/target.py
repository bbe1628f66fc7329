"""Metal target facts (Apple GPU families) and the platform probe.

Standard library only. The probe reads the platform: macOS on arm64 always has an Apple GPU, and
the Metal framework on disk is the evidence; discovery never starts a subprocess or loads the
framework. ``default_device_name`` does load it (through ctypes, on demand: doctor, the runtime).
"""

from __future__ import annotations

from tilelang_core.plugin import DeviceProbe, HostView

ARCHS = ("apple7", "apple8", "apple9")  # M1, M2, M3/M4 GPU families
DEFAULT_ARCH = "apple7"

METAL_FRAMEWORK = "/System/Library/Frameworks/Metal.framework"

_DTYPES = ("float16", "float32", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
           "uint64", "bool")

CAPABILITIES = {
    "*": {"simdgroup_size": 32, "threadgroup_memory_bytes": 32768, "max_threads_per_threadgroup": 1024,
          "dtypes": _DTYPES, "simdgroup_matrix": ("float16", "float32")},
    # bfloat (MSL 3.1) and bfloat simdgroup matrices arrive with the M3 family
    "apple9": {"dtypes": _DTYPES + ("bfloat16",),
               "simdgroup_matrix": ("float16", "bfloat16", "float32")},
}


def capability(arch: str, key: str):
    return CAPABILITIES.get(arch, {}).get(key, CAPABILITIES["*"].get(key))


def probe(host: HostView) -> list[DeviceProbe]:
    if host.system != "Darwin" or host.machine != "arm64":
        return []
    evidence = ["platform: macOS on arm64 (Apple silicon)"]
    if host.exists(METAL_FRAMEWORK):
        evidence.append(METAL_FRAMEWORK)
    return [DeviceProbe(kind="metal", count=1, evidence=tuple(evidence), arch=None, names=("Apple GPU",))]


def default_device_name() -> str | None:
    """Name of the default Metal device (``MTLCreateSystemDefaultDevice().name``), or None where
    there is none (not macOS, no GPU). Loads Metal.framework through ctypes: call it on demand,
    never at discovery."""
    import ctypes
    import ctypes.util
    import sys

    if sys.platform != "darwin":
        return None
    try:
        metal = ctypes.CDLL(f"{METAL_FRAMEWORK}/Metal")
        objc = ctypes.CDLL(ctypes.util.find_library("objc") or "/usr/lib/libobjc.dylib")
    except OSError:
        return None
    metal.MTLCreateSystemDefaultDevice.restype = ctypes.c_void_p
    device = metal.MTLCreateSystemDefaultDevice()
    if not device:
        return None
    objc.sel_registerName.restype = ctypes.c_void_p
    objc.sel_registerName.argtypes = [ctypes.c_char_p]
    send = ctypes.cast(objc.objc_msgSend, ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p))
    name = send(device, objc.sel_registerName(b"name"))
    utf8 = ctypes.cast(objc.objc_msgSend, ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p))
    raw = utf8(name, objc.sel_registerName(b"UTF8String")) if name else None
    return raw.decode() if raw else "Apple GPU"


def tvm_target(target) -> dict:
    return {"kind": "metal"}
