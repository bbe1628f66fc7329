"""TileLang's random numbers in kernel code: ``T.rng_init``, ``T.rng_rand``, ``T.rng_rand_float``.

Each thread keeps one cuRAND generator state (the device API:
https://docs.nvidia.com/cuda/curand/device-api-overview.html). ``T.rng_init(seed, seq, off,
generator)`` initializes it (``curand_init``; ``seq`` defaults to the thread's global index
``tx + bx * threads``, as TileLang's), and every ``T.rng_rand()`` / ``T.rng_rand_float()`` the
thread executes draws the next number from it, in the thread's program order. In a ``T.Parallel``
loop the thread draws once per element it owns, so the numbers land on elements by the loop's
layout: any draw is as random as another, and the loop is never turned into vector instructions
(which would give every lane of a vector one draw).

Only the cuda backend has cuRAND; the other backends refuse the kernel by name.

Example (dropout)::

    T.rng_init(seed)
    for i, j in T.Parallel(block_M, block_N):
        keep = T.rng_rand_float() >= p
        y[i, j] = T.if_then_else(keep, x[i, j] / (1 - p), 0)
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..errors import FrontendError
from ..ir import intrinsics as I
from .kernel import current_kernel

#: cuRAND's device generator states TileLang accepts
GENERATORS = ("curandStateMRG32k3a_t", "curandStatePhilox4_32_10_t", "curandStateXORWOW_t")


def _operand(value, what: str, dtype: str):
    if isinstance(value, bool) or not isinstance(value, (int, tvm.ir.Expr)):
        raise FrontendError(f"T.rng_init's {what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return tirx.const(value, dtype)
    if not str(value.ty).startswith(("int", "uint")):
        raise FrontendError(f"T.rng_init's {what} must be an integer, got a {value.ty} value")
    return tirx.Cast(dtype, value)


def rng_init(seed, seq=None, off=0, generator: str = "curandStatePhilox4_32_10_t"):
    """Initialize this thread's generator (module docstring)."""
    kernel = current_kernel("T.rng_init")
    if generator not in GENERATORS:
        raise FrontendError(f"T.rng_init(generator={generator!r}) is not one of {', '.join(GENERATORS)}")
    if kernel.rng_generator not in (None, generator):
        raise FrontendError(f"T.rng_init: this kernel's threads already use {kernel.rng_generator}; one generator "
                            f"per kernel")
    kernel.rng_generator = generator
    if seq is None:  # the thread's global index, TileLang's default
        seq = kernel.thread_id + kernel.get_block_binding(0) * tirx.const(int(_prod(kernel.threads)), "int32")
    return I.call("rng_init", "void", _operand(seed, "seed", "uint64"), _operand(seq, "seq", "uint64"),
                  _operand(off, "off", "uint64"), tvm.ir.StringImm(generator))


def _generator(what: str) -> str:
    kernel = current_kernel(what)
    if kernel.rng_generator is None:
        raise FrontendError(f"{what} draws from the thread's generator: call T.rng_init(seed) before it in "
                            f"this kernel")
    return kernel.rng_generator


def rng_rand():
    """The next 32 random bits (uint32) of this thread's generator."""
    return I.call("rng_rand", "uint32", tvm.ir.StringImm(_generator("T.rng_rand")))


def rng_rand_float(bit: int = 32, dist: str = "uniform"):
    """The next random float of this thread's generator: ``dist="uniform"`` in (0, 1], ``"normal"``
    standard normal; ``bit`` 32 (float32) or 64 (float64)."""
    if bit not in (32, 64):
        raise FrontendError(f"T.rng_rand_float(bit={bit!r}) must be 32 or 64")
    if dist not in ("uniform", "normal"):
        raise FrontendError(f"T.rng_rand_float(dist={dist!r}) must be 'uniform' or 'normal'")
    return I.call("rng_rand_float", f"float{bit}", tvm.ir.StringImm(_generator("T.rng_rand_float")),
                  tvm.ir.StringImm(dist))


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


__all__ = ["GENERATORS", "rng_init", "rng_rand", "rng_rand_float"]
