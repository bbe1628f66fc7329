"""Metal Shading Language from thread-level TIRX: TVM's Metal codegen plus our prelude.

Why TVM's codegen and not an emitter of our own: after the SIMT kit's lowering, a kernel is plain
per-thread TIRX (loads, stores, loops, ``call_extern`` helpers, ``tvm_storage_sync``), which TVM's
``metal`` target prints as MSL on Linux in milliseconds: kernel signature with ``[[buffer(i)]]``
and thread-position attributes, ``threadgroup`` arrays, ``threadgroup_barrier``, vector types,
``simd_shuffle_xor``, math. Our helpers (intrinsics.PRELUDE) are spliced in after its
``using namespace metal;``. Post-edits: threadgroup arrays get ``alignas(16)`` (the 16-byte copy
helpers need it; MSL only aligns an array to its element); TVM's CUDA-style names of the
position parameters (``threadIdx``, ``blockIdx``) become ``thread_pos`` and ``group_pos``, so no
CUDA spelling is left to confuse a reader (check.py looks for them); one kernel per source.

Example::

    source, kernels = generate(mod)          # MSL text, [KernelInfo(name, params, ...)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilelang_core.errors import CompileError

PIPELINE_NAME = "tilelang_metal"
_USING = "using namespace metal;\n"
_THREADGROUP_ARRAY = re.compile(r"^(\s*)threadgroup (\w+) (\w+)\[", re.M)
_KERNEL = re.compile(r"kernel void (\w+)\(")
_POSITIONS = {"threadIdx": "thread_pos", "blockIdx": "group_pos"}


def _tir_pipeline():
    """TVM passes after our lowering: clean-up, vectorization, host/device split.

    Not the s_tir pipeline: its CompactBufferAllocation shrinks buffers to the elements it sees
    indexed (wrong for buffers reached through helper pointers) and its ThreadSync adds barriers
    the kit already placed. bfloat16 is legalized to 16-bit storage with float compute (MSL's
    ``bfloat`` needs Metal 3.1 and TVM prints none).
    """
    import tvm
    from tvm import tirx
    from tvm.tirx import compilation_pipeline as cp

    from tilelang_core.simt.transform.printable import HideRuntimeUnroll, UnrollBoolVectors
    from tilelang_core.transform.positive_floor_dividends import PositiveFloorDividends

    @tvm.transform.module_pass(opt_level=0, name="tilelang_metal.TIRPipeline")
    def _pipeline(mod, _ctx):
        T = tirx.transform
        # PositiveFloorDividends: TVM's FlattenBuffer miscompiles (c - x) % m otherwise
        passes = [PositiveFloorDividends(), T.FlattenBuffer(), T.BF16ComputeLegalize(), T.NarrowDataType(32), UnrollBoolVectors(), T.VectorizeLoop(True),
                  HideRuntimeUnroll(), T.UnrollLoop(), T.StmtSimplify(), T.RemoveNoOp(), T.CommonSubexprElim(),
                  T.VerifyMemory(), T.AnnotateEntryFunc(), T.SplitHostDevice(), T.MakePackedAPI(),
                  T.BF16StorageLegalize()]
        return tvm.ir.transform.Sequential(passes)(mod)

    return _pipeline, cp.finalize_host_passes, cp.finalize_device_passes


def build_tvm_module(mod):
    """Lowered IRModule -> TVM runtime module whose import holds the MSL (TVM codegen, ~ms)."""
    import tvm
    from tvm.tirx import compilation_pipeline as cp

    if PIPELINE_NAME not in cp.PIPELINE_MAP:
        cp.register_tir_pipeline(PIPELINE_NAME, _tir_pipeline)
    try:
        return tvm.tirx.build(mod, target=tvm.target.Target({"kind": "metal"}), pipeline=PIPELINE_NAME)
    except Exception as exc:  # TVM errors carry the whole diagnostic
        raise CompileError("TVM's Metal codegen failed", log=str(exc)) from exc


def finish_source(tvm_source: str) -> str:
    """TVM's MSL + our prelude, threadgroup arrays aligned to 16 bytes."""
    from .intrinsics import prelude_for

    at = tvm_source.find(_USING)
    if at < 0:
        raise CompileError("TVM's Metal source has no 'using namespace metal;': tilelang-metal needs an "
                           "update for this apache-tvm version")
    body = _THREADGROUP_ARRAY.sub(r"\1alignas(16) threadgroup \2 \3[", tvm_source[at + len(_USING):])
    for cuda_name, name in _POSITIONS.items():
        if re.search(rf"\b{name}\b", body):
            raise CompileError(f"TVM's Metal source already uses the name {name}; tilelang-metal needs an update")
        body = re.sub(rf"\b{cuda_name}\b", name, body)
    return tvm_source[:at + len(_USING)] + prelude_for(body) + body


def kernel_names(source: str) -> list[str]:
    return _KERNEL.findall(source)


def generate(mod) -> str:
    """MSL of a lowered one-kernel IRModule."""
    lib = build_tvm_module(mod)
    if not lib.imports:
        raise CompileError("TVM's Metal build produced no device module (no thread launch in the kernel?)")
    source = finish_source(lib.imports[0].inspect_source("metal"))
    if len(kernel_names(source)) != 1:
        raise CompileError(f"expected one Metal kernel, TVM emitted {kernel_names(source)}")
    return source
