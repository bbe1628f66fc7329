"""How a warp-specialized kernel splits an SM's registers and shared memory.

setmaxnreg moves registers from the producer warpgroup (which only issues TMA loads) to the
consumer warpgroups; the split must keep every resident block within the register file.

Two blocks per SM (opt-in, ``tl.enable_two_blocks_per_sm``): a kernel with one consumer
warpgroup whose ring fits in half the SM's shared memory is compiled for two resident blocks
(``__launch_bounds__(threads, 2)``, setmaxnreg 40 / 216), so that one block's pipeline fill and
epilogue run while the other's wgmmas keep the tensor cores busy: the hardware takes turns between
them. The price is the tile: two 128x128 blocks read 36% more operand bytes per flop than one
128x256 block. Not yet run on a GPU.
"""

from __future__ import annotations

WARPGROUP = 128
REGISTER_FILE = 65536  # 32-bit registers per SM
#: registers a wgmma instruction needs besides its accumulator (descriptors, predicates, indices):
#: ptxas 13.0 refused m64n256 (128 accumulator registers) under a 128-register cap, asking for 154
WGMMA_EXTRA_REGS = 26
#: what each resident block reserves of the SM's shared memory besides its own
BLOCK_RESERVED_SHARED = 1024


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


def two_blocks_per_sm(consumers: int, ring_bytes: int, shared_per_sm: int | None, persistent: bool,
                      cluster: bool, widest_n: int = 0) -> tuple[int | None, str]:
    """(shared memory bytes each block may use, "") when two blocks of this kernel can share an
    SM, else (None, why not). ``widest_n``: the kernel's widest wgmma instruction."""
    if consumers != WARPGROUP:
        return None, f"{consumers} consumer threads (one warpgroup of {WARPGROUP} needed)"
    if widest_n > widest_wgmma_n(consumers + WARPGROUP, 2):
        return None, (f"its m64n{widest_n} wgmma needs more than the {register_cap(consumers + WARPGROUP, 2)} "
                      f"registers a thread may use at entry with two blocks")
    if persistent or cluster:
        return None, "not with tl.enable_persistent or tl.enable_cluster_multicast"
    if shared_per_sm is None:
        return None, "the SM's shared memory is unknown"
    half = shared_per_sm // 2 - BLOCK_RESERVED_SHARED
    if ring_bytes > half:
        return None, f"the ring takes {ring_bytes} bytes of shared memory, more than half the SM's ({half})"
    return half, ""


__all__ = ["REGISTER_FILE", "WARPGROUP", "register_cap", "register_split", "two_blocks_per_sm", "widest_wgmma_n"]
