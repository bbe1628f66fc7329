"""The cpu toolchain: TVM's LLVM codegen plus the system linker, driven from Python.

``tvm.tirx.build`` compiles the lowered module for an explicit, portable x86-64 level (never
``native``: TVM rejects it, and a cached binary must not depend on an unnamed CPU); the level is the
best the host supports according to /proc/cpuinfo. ``export_library`` links the object into a
shared library with the system C compiler.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

from tilelang_core.errors import CompileError

# x86-64 micro-architecture levels (psABI), as /proc/cpuinfo flag names
_LEVELS = (
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"}),
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
)


def _cpu_flags(cpuinfo: str) -> set[str]:
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def mcpu_from_cpuinfo(cpuinfo: str) -> str:
    """The highest x86-64 level all of whose features the flags list (each level includes the one
    below it)."""
    flags = _cpu_flags(cpuinfo)
    best = "x86-64"
    for name, needed in reversed(_LEVELS):
        if not needed <= flags:
            break
        best = name
    return best


@functools.lru_cache(maxsize=1)
def host_mcpu() -> str | None:
    """LLVM CPU for this host; None where we do not pick one (non-x86: LLVM's default)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        return mcpu_from_cpuinfo(Path("/proc/cpuinfo").read_text())
    except OSError:
        return "x86-64-v2"  # every x86-64 CPU of the last 15 years has it


def llvm_target_dict(mcpu: str | None) -> dict:
    mcpu = mcpu or host_mcpu()
    return {"kind": "llvm", **({"mcpu": mcpu} if mcpu else {})}


def build_runtime_module(mod, target_dict: dict):
    """Lowered IRModule -> tvm runtime module (in memory). CompileError with TVM's message on failure."""
    import tvm

    from tilelang_core.simt.transform.printable import HideRuntimeUnroll
    from tilelang_core.transform.positive_floor_dividends import PositiveFloorDividends

    # TVM's own pipeline starts with FlattenBuffer, which miscompiles (c - x) % m otherwise; its
    # UnrollLoop stops at a T.unroll of run-time extent, which stays a serial loop here
    mod = _with_cpu_device(HideRuntimeUnroll()(PositiveFloorDividends()(mod)))
    try:
        # TVM 0.27's StorageRewrite gave a shared tile's storage to per-thread rows that are live
        # while the tile is written again (TileKernels' per-channel cast with round_sf: every
        # scale came out 0 on cpu, right on the GPUs); the cpu backend keeps each buffer its own
        outer = tvm.transform.PassContext.current()
        config = {**dict(outer.config), "tirx.disable_storage_rewrite": True}
        # TILELANG_DUMP_IR's instruments carry on, but for the timing one: leaving this context
        # would clear what it timed so far (TVM's passes of the build go untimed there)
        instruments = [i for i in outer.instruments if getattr(i, "name", "") != "PassTimingInstrument"]
        with tvm.transform.PassContext(opt_level=outer.opt_level, config=config, instruments=instruments):
            return tvm.tirx.build(mod, target=tvm.target.Target(target_dict))
    except Exception as exc:  # TVM raises TVMError subclasses with the whole diagnostic
        raise CompileError(f"TVM's LLVM codegen failed for target {target_dict}", log=str(exc)) from exc


def _with_cpu_device(mod):
    """``mod`` with the functions that call back into Python (T.print, debug_print.py) inside the
    cpu device's attributes. TVM's LowerTVMBuiltin needs them for a large buffer's workspace next to
    a packed call, and MakePackedAPI sets them only from tensors the kernel reads (TileLang's print
    test prints a shared tile of a kernel that reads none: "Unknown device id in current IR")."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    def calls_packed(func) -> bool:
        found = []
        tvm_ffi.structural_walk(func.body, [(tvm.ir.Call, lambda c: found.append(c) if isinstance(c.op, tvm.ir.Op)
                                             and str(c.op.name) == "tirx.tvm_call_packed" else None)])
        return bool(found)

    zero = tirx.const(0, "int32")
    functions = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc) and calls_packed(func):
            func = func.with_body(tirx.AttrStmt(zero, "device_id", zero, tirx.AttrStmt(
                zero, "device_type", tirx.const(1, "int32"), func.body)))  # kDLCPU, device 0
        functions[gvar] = func
    return tvm.IRModule(functions, attrs=mod.attrs)


def export_shared_library(lib, path: Path) -> bytes:
    """Link ``lib`` into the shared library ``path`` and return its bytes."""
    try:
        lib.export_library(str(path))
    except Exception as exc:
        raise CompileError(f"linking the cpu kernel into {path} failed (needs a C compiler: cc/gcc "
                           f"on PATH)", log=str(exc)) from exc
    return Path(path).read_bytes()
