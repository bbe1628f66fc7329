"""How a warp-specialized kernel splits an SM's registers and shared memory.

setmaxnreg moves registers from the producer warpgroup (which only issues TMA loads) to the
consumer warpgroups; the split must keep every resident block within the register file.

Two blocks per SM (the default; ``tl.disable_two_blocks_per_sm`` turns it off): a kernel with one
consumer warpgroup whose ring fits in half the SM's shared memory and whose fragments and per-thread
arrays fit half the register file is compiled for two resident blocks (``__launch_bounds__(threads, 2)``, setmaxnreg
40 / 216), so that one block's pipeline fill and epilogue run while the other's wgmmas keep the
tensor cores busy: the hardware takes turns between them. The price is the tile: two 128x128
blocks read 36% more operand bytes per flop than one 128x256 block. Measured on the H200 (GEMM
fp16, 128x128x64, 2 slots, one consumer warpgroup): 661 TFLOP/s at 8192^3 against 451 for one
block with 3 slots, 1.02x cuBLAS timed in turns (bench/NOTES.md).
"""

from __future__ import annotations

import math

from tvm.runtime import DataType

WARPGROUP = 128
REGISTER_FILE = 65536  # 32-bit registers per SM
#: registers a wgmma instruction needs besides its accumulator (descriptors, predicates, indices):
#: ptxas 13.0 refused m64n256 (128 accumulator registers) under a 128-register cap, asking for 154
WGMMA_EXTRA_REGS = 26
#: what each resident block reserves of the SM's shared memory besides its own
BLOCK_RESERVED_SHARED = 1024
#: registers a consumer thread needs besides its fragments (addresses, loop state, descriptors,
#: temporaries). ptxas 13.0 at setmaxnreg 216: a 128x128 fp32 accumulator (128 registers) did not
#: spill, 128x192 (192) spilled 2336 bytes; FlashAttention 64x64 and 64x128 tiles (<= 130) did not
FRAGMENT_HEADROOM = 56


def register_split(consumer_warpgroups: int, blocks_per_sm: int = 1) -> tuple[int, int]:
    """setmaxnreg's (producer, consumer) registers per thread: the producer warpgroup drops to
    what its TMA issue loop needs, the consumers share the rest of the block's part of the
    register file in steps of 8. One block per SM, two consumer warpgroups: 40 / 232; three:
    24 / 160 (FlashAttention D64 with 192-row tiles spills 48 bytes at 40 / 152, none at 24 / 160);
    two blocks of one consumer warpgroup each: 40 / 216."""
    producer = 40 if consumer_warpgroups <= 2 else 24
    share = (REGISTER_FILE // blocks_per_sm // WARPGROUP - producer) // consumer_warpgroups
    return producer, min(232, share // 8 * 8)


def register_cap(threads_per_block: int, blocks_per_sm: int = 1) -> int:
    """The registers per thread ptxas may use at most when ``blocks_per_sm`` blocks of
    ``threads_per_block`` must fit (``__launch_bounds__``), in its steps of 8. setmaxnreg lets a
    region use more, but each instruction must fit under this cap."""
    return min(255, REGISTER_FILE // (threads_per_block * blocks_per_sm)) // 8 * 8


def widest_wgmma_n(threads_per_block: int, blocks_per_sm: int = 1) -> int:
    """The widest wgmma instruction (fp32 accumulator: N / 2 registers per thread) ptxas can
    compile under ``register_cap``: 256 for up to 384 threads a block, 200 for 512."""
    return min(256, (register_cap(threads_per_block, blocks_per_sm) - WGMMA_EXTRA_REGS) * 2 // 8 * 8)


def fragment_registers(layouts: dict, locals_=()) -> int:
    """32-bit registers each thread needs for the kernel's fragments (``{buffer: Fragment}``) and
    its per-thread arrays (``T.alloc_local`` buffers, every thread holding the whole shape)."""
    def registers(count: int, buffer) -> int:
        return -(-count * DataType(str(buffer.ty.dtype)).bits // 32)

    local_elements = [(math.prod(int(extent) for extent in buf.ty.shape), buf) for buf in locals_]
    return sum(registers(layout.local_size, buffer) for buffer, layout in layouts.items()) + \
        sum(registers(count, buffer) for count, buffer in local_elements)


def two_blocks_per_sm(consumers: int, ring_bytes: int, shared_per_sm: int | None, persistent: bool,
                      cluster: bool, widest_n: int = 0, fragment_regs: int = 0) -> tuple[int | None, str]:
    """(shared memory bytes each block may use, "") when two blocks of this kernel can share an
    SM, else (None, why not). ``widest_n``: the kernel's widest wgmma instruction;
    ``fragment_regs``: what its fragments and per-thread arrays take of each consumer
    thread's registers."""
    if consumers != WARPGROUP:
        return None, f"{consumers} consumer threads (one warpgroup of {WARPGROUP} needed)"
    allowed = register_split(1, 2)[1] - FRAGMENT_HEADROOM
    if fragment_regs > allowed:
        return None, (f"its fragments and per-thread arrays take {fragment_regs} registers a thread, "
                      f"more than the {allowed} that leave room for the rest at two blocks")
    if widest_n > widest_wgmma_n(consumers + WARPGROUP, 2):
        return None, (f"its m64n{widest_n} wgmma needs more than the {register_cap(consumers + WARPGROUP, 2)} "
                      f"registers a thread may use at entry with two blocks")
    if shared_per_sm is None:
        return None, "the SM's shared memory is unknown"
    half = shared_per_sm // 2 - BLOCK_RESERVED_SHARED
    if ring_bytes > half:
        return None, f"the ring takes {ring_bytes} bytes of shared memory, more than half the SM's ({half})"
    if persistent or cluster:  # the kernel's own resources allow two; its schedule does not
        return None, "not with a persistent schedule (stream-K, tl.enable_persistent) or tl.enable_cluster_multicast"
    return half, ""


__all__ = ["FRAGMENT_HEADROOM", "REGISTER_FILE", "WARPGROUP", "fragment_registers", "register_cap", "register_split",
           "two_blocks_per_sm", "widest_wgmma_n"]
