"""The mma.sync instructions T.gemm runs on, and which one a gemm gets.

One warp computes a 16x8 tile of C per instruction; K per instruction is 256 bits of each
operand row: m16n8k16 for fp16/bf16, m16n8k8 for tf32, m16n8k32 for int8/uint8. The accumulator
fragment (16x8, 4 elements per lane; 2 registers for fp16) is the same for all of them, so gemm accumulators keep one layout
(layouts.mma_accumulator_layout); only the operand fragments differ in elements per register.

Which archs have which operand types is the capability table's ``"mma"`` entry (target.py), the
only place this is decided. float32 operands run as tf32 (the instruction ignores their low 13
mantissa bits, fp32 accumulate), like TileLang (see lower_gemm.py), unless the ``disable_tf32``
option asks for exact fp32 (the FMA path).

Example::

    instr = select_mma(gemm_op, "sm_80", CudaOptions())
    instr.helper, instr.k                # ("tl_mma_m16n8k32_s8_s32", 32) for an int8 gemm
"""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.ir import Gemm
from tilelang_core.simt.lowering import dtype

from .target import capability


@dataclass(frozen=True)
class MmaInstruction:
    shape: str  # "m16n8k16", for messages
    operand: str  # the capability table's name of the operand type
    bits: int  # of one operand element in shared memory and registers
    helper: str  # the prelude's tl_mma_* (intrinsics.py)
    #: float32 operands on tf32 tensor cores (``disable_tf32`` sends the gemm to the FMA path)
    tf32: bool = False

    @property
    def k(self) -> int:
        return 256 // self.bits

    @property
    def per_row(self) -> int:
        """Elements of one 16-byte ldmatrix row (one 8x8 b16 matrix row)."""
        return 128 // self.bits


#: (A, B, C element types) -> instruction
INSTRUCTIONS = {
    ("float16", "float16", "float32"): MmaInstruction("m16n8k16", "float16", 16, "tl_mma_m16n8k16_f16_f32"),
    # fp16 accumulate (TileLang's accum_dtype=float16): the same C fragment, two elements a register
    ("float16", "float16", "float16"): MmaInstruction("m16n8k16", "float16", 16, "tl_mma_m16n8k16_f16_f16"),
    ("bfloat16", "bfloat16", "float32"): MmaInstruction("m16n8k16", "bfloat16", 16, "tl_mma_m16n8k16_bf16_f32"),
    ("float32", "float32", "float32"): MmaInstruction("m16n8k8", "tensorfloat32", 32, "tl_mma_m16n8k8_tf32_f32",
                                                      tf32=True),
    ("int8", "int8", "int32"): MmaInstruction("m16n8k32", "int8", 8, "tl_mma_m16n8k32_s8_s32"),
    ("uint8", "uint8", "int32"): MmaInstruction("m16n8k32", "uint8", 8, "tl_mma_m16n8k32_u8_s32"),
}


def select_mma(op: Gemm, arch: str, options) -> MmaInstruction | None:
    """The mma.sync instruction for this gemm on ``arch``, or None for the FMA path: element types
    without an instruction, an arch whose tensor cores lack the type, or float32 with
    ``disable_tf32``."""
    instr = INSTRUCTIONS.get((dtype(op.A), dtype(op.B), dtype(op.C)))
    if instr is None or instr.operand not in capability(arch, "mma"):
        return None
    if instr.tf32 and options.disable_tf32:
        return None
    return instr


__all__ = ["INSTRUCTIONS", "MmaInstruction", "select_mma"]
