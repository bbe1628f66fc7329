"""The SIMT kit's C-style emitter: TVM's CUDA C printer, for every backend whose kernel language
is CUDA-like C++ (CUDA itself, HIP).

HIP C++ and CUDA C++ agree on kernels (``extern "C" __global__``, ``threadIdx``, ``__shared__``,
``__syncthreads``) and differ in declarations, so a backend keeps the kernels TVM prints and swaps
the declarations: ``split_exported`` cuts the ``cuda_host`` export into TVM's CUDA preamble
(includes, fp16 shims), the kernels, and the tvm-ffi host wrapper; the HIP backend prepends its
own prelude to the kernels and rewrites the wrapper's launches.

Example::

    lib = build_c_module(mod)                   # thread-level IRModule from lower_simt
    parts = split_exported(export_c_source(lib))
    parts.kernels                               # 'extern "C" __global__ void ...'
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass

from tilelang_core.errors import CompileError

PIPELINE_NAME = "tilelang_simt_c"
#: the wrapper's first include marks where host code starts in the exported source
HOST_MARKER = "#include <tvm/ffi/c_api.h>"
KERNEL_MARKER = 'extern "C" __global__'


_KERNEL_DECL = re.compile(
    r'extern "C" __global__ void (?:__launch_bounds__\(\d+(?:,\s*\d+)?\)\s*)?'
    r'(?:__cluster_dims__\(\d+,\s*\d+,\s*\d+\)\s*)?(\w+)\((.*?)\);', re.S)


@dataclass(frozen=True)
class KernelDecl:
    """A ``__global__`` function: its name and host-side parameter types (for a launcher)."""

    name: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class ExportedSource:
    preamble: str   # TVM's CUDA includes and fp16 shims (a backend with its own prelude drops it)
    kernels: str    # the __global__ functions
    host: str       # the tvm-ffi ABI wrapper (argument checks, launch)


def _tir_pipeline(vector_casts=None):
    """TVM passes after the kit's lowering: clean-up, codegen preparation, host/device split.

    Not the s_tir pipeline: its CompactBufferAllocation shrinks buffers to the elements it sees
    indexed, which is wrong for register arrays reached through pointers (matrix operands,
    vector copies), and its ThreadSync adds barriers the kit already placed.

    ``vector_casts``: the backend's vector conversions (transform/vector_casts.py), printed as one
    call after VectorizeLoop instead of lane by lane.

    No RemoveNoOp after StmtSimplify: it left the SASS of every examples/ kernel (sm_80, sm_90a)
    unchanged and took 0.6 of 3.1 s compiling TileLang's varlen block-causal attention forward
    (its 2200 unrolled lines; bench/NOTES.md, stop 63). The second StmtSimplify, in TVM's device
    finalization, stays: without it nvcc split vector loads (norms: 5 -> 14 LDG).
    """
    import tvm
    from tvm import tirx
    from tvm.tirx import compilation_pipeline as cp

    from ..transform.positive_floor_dividends import PositiveFloorDividends
    from .transform.kernel_attrs import KernelAttrs
    from .transform.printable import Printable, RestoreRuntimeUnroll
    from .transform.vector_casts import VectorCastCalls

    @tvm.transform.module_pass(opt_level=0, name="tilelang_simt_c.TIRPipeline")
    def _pipeline(mod, _ctx):
        passes = [  # PositiveFloorDividends: TVM's FlattenBuffer miscompiles (c - x) % m otherwise
            PositiveFloorDividends(), tirx.transform.FlattenBuffer(), tirx.transform.BF16ComputeLegalize(),
            tirx.transform.NarrowDataType(32), Printable(vector_casts), tirx.transform.VectorizeLoop(True),
            VectorCastCalls(vector_casts),
            tirx.transform.UnrollLoop(), RestoreRuntimeUnroll(), tirx.transform.StmtSimplify(),
            tirx.transform.CommonSubexprElim(), tirx.transform.FP8ComputeLegalize(),
            tirx.transform.VerifyMemory(), tirx.transform.AnnotateEntryFunc(),
            tirx.transform.SplitHostDevice(), KernelAttrs, tirx.transform.MakePackedAPI(),
            tirx.transform.FP8StorageLegalize(), tirx.transform.BF16StorageLegalize(),
        ]
        return tvm.ir.transform.Sequential(passes)(mod)

    return _pipeline, cp.finalize_host_passes, cp.finalize_device_passes


def build_c_module(mod, printer_arch: str = "sm_80", who: str = "the SIMT kit", vector_casts=None):
    """Lowered IRModule -> TVM module whose export is CUDA-like C++ (TVM's printer, ~ms).
    ``printer_arch`` only selects which CUDA features the printer may use (sm_80: fp16/bf16);
    ``vector_casts`` (a transform.vector_casts.VectorCasts) the conversions printed as one call."""
    import tvm
    from tvm.tirx import compilation_pipeline as cp

    name = PIPELINE_NAME if vector_casts is None else f"{PIPELINE_NAME}.{vector_casts.name}"
    if name not in cp.PIPELINE_MAP:
        cp.register_tir_pipeline(name, lambda: _tir_pipeline(vector_casts))
    target = tvm.target.Target({"kind": "cuda", "arch": printer_arch, "host": {"kind": "cuda_host"}})
    try:
        with no_device_compile_in_tvm():
            return tvm.tirx.build(mod, target=target, pipeline=name)
    except Exception as exc:  # TVM errors carry the whole diagnostic
        raise CompileError(f"TVM's C printer failed for {who}", log=str(exc)) from exc


def export_c_source(lib) -> str:
    import tvm.backend.cuda

    return tvm.backend.cuda.export_cuda_host(lib)


def split_exported(source: str) -> ExportedSource:
    at_kernel, at_host = source.find(KERNEL_MARKER), source.find(HOST_MARKER)
    if at_kernel < 0 or at_host < at_kernel:
        raise CompileError("TVM's cuda_host export changed shape (no kernels before the tvm-ffi "
                           "wrapper); this apache-tvm version needs an update of tilelang_core.simt")
    return ExportedSource(source[:at_kernel], source[at_kernel:at_host], source[at_host:])


def host_param_type(param: str) -> str:
    """A kernel parameter declaration -> a host C++ type with the same ABI (pointers as void*,
    fp16/bf16 scalars as their 16-bit pattern)."""
    text = re.sub(r"\s+", " ", param.replace("__restrict__", " ")).strip()
    if "*" in text:
        return "void*"
    type_part = (text.rsplit(" ", 1)[0] if " " in text else text).replace("const ", "")
    type_part = type_part.replace("__grid_constant__ ", "").strip()  # CUDA tensor maps, by value
    return "uint16_t" if type_part in ("half", "__half", "nv_bfloat16", "__nv_bfloat16") else type_part


def kernel_decls(kernels_source: str) -> tuple[KernelDecl, ...]:
    """The kernels TVM declared (``extern "C" __global__ ...;``), first declaration of each."""
    decls = {}
    for match in _KERNEL_DECL.finditer(kernels_source):
        params = [p for p in match.group(2).split(",") if p.strip()]  # no commas inside a param
        decls.setdefault(match.group(1), KernelDecl(match.group(1), tuple(host_param_type(p) for p in params)))
    return tuple(decls.values())


_TVM_COMPILE_CALLBACK = "tvm_callback_cuda_compile"
_callback_lock = threading.Lock()


@contextlib.contextmanager
def no_device_compile_in_tvm():
    """Keep TVM from compiling device code inside ``tvm.tirx.build``: where a CUDA driver is
    present it hands the printed source to NVRTC, which is wasted time for us (we add our
    helpers and compile ourselves) and fails on helpers it has not seen. The callback is
    process-global, hence the lock; the previous one is put back afterwards."""
    import tvm_ffi

    with _callback_lock:
        previous = tvm_ffi.get_global_func(_TVM_COMPILE_CALLBACK, allow_missing=True)
        tvm_ffi.register_global_func(_TVM_COMPILE_CALLBACK, lambda code, *rest: code.encode(), override=True)
        try:
            yield
        finally:
            if previous is not None:
                tvm_ffi.register_global_func(_TVM_COMPILE_CALLBACK, previous, override=True)
            else:
                tvm_ffi.remove_global_func(_TVM_COMPILE_CALLBACK)
