"""TileLang's hand-written warp specialization: mbarriers, ``T.ws`` regions and ``T.tma_copy``.

A producer warpgroup loads tiles and signals an mbarrier; the consumer waits on it, computes and
signals back::

    data_is_ready = T.alloc_barrier(arrive_count=128)
    compute_is_done = T.alloc_barrier(arrive_count=128)
    for ko in T.serial(T.ceildiv(K, 64)):
        with T.ws(1):                                  # threads 128..255
            T.barrier_wait(compute_is_done, (ko + 1) % 2)
            T.tma_copy(A[by * 128, ko * 64], A_shared, barrier=data_is_ready)
            T.barrier_arrive(data_is_ready)
        with T.ws(0):                                  # threads 0..127
            T.barrier_wait(data_is_ready, ko % 2)
            T.gemm(A_shared, B_shared, C_local)
            T.barrier_arrive(compute_is_done)

The rules, TileLang's (docs/tile-ir.md, "Hand-written warp specialization"):

* ``T.alloc_barrier(count)`` / ``T.alloc_barrier([c0, c1, ...])``: mbarriers in shared memory,
  each completing a phase once ``count`` threads arrived (and the bytes expected on it landed).
  They are initialized once at the kernel's start, before any thread uses them.
* ``T.ws(g, ...)``: the body runs on warpgroup(s) ``g`` (threads ``128 g .. 128 g + 127``); tile
  ops in it are performed by those threads, fragments used only there are laid out over them.
  The author orders the regions of different warpgroups with the mbarriers; the compiler inserts
  no block barrier between them.
* ``T.barrier_wait(b, parity)`` = ``T.mbarrier_wait_parity``: wait until the phase of parity
  ``parity`` of ``b`` completed. ``T.barrier_arrive(b)`` = ``T.mbarrier_arrive``: this thread
  arrives. ``T.mbarrier_expect_tx`` (counting bytes by hand) is refused: only T.tma_copy's bytes
  exist here, and it counts its own.
* ``T.tma_copy(src, dst, barrier=b)``: the copy global -> shared; the phase of ``b`` that is current
  when it is issued completes only once the copy has landed (whoever arrives), as TMA's bytes do
  (ir/tma_copy.py).
* ``T.set_max_nreg(n, inc)`` and kin: register reallocation between warpgroups (``setmaxnreg``), a
  performance hint; the cuda backend emits it on sm_90a, every other target ignores it.

Backends without mbarriers refuse these at compile time, naming the target.
"""

from __future__ import annotations

import contextlib

import tvm
from tvm import tirx
from tvm.ir import TensorLoad
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from ..ir import region as R
from ..ir.tma_copy import TmaCopy
from ..transform.thread_ranges import WS_ATTR  # the key around a T.ws body
from .emit import emit, pair_regions, _unwrap
from .kernel import current_kernel

#: threads of one warpgroup (T.ws counts in warpgroups)
WARP_GROUP = 128
#: PTX: an mbarrier counts at most 2^20 - 1 arrivals per phase
MAX_ARRIVALS = (1 << 20) - 1


def _int(value, what: str) -> int:
    value = value.value if isinstance(value, tirx.IntImm) else value
    if isinstance(value, bool) or not isinstance(value, int):
        raise FrontendError(f"{what} must be a compile-time integer, got {value!r}")
    return value


def alloc_barrier(arrive_count, what: str = "T.alloc_barrier"):
    """``len(counts)`` mbarriers in shared memory, element ``i`` completing a phase after
    ``counts[i]`` arrivals (an int is one barrier). Index the result (``mbars[i]``) to pick one."""
    kernel = current_kernel(what)
    counts = list(arrive_count) if isinstance(arrive_count, (list, tuple, tvm.ir.Array)) else [arrive_count]
    if not counts:
        raise FrontendError(f"{what} needs at least one arrive count")
    counts = [_int(c, f"{what} arrive_count") for c in counts]
    for c in counts:
        if not 1 <= c <= MAX_ARRIVALS:
            raise FrontendError(f"{what}: arrive_count must be 1 to {MAX_ARRIVALS}, got {c}")
    buffer = B.alloc_buffer([len(counts)], "uint64", scope="shared")
    B.evaluate(I.call("mbarrier_init", "void", tirx.BufferLoad(buffer, [tirx.const(0, "int32")]),
                      *[tirx.const(c, "int32") for c in counts]))
    kernel.barriers.append(buffer)
    return buffer


def alloc_cluster_barrier(arrive_count):
    """T.alloc_barrier's mbarriers, which the other blocks of the cluster may arrive on
    (``T.mbarrier_arrive(bar, cta_id)``) and whose waits see their writes (cluster scope). The
    other blocks may use them only after a ``T.cluster_sync()`` that follows the allocation."""
    buffer = alloc_barrier(arrive_count, "T.alloc_cluster_barrier")
    current_kernel("T.alloc_cluster_barrier").cluster_barriers.append(buffer)
    return buffer


def _barrier(x, what: str):
    """The TensorLoad of one mbarrier: ``mbars[i]``, or a T.alloc_barrier buffer itself (its
    element 0)."""
    kernel = current_kernel(what)
    x = _unwrap(x)
    if tirx.is_buffer_var(x):
        if not any(x.same_as(b) for b in kernel.barriers):
            raise FrontendError(f"{what}: '{x.name}' is not a barrier; allocate it with T.alloc_barrier")
        return tirx.BufferLoad(x, [tirx.const(0, "int32")])
    if isinstance(x, TensorLoad) and any(x.source.same_as(b) for b in kernel.barriers):
        return x
    raise FrontendError(f"{what}: expected a barrier from T.alloc_barrier (mbars or mbars[i]), got {x!r}")


def _is_cluster_barrier(bar) -> bool:
    return any(bar.source.same_as(b) for b in current_kernel("a barrier").cluster_barriers)


def mbarrier_wait_parity(mbarrier, parity):
    """Wait until the phase of parity ``parity`` (0 or 1) of ``mbarrier`` has completed (of a
    cluster barrier: the arrivals of every block of the cluster, their writes visible)."""
    bar = _barrier(mbarrier, "T.mbarrier_wait_parity")
    name = "mbarrier_wait_cluster" if _is_cluster_barrier(bar) else "mbarrier_wait_parity"
    B.evaluate(I.call(name, "void", bar, _i32(parity, "T.mbarrier_wait_parity parity")))


def mbarrier_arrive(mbarrier, cta_id=None):
    """This thread arrives on ``mbarrier``; with ``cta_id``, on that barrier of the cluster's block
    of rank ``cta_id`` (a T.alloc_cluster_barrier, T.block_rank_in_cluster's numbering)."""
    bar = _barrier(mbarrier, "T.mbarrier_arrive")
    if cta_id is None:
        B.evaluate(I.call("mbarrier_arrive", "void", bar))
        return
    if not _is_cluster_barrier(bar):
        raise FrontendError(f"T.mbarrier_arrive(cta_id=...): '{bar.source.name}' is not a cluster barrier; "
                            f"allocate it with T.alloc_cluster_barrier to let other blocks arrive on it")
    B.evaluate(I.call("mbarrier_arrive_remote", "void", bar, _i32(cta_id, "T.mbarrier_arrive cta_id")))


def _no_expect_tx(name: str):
    def refuse(mbarrier, tx):
        current_kernel(f"T.{name}")
        raise FrontendError(f"T.{name}: counting transaction bytes by hand is not supported. The bytes of a "
                            f"T.tma_copy are already counted on its barrier= (it needs no expect_tx); bytes "
                            f"of other asynchronous copies (TMA gather, cluster copies) do not exist here, so "
                            f"the phase would never complete")

    refuse.__name__ = name
    refuse.__doc__ = f"TileLang's ``T.{name}``: refused (the error says why)."
    return refuse


mbarrier_expect_tx = _no_expect_tx("mbarrier_expect_tx")
mbarrier_arrive_expect_tx = _no_expect_tx("mbarrier_arrive_expect_tx")


def cp_async_barrier_noinc(barrier):
    """TileLang's ``cp.async.mbarrier.arrive.noinc``: this thread arrives on ``barrier`` once its
    copies so far have landed. Its ``T.ptx_cp_async`` copies complete as issued here
    (language/async_groups.py), so this is the arrival itself, after them."""
    mbarrier_arrive(barrier)


def barrier_wait(mbarrier, parity):
    """TileLang's short name of ``T.mbarrier_wait_parity``."""
    mbarrier_wait_parity(mbarrier, parity)


def barrier_arrive(mbarrier):
    """TileLang's short name of ``T.mbarrier_arrive``."""
    mbarrier_arrive(mbarrier)


def _i32(value, what: str):
    if isinstance(value, bool):
        raise FrontendError(f"{what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return tirx.const(value, "int32")
    if isinstance(value, tvm.ir.Expr) and str(value.ty).startswith(("int", "uint")):
        return value if str(value.ty) == "int32" else tirx.Cast("int32", value)
    raise FrontendError(f"{what} must be an integer expression, got {value!r}")


class WarpSpecialize:
    """``with T.ws(g, ...):`` the body runs on warpgroups ``g, ...`` (module docstring)."""

    def __init__(self, *warp_group_idx):
        if not warp_group_idx:
            raise FrontendError("T.ws needs at least one warpgroup index")
        self.groups = sorted({_int(g, "T.ws warpgroup index") for g in warp_group_idx})
        if self.groups[0] < 0:
            raise FrontendError(f"T.ws: warpgroup indices are 0 or more, got {self.groups[0]}")
        self._stack = None

    def __enter__(self):
        kernel = current_kernel("T.ws")
        threads = 1
        for t in kernel.threads:
            threads *= int(t) if isinstance(t, (int, tirx.IntImm)) else 0
        last = (self.groups[-1] + 1) * WARP_GROUP
        if threads and last > threads:
            raise FrontendError(f"T.ws({', '.join(map(str, self.groups))}) needs threads up to {last}, but the "
                                f"kernel has {threads} (a warpgroup is {WARP_GROUP} threads)")
        tid, cond = kernel.thread_id, None
        for lo, hi in _runs(self.groups):
            term = tirx.And(tid >= lo * WARP_GROUP, tid < hi * WARP_GROUP)
            cond = term if cond is None else tirx.Or(cond, term)
        stack = contextlib.ExitStack()
        stack.__enter__()
        stack.enter_context(B.If(cond))
        stack.enter_context(B.Then())
        stack.enter_context(B.attr(tirx.const(0, "int32"), WS_ATTR, tirx.const(1, "int32")))
        self._stack = stack
        return None

    def __exit__(self, exc_type, exc, tb):
        stack, self._stack = self._stack, None
        return stack.__exit__(exc_type, exc, tb)


def _runs(groups: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for g in groups:
        if runs and runs[-1][1] == g:
            runs[-1][1] = g + 1
        else:
            runs.append([g, g + 1])
    return [(lo, hi) for lo, hi in runs]


ws = WarpSpecialize


def tma_copy(src, dst, *, barrier=None, cluster_mask=None, leader_scope_threads=None, eviction_policy=None,
             annotations=None):
    """Copy ``src`` (global) to ``dst`` (shared), counted on ``barrier`` (ir/tma_copy.py); every
    thread of the region calls it, as TileLang's elect a leader among them.

    A store (``src`` shared, ``dst`` global, no barrier) is TileLang's asynchronous TMA store,
    which the kernel later waits for with ``T.tma_store_wait()``. Here it is the copy itself
    (``T.copy``: done when the statement is), which gives every program that waits where TileLang
    requires it the same values; the wait then has nothing left to wait for.

    ``cluster_mask`` (a load in a T.ClusterKernel): TileLang's multicast, in which the lowest-ranked
    block of the mask loads the tile into the shared memory of every block of the mask, each counting
    it on its own ``barrier``. Here every block loads its own copy, so each block of the mask holds
    the tile when its barrier's phase completes, as there (without the multicast's saving of L2
    traffic). A mask naming ranks the cluster does not have is refused.

    ``leader_scope_threads=S``: each group of S consecutive threads issues its own copy (a warp
    each: ``A[row_of_my_warp, :]`` into ``shared[warp_idx, :]``), the regions being those its
    first thread computes, as TileLang's elected leader's are. S must divide the threads that
    reach the copy. Without it, the threads that reach it issue one copy, with the first one's
    regions."""
    del eviction_policy, annotations  # cache hints
    if cluster_mask is not None:
        _check_cluster_mask(cluster_mask, barrier)
    scope = _leader_scope(leader_scope_threads)
    src_r, dst_r = pair_regions(src, dst, "T.tma_copy source", "T.tma_copy destination")
    if barrier is None:
        if R.scope_of(src_r) in ("shared", "shared.dyn") and R.scope_of(dst_r) == "global":
            from ..ir import Copy

            current_kernel("T.tma_copy")
            emit(Copy(src_r, dst_r))
            return
        raise FrontendError("T.tma_copy: a load needs barrier= (an mbarrier from T.alloc_barrier that the "
                            "consumers wait on)")
    bar = _barrier(barrier, "T.tma_copy")
    emit(TmaCopy(src_r, dst_r, R.make_region(bar.source, list(bar.indices), [1]), scope))


def _leader_scope(threads) -> int:
    """TileLang's rule for ``leader_scope_threads``: None (the threads that reach the copy issue
    it once), or a positive multiple of the warp size (each group of that many issues its own)."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int) or threads <= 0 or threads % 32:
        raise FrontendError(f"T.tma_copy: leader_scope_threads must be a positive multiple of the warp size "
                            f"(32), got {threads!r}")
    return threads


def _check_cluster_mask(mask, barrier) -> None:
    kernel = current_kernel("T.tma_copy")
    if isinstance(mask, bool) or not isinstance(mask, int) or mask <= 0:
        raise FrontendError(f"T.tma_copy: cluster_mask must be a positive integer bitmask of block ranks, "
                            f"got {mask!r}")
    if barrier is None:
        raise FrontendError("T.tma_copy: cluster_mask multicasts a load (global -> shared with barrier=); "
                            "a store takes no mask")
    dims = kernel.cluster_dims or (1, 1, 1)
    blocks = dims[0] * dims[1] * dims[2]
    if mask >> blocks:
        raise FrontendError(f"T.tma_copy: cluster_mask={mask:#b} names block rank {mask.bit_length() - 1}, but "
                            f"the cluster has {blocks} block{'s' if blocks > 1 else ''} (ranks 0..{blocks - 1}; "
                            f"T.ClusterKernel(..., cluster_dims=...) sets its shape)")


def tma_store_arrive():
    """TileLang's commit of the TMA stores issued so far; T.tma_copy's stores are complete when
    issued here, so there is nothing to commit."""
    current_kernel("T.tma_store_arrive")


def tma_store_wait(count: int = 0, read: bool = True):
    """TileLang's wait until at most ``count`` committed TMA store groups are in flight (``read``:
    only until their shared memory has been read). T.tma_copy's stores are complete when issued
    here: nothing to wait for."""
    current_kernel("T.tma_store_wait")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise FrontendError(f"T.tma_store_wait: count must be a non-negative integer, got {count!r}")


def set_max_nreg(reg_count, is_inc):
    """Registers per thread of this warpgroup become ``reg_count`` (``is_inc``: 1 to raise, 0 to lower)."""
    count = _int(reg_count, "T.set_max_nreg reg_count")
    inc = _int(is_inc, "T.set_max_nreg is_inc")
    if not 24 <= count <= 256 or count % 8:
        raise FrontendError(f"T.set_max_nreg: reg_count must be a multiple of 8 in 24..256, got {count}")
    if inc not in (0, 1):
        raise FrontendError(f"T.set_max_nreg: is_inc must be 0 or 1, got {inc}")
    current_kernel("T.set_max_nreg")
    B.evaluate(I.call("set_max_nreg", "void", tirx.const(count, "int32"), tirx.const(inc, "int32")))


def inc_max_nreg(reg_count):
    """``T.set_max_nreg(reg_count, 1)``."""
    set_max_nreg(reg_count, 1)


def dec_max_nreg(reg_count):
    """``T.set_max_nreg(reg_count, 0)``."""
    set_max_nreg(reg_count, 0)


def _hint(name: str):
    def hint(*args, **kwargs):
        current_kernel(f"T.{name}")

    hint.__name__ = name
    hint.__doc__ = (f"TileLang's hint to its automatic warp specialization's register split; accepted and "
                    f"ignored (the cuda backend chooses its split itself, and the values are the same).")
    return hint


annotate_producer_reg_dealloc = _hint("annotate_producer_reg_dealloc")
annotate_consumer_reg_alloc = _hint("annotate_consumer_reg_alloc")
no_set_max_nreg = _hint("no_set_max_nreg")

__all__ = ["WARP_GROUP", "WS_ATTR", "WarpSpecialize", "alloc_barrier", "alloc_cluster_barrier",
           "annotate_consumer_reg_alloc",
           "annotate_producer_reg_dealloc", "barrier_arrive", "barrier_wait", "cp_async_barrier_noinc", "dec_max_nreg", "inc_max_nreg",
           "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_expect_tx", "mbarrier_wait_parity",
           "no_set_max_nreg", "set_max_nreg", "tma_copy", "tma_store_arrive", "tma_store_wait", "ws"]
