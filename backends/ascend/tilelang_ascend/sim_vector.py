"""Reference implementations of the Vector instructions (numpy, on UB tiles).

Arithmetic runs in the instruction's dtype (float16 stays float16, as on the Vector unit);
comparisons produce 0/1 bytes (the hardware packs a bit mask; the simplification is documented in
README.md). Every operand goes through the block's tile accessors, which enforce UB placement,
bounds and 32-byte row alignment.
"""

from __future__ import annotations

import numpy as np

from . import isa
from .scalar import evaluate
from .sim_memory import SimulatorError

_NP_COMPUTE = {"float16": np.float16, "float32": np.float32, "bfloat16": np.float32,
               "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
               "bool": np.uint8}

_UNARY = {
    "copy": lambda x: x, "exp": np.exp, "exp2": np.exp2, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "abs": np.abs, "neg": np.negative,
    "recip": lambda x: 1 / x, "relu": lambda x: np.maximum(x, 0), "not": lambda x: (x == 0),
}
_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
    "and": lambda a, b: (a != 0) & (b != 0), "or": lambda a, b: (a != 0) | (b != 0),
}
_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}


def _value(block, x, env, dtype, instr, shape):
    if isinstance(x, isa.Scalar):
        return np.asarray(evaluate(x.expr, env)).astype(_NP_COMPUTE[dtype])
    if isinstance(x, isa.Tile):
        if (x.rows, x.cols) != shape:
            raise SimulatorError(f"kernel '{block.prog.name}': {type(instr).__name__} operand "
                                 f"{x!r} is {x.rows}x{x.cols}, destination is {shape[0]}x{shape[1]}")
        return block.read_tile(x, env, instr)
    raise SimulatorError(f"kernel '{block.prog.name}': bad Vector operand {x!r}")


def run_vector(block, instr, env) -> None:
    dst = instr.dst
    shape = (dst.rows, dst.cols)
    rows, repeats, mask = instr.vector_shape()
    if mask <= 0 or repeats <= 0:
        raise SimulatorError(f"kernel '{block.prog.name}': {instr!r} has an empty repeat/mask")
    if isinstance(instr, isa.VUnary):
        src = _value(block, instr.src, env, instr.src.dtype, instr, shape)
        if instr.src.dtype != dst.dtype:
            raise SimulatorError(f"kernel '{block.prog.name}': {instr.op} needs one dtype, got "
                                 f"{instr.src.dtype} -> {dst.dtype} (insert a VCast)")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = _UNARY[instr.op](src)
    elif isinstance(instr, isa.VBinary):
        op_dtype = _operand_dtype(instr.a, instr.b, dst.dtype)
        a = _value(block, instr.a, env, op_dtype, instr, shape)
        b = _value(block, instr.b, env, op_dtype, instr, shape)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = _BINARY[instr.op](a, b)
    elif isinstance(instr, isa.VSelect):
        mask_v = _value(block, instr.mask, env, "bool", instr, shape)
        a = _value(block, instr.a, env, dst.dtype, instr, shape)
        b = _value(block, instr.b, env, dst.dtype, instr, shape)
        out = np.where(mask_v != 0, a, b)
    elif isinstance(instr, isa.VCast):
        src = _value(block, instr.src, env, instr.src.dtype, instr, shape)
        out = np.trunc(src) if dst.dtype.startswith(("int", "uint")) and src.dtype.kind == "f" else src
    elif isinstance(instr, isa.VDup):
        out = np.full(shape, evaluate(instr.value.expr, env))
    elif isinstance(instr, isa.VBroadcast):
        src = block.read_tile(instr.src, env, instr)
        want = dst.rows if instr.axis == 1 else dst.cols
        if instr.src.rows != 1 or instr.src.cols != want:
            raise SimulatorError(f"kernel '{block.prog.name}': broadcast source {instr.src!r} must "
                                 f"be one row of {want}")
        out = np.repeat(src[0][:, None], dst.cols, 1) if instr.axis == 1 else np.repeat(
            src, dst.rows, 0)
    elif isinstance(instr, isa.VReduce):
        src = block.read_tile(instr.src, env, instr)
        want = instr.src.rows if instr.axis == 1 else instr.src.cols
        if dst.rows != 1 or dst.cols != want:
            raise SimulatorError(f"kernel '{block.prog.name}': reduction result {dst!r} must be "
                                 f"one row of {want}")
        out = _REDUCE[instr.op](src, axis=instr.axis)[None, :]
    elif isinstance(instr, isa.VScan):
        src = _value(block, instr.src, env, instr.src.dtype, instr, shape)
        if instr.src.dtype != dst.dtype:
            raise SimulatorError(f"kernel '{block.prog.name}': a scan needs one dtype, got "
                                 f"{instr.src.dtype} -> {dst.dtype} (insert a VCast)")
        # accumulates in the tile's dtype, one Add per step, like the hardware chain
        flip = (lambda x: np.flip(x, instr.axis)) if instr.reverse else (lambda x: x)
        out = flip(np.cumsum(flip(src), axis=instr.axis, dtype=src.dtype))
    elif isinstance(instr, isa.VArange):
        base = evaluate(instr.base.expr, env)
        out = (base + np.arange(dst.rows)[:, None] * instr.row_step
               + np.arange(dst.cols)[None, :] * instr.col_step)
    else:
        raise SimulatorError(f"kernel '{block.prog.name}': no reference implementation for "
                             f"{type(instr).__name__}")
    block.write_tile(dst, np.asarray(out).astype(_NP_COMPUTE[dst.dtype]), env, instr)


def _operand_dtype(a, b, dst_dtype):
    for x in (a, b):
        if isinstance(x, isa.Tile):
            return x.dtype
    return dst_dtype
