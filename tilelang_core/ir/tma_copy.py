"""``TmaCopy``: TileLang's ``T.tma_copy`` load, a global -> shared tile copy that counts its bytes on
an mbarrier instead of waiting for them.

The producer half of a hand-written pipeline (language/barriers.py)::

    T.tma_copy(A[by * 128, k * 64], A_shared, barrier=data_is_ready)
    T.barrier_arrive(data_is_ready)          # the waiters see A_shared once the phase completes

Its meaning is the copy, visible to whoever waits on ``barrier`` after the arrivals that follow
it; a backend may carry it as a TMA load (the bytes complete the barrier's phase) or as an
ordinary copy by the threads that reach it (their arrivals then publish it). Only loads: TileLang's
store form (shared -> global, no barrier) is refused by the frontend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tvm.ir import TensorRegion

from ..errors import FrontendError
from . import region as R
from .ops import SHARED_SCOPES, Copy, TileOp, _check_scope
from .registry import register_tile_op


@register_tile_op
@dataclass(eq=False)
class TmaCopy(TileOp):
    """``dst = src`` (global -> shared), its completion counted on the mbarrier element ``barrier``
    (a 1-element region of a ``T.alloc_barrier`` buffer).

    ``leader_scope`` (TileLang's ``leader_scope_threads``): every group of that many consecutive
    threads issues its own copy, with the regions its first thread (the leader TileLang elects)
    computes; 0 is one copy for all the threads that reach it."""

    src: TensorRegion
    dst: TensorRegion
    barrier: TensorRegion
    leader_scope: int = 0
    name: ClassVar[str] = "tma_copy"

    def __post_init__(self):
        copy = Copy(self.src, self.dst)  # the same operand rules as T.copy
        self.src, self.dst = copy.src, copy.dst
        if R.scope_of(self.src) != "global":
            raise FrontendError(f"T.tma_copy loads from global memory; its source '{R.name_of(self.src)}' "
                                f"is in '{R.scope_of(self.src)}' memory (TMA stores, shared -> global, are "
                                f"not supported: use T.copy)")
        _check_scope(self.dst, SHARED_SCOPES, "T.tma_copy destination")
        self.barrier = R.to_region(self.barrier, "T.tma_copy barrier")
        if R.extents_of(self.barrier) and any(R.as_int(e) != 1 for e in R.extents_of(self.barrier)):
            raise FrontendError("T.tma_copy: barrier= must be one mbarrier (mbars[i]), not a slice")

    def args(self):
        return [self.src, self.dst, self.barrier]

    def config(self):
        return {"leader_scope_threads": self.leader_scope} if self.leader_scope else {}

    @classmethod
    def _from_parts(cls, args, config):
        return cls(args[0], args[1], args[2], int(config.get("leader_scope_threads", 0)))

    def as_copy(self) -> Copy:
        """The plain copy it performs."""
        return Copy(self.src, self.dst)

    @property
    def reads(self):
        return (self.src,)

    @property
    def writes(self):
        return (self.dst,)


__all__ = ["TmaCopy"]
