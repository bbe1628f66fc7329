"""Thread-level intrinsics: TileLang's warp votes, shuffles, warp reductions, lane queries and bit
scans, as TVM ops named ``tl.intrin.<name>`` that kernel expressions call.

They are not tile ops (no regions, no layouts): each is one value per thread, built by
``tilelang_core.language.warp`` and replaced by each backend before codegen, the SIMT kit by its
device helpers (tilelang_core/simt/transform/lower_intrinsics.py), the cpu backend by plain
arithmetic or a refusal. What a backend must know about each is declared here once:

* ``scope``: who executes the op together. ``"warp"``: every lane of the warp named by the
  op's lane mask (a vote, a shuffle); ``"block"``: every thread of the block (a barrier that
  votes), or for ``named_barrier`` the threads it counts; ``"thread"``: nobody, the op is a
  function of its operands (lane index, bit scans).
* ``pure``: the value depends on the operands alone (``TCallEffectKind`` says so to TVM's
  passes, which may then simplify or merge calls); collective ops are opaque, so no pass moves,
  merges or drops them.

Example::

    from tilelang_core.ir import intrinsics as I

    call = I.call("ballot_sync", "uint64", mask, pred)
    I.intrinsic_of(call).scope             # "warp"
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm.tirx import CallEffectKind

PREFIX = "tl.intrin."
#: TileLang's default lane mask (every lane of a 32-wide warp) and shuffle width
FULL_MASK = 0xFFFFFFFF
DEFAULT_WIDTH = 32
#: TileLang's default warps per warp group (NVIDIA's 4 x 32 threads)
WARPS_PER_GROUP = 4


@dataclass(frozen=True)
class Intrinsic:
    """One thread-level intrinsic: its TileLang name (``T.<spelling>``), scope and purity."""

    name: str
    scope: str  # "warp" | "block" | "thread"
    pure: bool
    spelling: str

    @property
    def op(self) -> tvm.ir.Op:
        return _op(self)

    @property
    def collective(self) -> bool:
        return self.scope != "thread"


def _define(name: str, scope: str, pure: bool = False, spelling: str | None = None) -> Intrinsic:
    return Intrinsic(name, scope, pure, spelling or name)


_ALL = [
    # warp votes and ballots: (mask uint32, pred bool)
    _define("any_sync", "warp"), _define("all_sync", "warp"), _define("ballot_sync", "warp"),
    _define("ballot", "warp"),  # (pred): ballot_sync over the whole warp
    _define("activemask", "warp"),
    # (mask uint32, value)
    _define("match_any_sync", "warp"), _define("match_all_sync", "warp"),
    # shuffles: (mask uint32, value, lane or delta or lane mask int32, width int32 constant)
    _define("shfl_sync", "warp"), _define("shfl_xor", "warp"), _define("shfl_down", "warp"),
    _define("shfl_up", "warp"),
    # (value): the reduction over every lane of the warp, returned to every lane
    *[_define(f"warp_reduce_{k}", "warp") for k in ("sum", "max", "min", "bitand", "bitor")],
    _define("sync_warp", "warp"),  # (mask uint32)
    _define("shuffle_elect", "warp"),  # (linear thread index, thread_extent int32 constant)
    # block barriers that vote: (pred bool)
    _define("syncthreads_count", "block"), _define("syncthreads_and", "block"),
    _define("syncthreads_or", "block"),
    # a barrier over part of the block: (barrier id int32 constant, thread count int32 constant)
    _define("named_barrier", "block", spelling="sync_threads"),
    # thread-index queries: (linear thread index, warp size or -1 for the target's[, warps per group])
    _define("get_lane_idx", "thread", True), _define("get_warp_idx", "thread", True),
    _define("get_warp_idx_sync", "thread", True), _define("get_warp_group_idx", "thread", True),
    # bit scans: (value int32/int64) and (mask uint32, base uint32, offset int32)
    _define("ffs", "thread", True, "__ffs"), _define("fns", "thread", True, "__fns"),
    # a load through the read-only data cache: (TensorLoad of a global buffer)
    _define("ldg", "thread", False, "__ldg"),
    # mbarriers of T.alloc_barrier (language/barriers.py): every thread that reaches one performs
    # it. (barrier TensorLoad) / (barrier, parity int32)
    _define("mbarrier_arrive", "thread"), _define("mbarrier_wait_parity", "thread"),
    # T.alloc_barrier's initialization, once per barrier buffer at the kernel's top level:
    # (TensorLoad of its element 0, arrive count of each element int32 ...)
    _define("mbarrier_init", "block", spelling="alloc_barrier"),
    # a register reallocation hint for the warpgroup (setmaxnreg): (count int32, 1 = raise, 0 = lower)
    _define("set_max_nreg", "thread"),
    # TileLang's own async-copy groups (language/async_groups.py): close this thread's group of async
    # copies; wait until at most (n int32) of its groups are in flight
    _define("cp_async_commit", "thread", spelling="ptx_commit_group"),
    _define("cp_async_wait", "thread", spelling="ptx_wait_group"),
    # a check in kernel code (condition bool, message StringImm): the kernel stops with the
    # message where the condition is false (a trap on the GPU, an error of the call on cpu)
    _define("device_assert", "thread"),
    # T.print (language/debug_print.py): (msg StringImm, bx, by, bz, tx, ty, tz int32[, value[,
    # buffer name StringImm, index int32]]): one line from each thread that reaches it
    _define("print", "thread"),
    # programmatic dependent launch (language/launch_dependency.py): let the next kernel on the
    # stream start; wait for the previous kernel's memory. Scheduling only: dropped where absent.
    _define("pdl_trigger", "thread"), _define("pdl_sync", "thread"),
    # a barrier for every thread of every block (cooperative launch; language/launch_dependency.py)
    _define("sync_grid", "thread"),
    # thread-block clusters (language/cluster.py, T.ClusterKernel): the kernel's cluster shape, a marker
    # at its top (x, y, z int32 constants); barriers over every thread of the cluster; this block's rank
    # in its cluster (the rank computed from the block indices: what targets without clusters use)
    _define("cluster_dims", "thread", spelling="ClusterKernel"),
    _define("cluster_arrive", "thread"), _define("cluster_arrive_relaxed", "thread"),
    _define("cluster_wait", "thread"), _define("cluster_sync", "thread"),
    _define("block_rank_in_cluster", "thread", True),
    # mbarriers of T.alloc_cluster_barrier: arrive on the barrier of the cluster's block of rank
    # (cta int32); wait with the cluster's scope (barrier, parity int32)
    _define("mbarrier_arrive_remote", "thread", spelling="mbarrier_arrive"),
    _define("mbarrier_wait_cluster", "thread", spelling="mbarrier_wait_parity"),
    # cuRAND (language/random.py): (seed, seq, off uint64, generator StringImm); (generator) -> uint32;
    # (generator, "uniform" | "normal") -> float32 / float64. Each draw changes the thread's state.
    _define("rng_init", "thread"), _define("rng_rand", "thread"), _define("rng_rand_float", "thread"),
    # NVIDIA's warp matrix instructions as TileLang's hand-written MMA code calls them
    # (language/warp_matrix.py). Each is the value of a vector store into the thread's registers:
    # ldmatrix (trans bool, num int32, the 16-byte row this lane names: a vector TensorLoad of
    # shared memory); mma (shape StringImm, A, B, C: vector TensorLoads of the thread's registers)
    _define("ldmatrix", "warp", spelling="ptx_ldmatrix"), _define("mma_sync", "warp", spelling="ptx_mma"),
]
INTRINSICS: dict[str, Intrinsic] = {i.name: i for i in _ALL}
#: the barriers over every thread of the cluster (language/cluster.py): placed like T.sync_grid
#: (simt/transform/grid_sync.py), refused where blocks run one after another
CLUSTER_BARRIERS = ("cluster_arrive", "cluster_arrive_relaxed", "cluster_wait", "cluster_sync")
_OPS: dict[str, tvm.ir.Op] = {}


def _op(intrinsic: Intrinsic) -> tvm.ir.Op:
    found = _OPS.get(intrinsic.name)
    if found is None:
        full = PREFIX + intrinsic.name
        # __ldg reads memory: ReadState keeps it from being merged across stores
        effect = (CallEffectKind.Pure if intrinsic.pure else
                  CallEffectKind.ReadState if intrinsic.name == "ldg" else CallEffectKind.Opaque)
        try:
            existing = tvm.ir.Op.get(full)
            registered = existing.get_attr("TCallEffectKind") is not None
        except Exception:  # noqa: BLE001 - Op.get raises a TVM error for unknown names
            registered = False
        if not registered:
            tvm.ir.register_op_attr(full, "TCallEffectKind", effect.value)
            tvm.ir.register_op_attr(full, "TScriptPrinterName", f"tl_{intrinsic.name}")
        found = _OPS[intrinsic.name] = tvm.ir.Op.get(full)
    return found


def call(name: str, dtype: str, *args) -> tvm.ir.Call:
    """A call of intrinsic ``name`` returning ``dtype`` (``"void"`` for a statement)."""
    from tvm import tirx

    return tirx.call_intrin(dtype, _op(INTRINSICS[name]), *args)


def intrinsic_of(node) -> Intrinsic | None:
    """The Intrinsic ``node`` calls, or None (any other node)."""
    op = getattr(node, "op", None)
    if not isinstance(node, tvm.ir.Call) or not isinstance(op, tvm.ir.Op):
        return None
    name = str(op.name)
    return INTRINSICS.get(name[len(PREFIX):]) if name.startswith(PREFIX) else None


def calls_in(node) -> list:
    """Every intrinsic call in ``node`` (an expression or a statement), in visiting order."""
    import tvm_ffi

    found = []
    tvm_ffi.structural_walk(node, [(tvm.ir.Call, lambda c: found.append(c) if intrinsic_of(c) else None)])
    return found


def flat_offset(buffer, indices):
    """The element offset of ``buffer[indices]``: by the buffer's strides where it declares them
    (``T.StridedTensor``), else row-major."""
    from tvm import tirx

    strides = list(buffer.ty.strides or [])
    if not strides:
        stride = 1
        for extent in reversed(list(buffer.ty.shape)):
            strides.insert(0, stride)
            stride = stride * extent
    offset = tirx.const(0, "int32")
    for index, stride in zip(indices, strides):
        offset = offset + index * stride
    return offset


def vector_accesses(node) -> list:
    """Loads and stores of several consecutive elements (a ``Ramp`` last index) in ``node``: what
    ``T.ldg128`` and its kin build (tilelang_core/language/vector_access.py), as (buffer, indices)."""
    import tvm_ffi
    from tvm import tirx

    found = []

    def note(buffer, indices):
        if indices and isinstance(indices[-1], tirx.Ramp):
            found.append((buffer, list(indices)))

    tvm_ffi.structural_walk(node, [(tvm.ir.TensorLoad, lambda l: note(l.source, l.indices)),
                                   (tirx.BufferStore, lambda s: note(s.buffer, s.indices))])
    return found


def thread_query(name: str, tid, warp_size: int, warps_per_group: int = WARPS_PER_GROUP):
    """The value of a thread-index query for linear thread index ``tid`` (TIRX arithmetic)."""
    from tvm import tirx

    if name == "get_lane_idx":
        return tirx.floormod(tid, warp_size)
    if name in ("get_warp_idx", "get_warp_idx_sync"):
        return tirx.floordiv(tid, warp_size)
    if name == "get_warp_group_idx":
        return tirx.floordiv(tid, warp_size * warps_per_group)
    raise KeyError(name)


def shuffle_source_lane(kind: str, lane, operand, width: int, warp_size: int):
    """The lane (of this warp) a shuffle reads, by CUDA's rules: ``shfl_sync`` reads lane
    ``operand`` modulo ``width`` of this lane's group of ``width``; ``shfl_down``/``shfl_up``
    read ``lane +/- delta`` and keep their own value where that leaves the group; ``shfl_xor``
    reads ``lane ^ mask`` unless that is in a later group. Offsets and lane masks are taken
    modulo the warp size, as the hardware reads only those bits."""
    from tvm import tirx

    w = width
    op = tirx.Cast("int32", operand) if str(operand.ty) != "int32" else operand
    if kind == "shfl_sync":
        return lane - tirx.floormod(lane, w) + tirx.floormod(op, w)
    delta = tirx.bitwise_and(op, tirx.const(warp_size - 1, "int32"))
    if kind == "shfl_xor":
        partner = tirx.bitwise_xor(lane, delta)
        return tirx.Select(tirx.floordiv(partner, w) > tirx.floordiv(lane, w), lane, partner)
    if kind == "shfl_down":
        return tirx.Select(tirx.floormod(lane, w) + delta < w, lane + delta, lane)
    if kind == "shfl_up":
        return tirx.Select(tirx.floormod(lane, w) >= delta, lane - delta, lane)
    raise KeyError(kind)


def expand_ffs(value):
    """CUDA's ``__ffs``/``__ffsll`` in TIRX: one plus the index of the lowest set bit, 0 for 0.
    ``x ^ (x - 1)`` sets exactly the lowest set bit and the bits below it (no negation: TVM's
    simplifier takes ``0 - x`` of an unsigned x for 0)."""
    from tvm import tirx

    bits = tvm.runtime.DataType(str(value.ty)).bits
    u = tirx.reinterpret(f"uint{bits}", value) if str(value.ty).startswith("int") else value
    one, zero = tirx.const(1, f"uint{bits}"), tirx.const(0, f"uint{bits}")
    position = tirx.Cast("int32", tirx.popcount(tirx.bitwise_xor(u, u - one)))
    return tirx.Select(u == zero, tirx.const(0, "int32"), position)


def expand_fns(mask, base, offset):
    """CUDA's ``__fns(mask, base, offset)`` (PTX ``fns.b32``) in TIRX: the bit position of the
    ``offset``-th set bit of ``mask`` counting from bit ``base`` upwards (offset > 0) or downwards
    (offset < 0), ``base`` itself if set (offset 0); 0xFFFFFFFF when there is none. ``base`` is
    taken modulo 32."""
    from tvm import tirx

    u32 = lambda v: tirx.const(v, "uint32")  # noqa: E731

    def count(x):
        return tirx.Cast("int32", tirx.popcount(x))

    m = tirx.Cast("uint32", mask)
    b = tirx.bitwise_and(tirx.Cast("uint32", base), u32(31))
    off = tirx.Cast("int32", offset)
    up = tirx.bitwise_and(m, tirx.shift_left(u32(0xFFFFFFFF), b))
    down = tirx.bitwise_and(m, tirx.shift_right(u32(0xFFFFFFFF), u32(31) - b))
    # both directions look for the k-th lowest set bit of the bits on their side of base (going
    # down, the (count - |offset| + 1)-th); its position is the number of bit positions p whose
    # prefix bits[0..p] holds fewer than k ones (prefix counts only grow). No shared
    # subexpressions: Let-bound ones get duplicated by later passes and then conflict.
    bits = tirx.Select(off > 0, up, down)
    k = tirx.Select(off > 0, off, count(down) + off + 1)
    pos = tirx.const(0, "int32")
    for p in range(32):
        below = count(tirx.bitwise_and(bits, u32((2 << p) - 1 & 0xFFFFFFFF)))
        pos = pos + tirx.Cast("int32", below < k)
    none = u32(0xFFFFFFFF)
    found = tirx.Select(tirx.Or(k < 1, count(bits) < k), none, tirx.Cast("uint32", pos))
    at_base = tirx.Select(tirx.bitwise_and(tirx.shift_right(m, b), u32(1)) == u32(1), b, none)
    return tirx.Select(off == 0, at_base, found)


def fns_reference(mask: int, base: int, offset: int) -> int:
    """``__fns`` on Python ints, from the PTX ISA's pseudo-code of ``fns.b32`` (interpreters)."""
    mask &= 0xFFFFFFFF
    base &= 31
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    step, count, pos = (1 if offset > 0 else -1), abs(offset) - 1, base
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += step
    return 0xFFFFFFFF


__all__ = ["DEFAULT_WIDTH", "FULL_MASK", "INTRINSICS", "PREFIX", "WARPS_PER_GROUP", "Intrinsic", "call",
           "calls_in", "expand_ffs", "expand_fns", "flat_offset", "fns_reference", "intrinsic_of",
           "shuffle_source_lane", "thread_query",
           "vector_accesses"]
